// tropical::cpu batched products and backward passes against
// tropical::reference, bit for bit (strides, a shared operand, padding).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "test_data.hpp"

namespace tropical::cpu_test {
namespace {

template <class P>
class CpuBatched : public ::testing::Test {};
TYPED_TEST_SUITE(CpuBatched, AllPairs);

template <class P>
class CpuBackward : public ::testing::Test {};
TYPED_TEST_SUITE(CpuBackward, BackwardPairs);

/// Batched shapes (m, n, k, batch): many small products, a few odd ones.
std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>> batched_shapes() {
  return {{1, 1, 1, 3}, {3, 17, 5, 7}, {17, 3, 65, 2}, {16, 16, 16, 40}, {33, 9, 300, 3}, {2, 5, 0, 4}, {3, 3, 3, 0}};
}

TYPED_TEST(CpuBatched, batched_products_and_argmax_equal_the_reference) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(31);
  int index = 0;
  for (const auto& [m, n, k, batch] : batched_shapes()) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        const Data data = index % 2 == 0 ? Data::kTies : Data::kExtremes;
        const int threads = index % 3 == 0 ? 0 : 2;
        ++index;
        const std::int64_t lda = (ta == Trans::kNo ? k : m) + 1, ldb = (tb == Trans::kNo ? n : k) + 2;
        const std::int64_t ldc = n + 1, ldx = n + 3;
        const std::int64_t sa = (ta == Trans::kNo ? m : k) * lda + 5;
        const std::int64_t sb = index % 4 == 0 ? 0 : (tb == Trans::kNo ? k : n) * ldb;  // B shared or not
        const std::int64_t sc = m * ldc + 2, sx = m * ldx + 1;
        const auto count = [&](std::int64_t stride, std::int64_t one) {
          return static_cast<std::size_t>((batch > 0 ? batch : 1) * (stride > one ? stride : one) + 1);
        };
        const std::vector<T> a = random_values<S, T>(count(sa, sa), rng, data);
        const std::vector<T> b = random_values<S, T>(count(sb, (tb == Trans::kNo ? k : n) * ldb), rng, data);
        const std::vector<T> c0 = random_values<S, T>(count(sc, sc), rng, data);
        const std::vector<T> ab = random_values<S, T>(2, rng, data);
        const std::string what = describe(ta, tb, m, n, k, data) + " batch=" + std::to_string(batch);

        std::vector<T> want = c0, got = c0;
        reference::gemm_batched<S, T>(ta, tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, want.data(), ldc, sc,
                                      batch);
        cpu::gemm_batched<S, T>(ta, tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, got.data(), ldc, sc, batch,
                                threads);
        expect_same_bits(got, want, "batched " + what);

        want = c0;
        got = c0;
        reference::gemm_batched<S, T>(ta, tb, m, n, k, ab[0], a.data(), lda, sa, b.data(), ldb, sb, ab[1],
                                      want.data(), ldc, sc, batch);
        cpu::gemm_batched<S, T>(ta, tb, m, n, k, ab[0], a.data(), lda, sa, b.data(), ldb, sb, ab[1], got.data(),
                                ldc, sc, batch, threads);
        expect_same_bits(got, want, "batched alpha/beta " + what);

        want = c0;
        got = c0;
        std::vector<std::int32_t> want_x(count(sx, sx), -9), got_x = want_x;
        reference::gemm_batched_argmax<S, T>(ta, tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, want.data(), ldc,
                                             sc, want_x.data(), ldx, sx, batch);
        cpu::gemm_batched_argmax<S, T>(ta, tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, got.data(), ldc, sc,
                                       got_x.data(), ldx, sx, batch, threads);
        expect_same_bits(got, want, "batched argmax C " + what);
        expect_same_bits(got_x, want_x, "batched argmax k " + what);
      }
    }
  }
}

