// Hand-checked cases for the CPU reference: the oracle every GPU test trusts.
#include "tropical/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace tropical::reference {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <Semiring S, class T>
std::vector<T> product(const std::vector<T>& a, const std::vector<T>& b, int m, int n, int k) {
  std::vector<T> c(static_cast<size_t>(m * n));
  gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c.data(), n);
  return c;
}

TEST(Reference, gemm_of_each_semiring_matches_hand_computation) {
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  EXPECT_EQ((product<MaxPlus>(a, b, 2, 2, 2)), (std::vector<float>{9, 10, 11, 12}));
  EXPECT_EQ((product<MinPlus>(a, b, 2, 2, 2)), (std::vector<float>{6, 7, 8, 9}));
  EXPECT_EQ((product<MaxMul>(a, b, 2, 2, 2)), (std::vector<float>{14, 16, 28, 32}));
  const std::vector<std::int64_t> ai = {1, 2, 3, 4}, bi = {5, 6, 7, 8};
  EXPECT_EQ((product<MaxPlus>(ai, bi, 2, 2, 2)), (std::vector<std::int64_t>{9, 10, 11, 12}));
}

TEST(Reference, rectangular_gemm_with_padded_leading_dimensions) {
  // A 2x3 (lda 4), B 3x1 (ldb 2), C 2x1 (ldc 3); padding holds poison.
  const std::vector<double> a = {0, 1, 2, -99, 3, 1, 0, -99};
  const std::vector<double> b = {1, -99, 5, -99, 0, -99};
  std::vector<double> c(6, -99);
  gemm<MaxPlus, double>(Trans::kNo, Trans::kNo, 2, 1, 3, a.data(), 4, b.data(), 2, c.data(), 3);
  EXPECT_EQ(c[0], 6);  // max(0+1, 1+5, 2+0)
  EXPECT_EQ(c[3], 6);  // max(3+1, 1+5, 0+0)
  EXPECT_EQ(c[1], -99);
}

TEST(Reference, transposed_operands_give_the_same_product) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-10, 10);
  const int m = 5, n = 4, k = 3;
  std::vector<float> a(m * k), b(k * n), at(k * m), bt(n * k);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
  std::vector<float> c1(m * n), c2(m * n);
  gemm<MinPlus, float>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c1.data(), n);
  gemm<MinPlus, float>(Trans::kYes, Trans::kYes, m, n, k, at.data(), m, bt.data(), k, c2.data(), n);
  EXPECT_EQ(c1, c2);
}

TEST(Reference, infinities_follow_the_semiring) {
  // MaxPlus: -inf absorbs, -inf + inf is NaN and never wins.
  EXPECT_EQ((mul<MaxPlus, float>(-kInf, 3.0f)), -kInf);
  const std::vector<float> a = {-kInf, 2}, b = {kInf, 3};
  std::vector<float> c(1);
  std::vector<std::int32_t> arg(1);
  gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 2, a.data(), 2, b.data(), 1, c.data(), 1,
                              arg.data(), 1);
  EXPECT_EQ(c[0], 5);
  EXPECT_EQ(arg[0], 1);
  // A row of -inf: C is the zero and nothing won.
  const std::vector<float> z = {-kInf, -kInf}, y = {1, 2};
  gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 2, z.data(), 2, y.data(), 1, c.data(), 1,
                              arg.data(), 1);
  EXPECT_EQ(c[0], -kInf);
  EXPECT_EQ(arg[0], -1);
  // MinPlus: +inf is its zero.
  EXPECT_EQ((product<MinPlus>(std::vector<float>{kInf, 4}, std::vector<float>{1, kInf}, 1, 1, 2)[0]), kInf);
  EXPECT_EQ((product<MinPlus>(std::vector<float>{kInf, 4}, std::vector<float>{1, 1}, 1, 1, 2)[0]), 5);
}

