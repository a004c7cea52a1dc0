// CountingTropical on the CPU: the reference (the GPU kernels' oracle) by hand
// computation and against a brute-force count, and the CPU backend against the
// reference bit for bit, with its argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tropical/cpu/gemm.hpp"
#include "tropical/error.hpp"
#include "tropical/reference.hpp"

namespace tropical {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// C = A (x) B for dense untransposed operands (values and counts as separate vectors).
template <class T>
std::pair<std::vector<T>, std::vector<T>> product(const std::vector<T>& av, const std::vector<T>& ac,
                                                  const std::vector<T>& bv, const std::vector<T>& bc, int m, int n,
                                                  int k) {
  std::vector<T> cv(static_cast<std::size_t>(m * n), T(-7)), cc(cv.size(), T(-7));
  reference::gemm_counting<T>(Trans::kNo, Trans::kNo, m, n, k, {av.data(), k, ac.data(), k},
                              {bv.data(), n, bc.data(), n}, {cv.data(), n, cc.data(), n});
  return {cv, cc};
}

TEST(ReferenceCounting, ties_add_counts_and_a_larger_value_restarts_them) {
  // One row times one column, k = 4: sums 3, 5, 5, 4 with counts 1*2, 2*3, 1*1, 5*5.
  const std::vector<float> av = {1, 2, 3, 1}, ac = {1, 2, 1, 5};
  const std::vector<float> bv = {2, 3, 2, 3}, bc = {2, 3, 1, 5};
  const auto [v, c] = product(av, ac, bv, bc, 1, 1, 4);
  EXPECT_EQ(v[0], 5);
  EXPECT_EQ(c[0], 7);  // 2 * 3 + 1 * 1: the two products of value 5
  // The same product, k reversed: the count is the same.
  const auto [v2, c2] = product<float>({1, 3, 2, 1}, {5, 1, 2, 1}, {3, 2, 3, 2}, {5, 1, 3, 2}, 1, 1, 4);
  EXPECT_EQ(v2[0], 5);
  EXPECT_EQ(c2[0], 7);
}

TEST(ReferenceCounting, matches_a_brute_force_count_on_tied_integer_data) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> value(-2, 2), count(0, 3);
  const int m = 7, n = 5, k = 23;
  std::vector<double> av(m * k), ac(m * k), bv(k * n), bc(k * n);
  for (auto& x : av) x = value(rng);
  for (auto& x : bv) x = value(rng);
  for (auto& x : ac) x = count(rng);
  for (auto& x : bc) x = count(rng);
  const auto [v, c] = product(av, ac, bv, bc, m, n, k);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double best = -kInf, total = 0;
      for (int p = 0; p < k; ++p) best = std::max(best, av[i * k + p] + bv[p * n + j]);
      for (int p = 0; p < k; ++p) total += av[i * k + p] + bv[p * n + j] == best ? ac[i * k + p] * bc[p * n + j] : 0;
      EXPECT_EQ(v[i * n + j], best);
      EXPECT_EQ(c[i * n + j], total);
    }
  }
}

TEST(ReferenceCounting, zero_counts_keep_their_value_and_count_nothing) {
  // The best value 9 has count 0 (a zero count on A's side): it still wins, with count 0.
  const auto [v, c] = product<float>({5, 1}, {0, 4}, {4, 2}, {3, 3}, 1, 1, 2);
  EXPECT_EQ(v[0], 9);
  EXPECT_EQ(c[0], 0);
  // A tie of a zero count and a non-zero one: the count is the non-zero one's.
  const auto [v2, c2] = product<float>({5, 7}, {0, 2}, {4, 2}, {3, 3}, 1, 1, 2);
  EXPECT_EQ(v2[0], 9);
  EXPECT_EQ(c2[0], 6);
}

TEST(ReferenceCounting, minus_infinity_rows_give_the_zero_or_keep_their_counts) {
  // A row of zeros (-inf, 0): C's row is the zero (-inf, 0).
  const auto [v, c] = product<float>({-kInf, -kInf}, {0, 0}, {1, 2}, {1, 1}, 1, 1, 2);
  EXPECT_EQ(v[0], -kInf);
  EXPECT_EQ(c[0], 0);
  // -inf with non-zero counts is a value like any other: its products tie, their counts add.
  const auto [v2, c2] = product<float>({-kInf, -kInf}, {2, 3}, {1, 2}, {5, 7}, 1, 1, 2);
  EXPECT_EQ(v2[0], -kInf);
  EXPECT_EQ(c2[0], 2 * 5 + 3 * 7);
  // Any finite product beats them.
  const auto [v3, c3] = product<float>({-kInf, -100}, {2, 3}, {1, 2}, {5, 7}, 1, 1, 2);
  EXPECT_EQ(v3[0], -98);
  EXPECT_EQ(c3[0], 21);
}

