// tropical::cpu products against tropical::reference, bit for bit: every
// semiring x type, odd shapes, every transpose pair, padded leading dimensions,
// infinities, NaN, -0, integer extremes, ties, alpha/beta and the argmax.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "test_data.hpp"

namespace tropical::cpu_test {
namespace {

template <class P>
class CpuGemm : public ::testing::Test {};
TYPED_TEST_SUITE(CpuGemm, AllPairs);

/// One product's operands, stored as ta/tb say, with padded leading dimensions.
template <class S, class T>
struct Operands {
  Matrix<T> a, b, c;
  Operands(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t pad,
           std::mt19937_64& rng, Data data)
      : a(random_matrix<S, T>(ta == Trans::kNo ? m : k, ta == Trans::kNo ? k : m, pad, rng, data)),
        b(random_matrix<S, T>(tb == Trans::kNo ? k : n, tb == Trans::kNo ? n : k, pad + 1, rng, data)),
        c(random_matrix<S, T>(m, n, pad + 2, rng, data)) {}
};

TYPED_TEST(CpuGemm, products_equal_the_reference_bit_for_bit) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(1234);
  int index = 0;
  for (const auto& [m, n, k] : shapes()) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const Data data : {Data::kTies, Data::kExtremes}) {
          const std::int64_t pad = index % 3 == 0 ? 0 : 3;
          const int threads = index % 2 == 0 ? 0 : 2;
          ++index;
          const Operands<S, T> o(ta, tb, m, n, k, pad, rng, data);
          const std::string what = describe(ta, tb, m, n, k, data);
          std::vector<T> want = o.c.data, got = o.c.data;
          reference::gemm<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, want.data(),
                                o.c.ld);
          cpu::gemm<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, got.data(), o.c.ld,
                          threads);
          expect_same_bits(got, want, "gemm " + what);
        }
      }
    }
  }
}

TYPED_TEST(CpuGemm, alpha_beta_equal_the_reference_bit_for_bit) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(99);
  int index = 0;
  for (const auto& [m, n, k] : shapes()) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const Data data : {Data::kTies, Data::kExtremes}) {
          const Operands<S, T> o(ta, tb, m, n, k, index % 3, rng, data);
          const std::vector<T> values = random_values<S, T>(2, rng, data);
          // beta = the one (accumulate), then any alpha and beta, then alpha = one with beta = zero.
          const std::pair<T, T> scalings[] = {{reference::one<S, T>(), reference::one<S, T>()},
                                              {values[0], values[1]},
                                              {reference::one<S, T>(), reference::zero<S, T>()},
                                              {values[1], reference::zero<S, T>()}};
          const auto& [alpha, beta] = scalings[index % 4];
          const int threads = index % 2 == 0 ? 0 : 3;
          ++index;
          std::vector<T> want = o.c.data, got = o.c.data;
          reference::gemm<S, T>(ta, tb, m, n, k, alpha, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, beta,
                                want.data(), o.c.ld);
          cpu::gemm<S, T>(ta, tb, m, n, k, alpha, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, beta,
                          got.data(), o.c.ld, threads);
          expect_same_bits(got, want,
                           "alpha/beta " + describe(ta, tb, m, n, k, data) + " case " + std::to_string(index % 4));
        }
      }
    }
  }
}

TYPED_TEST(CpuGemm, argmax_equals_the_reference_bit_for_bit) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(7);
  int index = 0;
  for (const auto& [m, n, k] : shapes()) {
    for (const Trans ta : {Trans::kNo, Trans::kYes}) {
      for (const Trans tb : {Trans::kNo, Trans::kYes}) {
        for (const Data data : {Data::kTies, Data::kExtremes}) {
          const Operands<S, T> o(ta, tb, m, n, k, index % 3, rng, data);
          const int threads = index % 2 == 0 ? 0 : 2;
          ++index;
          const std::int64_t ldx = (n > 1 ? n : 1) + 1;
          std::vector<std::int32_t> want_x(static_cast<std::size_t>(m * ldx + 1), -7), got_x = want_x;
          std::vector<T> want = o.c.data, got = o.c.data;
          reference::gemm_argmax<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld,
                                       want.data(), o.c.ld, want_x.data(), ldx);
          cpu::gemm_argmax<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, got.data(),
                                 o.c.ld, got_x.data(), ldx, threads);
          const std::string what = describe(ta, tb, m, n, k, data);
          expect_same_bits(got, want, "argmax C " + what);
          expect_same_bits(got_x, want_x, "argmax k " + what);
        }
      }
    }
  }
}