TEST(Reference, nan_products_are_ignored_and_all_nan_gives_zero) {
  EXPECT_EQ((product<MaxPlus>(std::vector<float>{kNaN, 1}, std::vector<float>{10, 1}, 1, 1, 2)[0]), 2);
  EXPECT_EQ((product<MinPlus>(std::vector<float>{kNaN, 1}, std::vector<float>{10, 1}, 1, 1, 2)[0]), 2);
  EXPECT_EQ((product<MaxMul>(std::vector<float>{kNaN, 1}, std::vector<float>{10, 3}, 1, 1, 2)[0]), 3);
  EXPECT_EQ((product<MaxPlus>(std::vector<float>{kNaN, kNaN}, std::vector<float>{1, 1}, 1, 1, 2)[0]), -kInf);
  // MaxMul: 0 * inf is NaN, ignored.
  EXPECT_EQ((product<MaxMul>(std::vector<float>{0, 2}, std::vector<float>{kInf, 3}, 1, 1, 2)[0]), 6);
  std::vector<float> c(1);
  std::vector<std::int32_t> arg(1);
  const std::vector<float> a = {kNaN, kNaN}, b = {1, 1};
  gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 2, a.data(), 2, b.data(), 1, c.data(), 1,
                              arg.data(), 1);
  EXPECT_EQ(arg[0], -1);
}

TEST(Reference, integer_multiplication_saturates_with_absorbing_zero) {
  using L32 = std::numeric_limits<std::int32_t>;
  using L64 = std::numeric_limits<std::int64_t>;
  EXPECT_EQ((mul<MaxPlus, std::int32_t>(L32::lowest(), 5)), L32::lowest());
  EXPECT_EQ((mul<MaxPlus, std::int32_t>(L32::lowest(), L32::max())), L32::lowest());
  EXPECT_EQ((mul<MaxPlus, std::int32_t>(L32::max(), L32::max())), L32::max());
  EXPECT_EQ((mul<MaxPlus, std::int32_t>(L32::lowest() + 1, -5)), L32::lowest());
  EXPECT_EQ((mul<MaxPlus, std::int32_t>(L32::max() - 1, 1)), L32::max());
  EXPECT_EQ((mul<MinPlus, std::int32_t>(L32::max(), -5)), L32::max());
  EXPECT_EQ((mul<MinPlus, std::int32_t>(L32::max(), L32::lowest())), L32::max());
  EXPECT_EQ((mul<MinPlus, std::int32_t>(L32::lowest(), -1)), L32::lowest());
  EXPECT_EQ((mul<MaxMul, std::int32_t>(65536, 65536)), L32::max());
  EXPECT_EQ((mul<MaxMul, std::int32_t>(0, L32::max())), 0);
  EXPECT_EQ((mul<MaxPlus, std::int64_t>(L64::lowest(), L64::max())), L64::lowest());
  EXPECT_EQ((mul<MaxPlus, std::int64_t>(L64::max(), 1)), L64::max());
  EXPECT_EQ((mul<MinPlus, std::int64_t>(L64::lowest() + 2, -3)), L64::lowest());
  EXPECT_EQ((mul<MaxMul, std::int64_t>(std::int64_t{1} << 32, std::int64_t{1} << 32)), L64::max());
  EXPECT_EQ((mul<MaxMul, std::int64_t>(-(std::int64_t{1} << 32), std::int64_t{1} << 32)), L64::lowest());
  // A whole product at the extremes.
  const std::vector<std::int32_t> a = {L32::lowest(), L32::max()}, b = {L32::max(), L32::max()};
  EXPECT_EQ((product<MaxPlus>(a, b, 1, 1, 2)[0]), L32::max());
  const std::vector<std::int32_t> z = {L32::lowest(), L32::lowest()};
  EXPECT_EQ((product<MaxPlus>(z, b, 1, 1, 2)[0]), L32::lowest());
}

TEST(Reference, argmax_ties_go_to_the_smallest_k) {
  const std::vector<float> a = {1, 2, 0}, b = {2, 1, 3};  // every product is 3
  std::vector<float> c(1);
  std::vector<std::int32_t> arg(1);
  gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 3, a.data(), 3, b.data(), 1, c.data(), 1,
                              arg.data(), 1);
  EXPECT_EQ(c[0], 3);
  EXPECT_EQ(arg[0], 0);
  gemm_argmax<MinPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 3, a.data(), 3, b.data(), 1, c.data(), 1,
                              arg.data(), 1);
  EXPECT_EQ(arg[0], 0);
  const std::vector<std::int32_t> ai = {5, 7, 7}, bi = {0, 0, 0};
  std::vector<std::int32_t> ci(1);
  gemm_argmax<MaxPlus, std::int32_t>(Trans::kNo, Trans::kNo, 1, 1, 3, ai.data(), 3, bi.data(), 1,
                                     ci.data(), 1, arg.data(), 1);
  EXPECT_EQ(arg[0], 1);
}