TEST(ReferenceCounting, nan_sums_never_win_nor_tie_and_k_zero_is_the_zero) {
  // NaN value, and -inf + inf: neither counts.
  const auto [v, c] = product<float>({kNaN, -kInf, 1}, {5, 5, 1}, {0, kInf, 1}, {5, 5, 2}, 1, 1, 3);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(c[0], 2);
  // Only NaN sums: the zero.
  const auto [v2, c2] = product<float>({kNaN}, {1}, {0}, {1}, 1, 1, 1);
  EXPECT_EQ(v2[0], -kInf);
  EXPECT_EQ(c2[0], 0);
  // k = 0: every element is the zero.
  const auto [v3, c3] = product<float>({}, {}, {}, {}, 2, 3, 0);
  EXPECT_EQ(v3, std::vector<float>(6, -kInf));
  EXPECT_EQ(c3, std::vector<float>(6, 0));
}

TEST(ReferenceCounting, counts_are_fused_into_the_sum_one_rounding_each) {
  // Two tied products with counts 1 * -1 and x * x, x = 1 + 2^-12: x * x = 1 + 2^-11 + 2^-24 needs 25
  // bits, so -1 + x * x rounded once (fma) keeps 2^-24 and rounded twice would lose it.
  const float x = 1.0f + 1.0f / 4096;
  const auto [v, c] = product<float>({0, 0}, {1, x}, {0, 0}, {-1, x}, 1, 1, 2);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(c[0], std::fma(x, x, -1.0f));
  EXPECT_NE(c[0], -1.0f + x * x);
  // In float, 2^24 + 1 rounds; doubles count it exactly.
  const float big = 16777216.0f;  // 2^24
  EXPECT_EQ((product<float>({0, 0}, {big, 1}, {0, 0}, {1, 1}, 1, 1, 2).second[0]), big);
  EXPECT_EQ((product<double>({0, 0}, {double(big), 1}, {0, 0}, {1, 1}, 1, 1, 2).second[0]), double(big) + 1);
}

TEST(ReferenceCounting, transposes_leading_dimensions_and_batches_agree) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-3, 3), count(0, 4);
  const int m = 4, n = 3, k = 6, batch = 3;
  // Batched: A is m x k (ld k + 1), B is k x n stored transposed (n x k, ld k + 2).
  const int lda = k + 1, ldbt = k + 2;
  std::vector<float> av(batch * m * lda), ac(av.size()), bv(batch * n * ldbt), bc(bv.size());
  for (auto& x : av) x = value(rng);
  for (auto& x : ac) x = count(rng);
  for (auto& x : bv) x = value(rng);
  for (auto& x : bc) x = count(rng);
  std::vector<float> cv(batch * m * n), cc(cv.size());
  reference::gemm_batched_counting<float>(Trans::kNo, Trans::kYes, m, n, k,
                                          {av.data(), lda, ac.data(), lda, m * lda, m * lda},
                                          {bv.data(), ldbt, bc.data(), ldbt, n * ldbt, n * ldbt},
                                          {cv.data(), n, cc.data(), n, m * n, m * n}, batch);
  for (int p = 0; p < batch; ++p) {
    // Slice p, B written out untransposed.
    std::vector<float> a_v(m * k), a_c(m * k), b_v(k * n), b_c(k * n);
    for (int i = 0; i < m; ++i) {
      for (int q = 0; q < k; ++q) {
        a_v[i * k + q] = av[p * m * lda + i * lda + q];
        a_c[i * k + q] = ac[p * m * lda + i * lda + q];
      }
    }
    for (int q = 0; q < k; ++q) {
      for (int j = 0; j < n; ++j) {
        b_v[q * n + j] = bv[p * n * ldbt + j * ldbt + q];
        b_c[q * n + j] = bc[p * n * ldbt + j * ldbt + q];
      }
    }
    const auto [v, c] = product(a_v, a_c, b_v, b_c, m, n, k);
    EXPECT_EQ(v, std::vector<float>(cv.begin() + p * m * n, cv.begin() + (p + 1) * m * n)) << p;
    EXPECT_EQ(c, std::vector<float>(cc.begin() + p * m * n, cc.begin() + (p + 1) * m * n)) << p;
  }
}

