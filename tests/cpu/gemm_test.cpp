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