TEST(Reference, backward_routes_gradient_to_the_winner_only) {
  // A 2x2, B 2x2 MaxPlus: argmax picks k per (i, j).
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c(4);
  std::vector<std::int32_t> arg(4);
  gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2,
                              arg.data(), 2);
  EXPECT_EQ(arg, (std::vector<std::int32_t>{1, 1, 1, 1}));
  const std::vector<float> gc = {1, 10, 100, 1000};
  std::vector<float> ga(4, -1), gb(4, -1);
  backward_a<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, arg.data(), 2, b.data(), 2,
                             ga.data(), 2);
  EXPECT_EQ(ga, (std::vector<float>{0, 11, 0, 1100}));
  backward_b<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, arg.data(), 2, a.data(), 2,
                             gb.data(), 2);
  EXPECT_EQ(gb, (std::vector<float>{0, 0, 101, 1010}));
  // MaxMul: d(a*b)/da = b, d(a*b)/db = a.
  gemm_argmax<MaxMul, float>(Trans::kNo, Trans::kNo, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2,
                             arg.data(), 2);
  EXPECT_EQ(arg, (std::vector<std::int32_t>{1, 1, 1, 1}));
  backward_a<MaxMul, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, arg.data(), 2, b.data(), 2,
                            ga.data(), 2);
  EXPECT_EQ(ga, (std::vector<float>{0, 1 * 7 + 10 * 8, 0, 100 * 7 + 1000 * 8}));
  backward_b<MaxMul, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, arg.data(), 2, a.data(), 2,
                            gb.data(), 2);
  EXPECT_EQ(gb, (std::vector<float>{0, 0, 1 * 2 + 100 * 4, 10 * 2 + 1000 * 4}));
}

TEST(Reference, backward_skips_elements_without_a_winner) {
  const std::vector<std::int32_t> arg = {-1};
  const std::vector<double> gc = {5}, b = {1};
  std::vector<double> ga(1, 42);
  backward_a<MaxPlus, double>(Trans::kNo, Trans::kNo, 1, 1, 1, gc.data(), 1, arg.data(), 1, b.data(), 1,
                              ga.data(), 1);
  EXPECT_EQ(ga[0], 0);
}

TEST(Reference, batched_is_independent_products) {
  const std::vector<float> a = {1, 2, 3, 4, /* batch 1 */ 0, 0, 0, 0};
  const std::vector<float> b = {5, 6, 7, 8, /* batch 1 */ 1, 2, 3, 4};
  std::vector<float> c(8);
  gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, a.data(), 2, 4, b.data(), 2, 4,
                               c.data(), 2, 4, 2);
  EXPECT_EQ(c, (std::vector<float>{9, 10, 11, 12, 3, 4, 3, 4}));
}

// Properties every semiring x type must have, over the whole generated set.
template <class P>
class ReferenceTyped : public ::testing::Test {};
template <class S, class T>
struct Pair {
  using Semi = S;
  using Elem = T;
};
// Every semiring x type of the generated catalog (codegen/spec.py).
using AllPairs = catalog::ForEachPair<::testing::Types, Pair>;
TYPED_TEST_SUITE(ReferenceTyped, AllPairs);

TYPED_TEST(ReferenceTyped, identities_behave_as_identities) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  for (T x : {T(0), T(1), T(3), T(100)}) {
    // AndOr's elements are truth values: any non-zero byte is true, results are 0 or 1.
    const T want = S::kAdd == AddKind::kOr ? T(x != 0) : x;
    EXPECT_EQ((add<S, T>(zero<S, T>(), x)), want);
    EXPECT_EQ((mul<S, T>(one<S, T>(), x)), want);
    EXPECT_EQ((mul<S, T>(zero<S, T>(), x)), (zero<S, T>()));
  }
}

TYPED_TEST(ReferenceTyped, argmax_value_equals_gemm_and_indexes_the_winner) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dist(0, 20);
  const int m = 6, n = 5, k = 9;
  std::vector<T> a(m * k), b(k * n), c(m * n), c2(m * n);
  std::vector<std::int32_t> arg(m * n);
  for (auto& x : a) x = T(dist(rng));
  for (auto& x : b) x = T(dist(rng));
  gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c.data(), n);
  gemm_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c2.data(), n, arg.data(), n);
  EXPECT_EQ(c, c2);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const int p = arg[i * n + j];
      ASSERT_GE(p, 0);
      EXPECT_EQ((mul<S, T>(a[i * k + p], b[p * n + j])), c[i * n + j]);
      for (int q = 0; q < p; ++q) EXPECT_NE((mul<S, T>(a[i * k + q], b[q * n + j])), c[i * n + j]);
    }
  }
}

}  // namespace
}  // namespace tropical::reference