template <class T>
class CpuCounting : public ::testing::Test {};
using CountingTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CpuCounting, CountingTypes);

TYPED_TEST(CpuCounting, equals_the_reference_bit_for_bit) {
  using T = TypeParam;
  std::mt19937_64 rng(9);
  for (const bool tied : {true, false}) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        const std::int64_t m = 37, n = 29, k = 41, batch = 2, pad = 3;
        std::uniform_int_distribution<int> value(tied ? -2 : -1000, tied ? 2 : 1000), count(0, 5), pick(0, 49);
        const std::int64_t lda = (ta == Trans::kNo ? k : m) + pad, ldb = (tb == Trans::kNo ? n : k) + pad;
        const std::int64_t size_a = (ta == Trans::kNo ? m : k) * lda, size_b = (tb == Trans::kNo ? k : n) * ldb;
        std::vector<T> av(batch * size_a), ac(av.size()), bv(batch * size_b), bc(bv.size());
        auto fill = [&](std::vector<T>& v, bool counts) {
          for (auto& x : v) {
            x = counts ? T(count(rng)) : T(value(rng)) / T(tied ? 1 : 7);
            if (!counts && pick(rng) == 0) x = -std::numeric_limits<T>::infinity();
            if (!counts && pick(rng) == 1) x = std::numeric_limits<T>::quiet_NaN();
          }
        };
        fill(av, false);
        fill(ac, true);
        fill(bv, false);
        fill(bc, true);
        const CountingMatrix<const T> a{av.data(), lda, ac.data(), lda, size_a, size_a};
        const CountingMatrix<const T> b{bv.data(), ldb, bc.data(), ldb, size_b, size_b};
        std::vector<T> want_v(batch * m * n), want_c(want_v.size()), got_v(want_v.size()), got_c(want_v.size());
        reference::gemm_batched_counting<T>(ta, tb, m, n, k, a, b, {want_v.data(), n, want_c.data(), n, m * n, m * n},
                                            batch);
        cpu::gemm_batched_counting<T>(ta, tb, m, n, k, a, b, {got_v.data(), n, got_c.data(), n, m * n, m * n},
                                      batch, 2);
        EXPECT_EQ(got_v, want_v);
        EXPECT_EQ(got_c, want_c);
        std::vector<T> one_v(m * n), one_c(m * n);
        cpu::gemm_counting<T>(ta, tb, m, n, k, a, b, {one_v.data(), n, one_c.data(), n});
        EXPECT_EQ(one_v, std::vector<T>(want_v.begin(), want_v.begin() + m * n));
        EXPECT_EQ(one_c, std::vector<T>(want_c.begin(), want_c.begin() + m * n));
      }
    }
  }
}

TEST(CpuCounting, rejects_bad_arguments_before_writing) {
  std::vector<float> x(64, 1), out(64, -5);
  const CountingMatrix<const float> a{x.data(), 4, x.data(), 4};
  // A leading dimension below the row, named by its array.
  try {
    cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, {x.data(), 4, x.data(), 3}, a,
                              {out.data(), 2, out.data() + 8, 2});
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("a.ld_counts"), std::string::npos) << e.what();
  }
  // C's values in place of its counts, and C in place of an input.
  EXPECT_THROW(cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a, {out.data(), 2, out.data(), 2}),
               InvalidArgument);
  EXPECT_THROW(cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a, {x.data(), 2, out.data(), 2}),
               InvalidArgument);
  // Null counts, negative sizes and batches, overlapping products of C.
  EXPECT_THROW(cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, {x.data(), 4, nullptr, 4}, a,
                                         {out.data(), 2, out.data() + 8, 2}),
               InvalidArgument);
  EXPECT_THROW(cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, -1, 2, 4, a, a, {out.data(), 2, out.data() + 8, 2}),
               InvalidArgument);
  EXPECT_THROW(cpu::gemm_batched_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a,
                                                 {out.data(), 2, out.data() + 32, 2, 1, 4}, 2),
               InvalidArgument);
  EXPECT_THROW(cpu::gemm_batched_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a,
                                                 {out.data(), 2, out.data() + 32, 2, 4, 4}, -1),
               InvalidArgument);
  EXPECT_EQ(out, std::vector<float>(64, -5));
  // Nothing to compute: no pointer is read.
  cpu::gemm_counting<float>(Trans::kNo, Trans::kNo, 0, 2, 4, {nullptr, 4, nullptr, 4}, {nullptr, 2, nullptr, 2},
                            {nullptr, 2, nullptr, 2});
}

}  // namespace
}  // namespace tropical