// Matrix-vector products (n = 1, run as one row, and m = 1) on the one-row tiles, C and the argmax
// contiguous as vectors are: every transpose pair, k within and beyond a packed block, alpha/beta, batches.
TYPED_TEST(CpuGemm, matrix_vector_products_equal_the_reference_bit_for_bit) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(11);
  int index = 0;
  for (const std::int64_t len : {2, 17, 300}) {
    for (const std::int64_t k : {1, 5, 1031}) {
      for (const bool column : {true, false}) {
        const std::int64_t m = column ? len : 1, n = column ? 1 : len;
        for (const Trans ta : {Trans::kNo, Trans::kYes}) {
          for (const Trans tb : {Trans::kNo, Trans::kYes}) {
            const Data data = index % 2 == 0 ? Data::kTies : Data::kExtremes;
            const int threads = index % 3 == 0 ? 0 : 2;
            ++index;
            const Operands<S, T> o(ta, tb, m, n, k, index % 2, rng, data);
            const std::int64_t ldc = n;  // contiguous: m x 1 with ldc 1, or 1 x n
            const std::string what = describe(ta, tb, m, n, k, data);
            const std::vector<T> c0 = random_values<S, T>(static_cast<std::size_t>(len), rng, data);
            std::vector<T> want = c0, got = c0;
            reference::gemm<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, want.data(),
                                  ldc);
            cpu::gemm<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, got.data(), ldc,
                            threads);
            expect_same_bits(got, want, "vector " + what);
            const std::vector<T> values = random_values<S, T>(2, rng, data);
            want = got = c0;
            reference::gemm<S, T>(ta, tb, m, n, k, values[0], o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld,
                                  values[1], want.data(), ldc);
            cpu::gemm<S, T>(ta, tb, m, n, k, values[0], o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld,
                            values[1], got.data(), ldc, threads);
            expect_same_bits(got, want, "vector alpha/beta " + what);
            std::vector<std::int32_t> want_x(static_cast<std::size_t>(len), -7), got_x = want_x;
            want = got = c0;
            reference::gemm_argmax<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld,
                                         want.data(), ldc, want_x.data(), ldc);
            cpu::gemm_argmax<S, T>(ta, tb, m, n, k, o.a.data.data(), o.a.ld, o.b.data.data(), o.b.ld, got.data(),
                                   ldc, got_x.data(), ldc, threads);
            expect_same_bits(got, want, "vector argmax C " + what);
            expect_same_bits(got_x, want_x, "vector argmax k " + what);
            // A batch of 3 sharing the matrix (stride 0), vectors apart.
            const std::int64_t batch = 3, vec = column ? k : k;  // op(B) (k x 1) or op(A) (1 x k)
            const std::vector<T> vs = random_values<S, T>(static_cast<std::size_t>(batch * vec), rng, data);
            std::vector<T> want_b(static_cast<std::size_t>(batch * len)), got_b = want_b;
            // The vector operand is contiguous (B: k x 1 with ldb 1, or A: 1 x k), one per product.
            const T* va = column ? o.a.data.data() : vs.data();
            const T* vb = column ? vs.data() : o.b.data.data();
            const Trans vta = column ? ta : Trans::kNo, vtb = column ? Trans::kNo : tb;
            const std::int64_t lda = column ? o.a.ld : k, ldb = column ? 1 : o.b.ld;
            const std::int64_t sa = column ? 0 : vec, sb = column ? vec : 0;
            for (std::int64_t q = 0; q < batch; ++q) {
              reference::gemm<S, T>(vta, vtb, m, n, k, va + q * sa, lda, vb + q * sb, ldb, want_b.data() + q * len,
                                    ldc);
            }
            cpu::gemm_batched<S, T>(vta, vtb, m, n, k, va, lda, sa, vb, ldb, sb, got_b.data(), ldc, len, batch,
                                    threads);
            expect_same_bits(got_b, want_b, "vector batched " + what);
          }
        }
      }
    }
  }
}

TYPED_TEST(CpuGemm, dense_overload_is_the_untransposed_product) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(5);
  const std::int64_t m = 9, n = 33, k = 14;
  const std::vector<T> a = random_values<S, T>(m * k, rng, Data::kTies), b = random_values<S, T>(k * n, rng, Data::kTies);
  std::vector<T> want(m * n), got(m * n);
  reference::gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want.data(), n);
  cpu::gemm<S, T>(m, n, k, a.data(), b.data(), got.data());
  expect_same_bits(got, want, "dense");
}

}  // namespace
}  // namespace tropical::cpu_test