TYPED_TEST(CpuBackward, backward_passes_equal_the_reference_bit_for_bit) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> grad(-3, 3);
  int index = 0;
  for (const auto& [m, n, k, batch] : batched_shapes()) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        const int threads = index % 2 == 0 ? 0 : 2;
        ++index;
        const std::int64_t lda = (ta == Trans::kNo ? k : m) + 1, ldb = (tb == Trans::kNo ? n : k) + 2;
        const std::int64_t ldgc = n + 1, ldx = n + 2;
        const std::int64_t sa = (ta == Trans::kNo ? m : k) * lda + 3, sb = (tb == Trans::kNo ? k : n) * ldb + 1;
        const std::int64_t sgc = m * ldgc, sx = m * ldx;
        const std::size_t nb = static_cast<std::size_t>(batch > 0 ? batch : 1);
        const std::vector<T> a = random_values<S, T>(nb * sa + 1, rng, Data::kTies);
        const std::vector<T> b = random_values<S, T>(nb * sb + 1, rng, Data::kTies);
        std::vector<T> gc(nb * sgc + 1);
        for (auto& g : gc) g = static_cast<T>(grad(rng));  // sums that round differently in another order
        // Winners from the forward product, with some out of range (skipped by both).
        std::vector<std::int32_t> x(nb * sx + 1, -1);
        std::vector<T> c(nb * m * (n + 1) + 1);
        reference::gemm_batched_argmax<S, T>(ta, tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, c.data(), n + 1,
                                             m * (n + 1), x.data(), ldx, sx, batch);
        for (std::size_t i = 0; i < x.size(); i += 7) x[i] = i % 14 == 0 ? static_cast<std::int32_t>(k) : -1;
        const std::string what = describe(ta, tb, m, n, k, Data::kTies) + " batch=" + std::to_string(batch);

        const std::vector<T> ga0 = random_values<S, T>(nb * sa + 1, rng, Data::kExtremes);
        std::vector<T> want = ga0, got = ga0;
        reference::backward_a_batched<S, T>(ta, tb, m, n, k, gc.data(), ldgc, sgc, x.data(), ldx, sx, b.data(), ldb,
                                            sb, want.data(), lda, sa, batch);
        cpu::backward_a_batched<S, T>(ta, tb, m, n, k, gc.data(), ldgc, sgc, x.data(), ldx, sx, b.data(), ldb, sb,
                                      got.data(), lda, sa, batch, threads);
        expect_same_bits(got, want, "backward_a_batched " + what);

        const std::vector<T> gb0 = random_values<S, T>(nb * sb + 1, rng, Data::kExtremes);
        want = gb0;
        got = gb0;
        reference::backward_b_batched<S, T>(ta, tb, m, n, k, gc.data(), ldgc, sgc, x.data(), ldx, sx, a.data(), lda,
                                            sa, want.data(), ldb, sb, batch);
        cpu::backward_b_batched<S, T>(ta, tb, m, n, k, gc.data(), ldgc, sgc, x.data(), ldx, sx, a.data(), lda, sa,
                                      got.data(), ldb, sb, batch, threads);
        expect_same_bits(got, want, "backward_b_batched " + what);

        if (batch == 0) continue;
        want = ga0;
        got = ga0;
        reference::backward_a<S, T>(ta, tb, m, n, k, gc.data(), ldgc, x.data(), ldx, b.data(), ldb, want.data(), lda);
        cpu::backward_a<S, T>(ta, tb, m, n, k, gc.data(), ldgc, x.data(), ldx, b.data(), ldb, got.data(), lda,
                              threads);
        expect_same_bits(got, want, "backward_a " + what);
        want = gb0;
        got = gb0;
        reference::backward_b<S, T>(ta, tb, m, n, k, gc.data(), ldgc, x.data(), ldx, a.data(), lda, want.data(), ldb);
        cpu::backward_b<S, T>(ta, tb, m, n, k, gc.data(), ldgc, x.data(), ldx, a.data(), lda, got.data(), ldb,
                              threads);
        expect_same_bits(got, want, "backward_b " + what);
      }
    }
  }
}

}  // namespace
}  // namespace tropical::cpu_test
