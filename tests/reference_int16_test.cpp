// int16 in the CPU reference (the GPU kernels' oracle): -inf/+inf are
// lowest()/max(), products saturate at both ends and the zero absorbs, as for
// i32; checked by hand and, over the full 16-bit range, against an oracle that
// computes in 64 bits and clamps. The CPU backend's int16 products are in
// tests/cpu (every pair of the catalog).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tropical/reference.hpp"

namespace tropical::reference {
namespace {

using I16 = std::int16_t;
constexpr I16 kLow = std::numeric_limits<I16>::lowest(), kHigh = std::numeric_limits<I16>::max();

TEST(ReferenceInt16, sums_saturate_at_both_ends_and_the_zero_absorbs) {
  // MaxPlus: the zero is lowest().
  EXPECT_EQ((mul<MaxPlus, I16>(30000, 30000)), kHigh);
  EXPECT_EQ((mul<MaxPlus, I16>(-30000, -30000)), kLow);
  EXPECT_EQ((mul<MaxPlus, I16>(kHigh, 1)), kHigh);
  EXPECT_EQ((mul<MaxPlus, I16>(kLow, kHigh)), kLow);  // -inf + inf: the zero absorbs
  EXPECT_EQ((mul<MaxPlus, I16>(kLow + 1, -1)), kLow);
  EXPECT_EQ((mul<MaxPlus, I16>(12345, -345)), 12000);
  // MinPlus: the zero is max().
  EXPECT_EQ((mul<MinPlus, I16>(kHigh, kLow)), kHigh);
  EXPECT_EQ((mul<MinPlus, I16>(-30000, -30000)), kLow);
  EXPECT_EQ((mul<MinPlus, I16>(30000, 30000)), kHigh);
  // MaxMul: products saturate.
  EXPECT_EQ((mul<MaxMul, I16>(300, 300)), kHigh);
  EXPECT_EQ((mul<MaxMul, I16>(-300, 300)), kLow);
  EXPECT_EQ((mul<MaxMul, I16>(181, 181)), 32761);
  // MaxMin / MinMax: exact.
  EXPECT_EQ((mul<MaxMin, I16>(kLow, 5)), kLow);
  EXPECT_EQ((mul<MinMax, I16>(kHigh, 5)), kHigh);
  EXPECT_EQ((zero<MaxPlus, I16>()), kLow);
  EXPECT_EQ((one<MinMax, I16>()), kLow);
}

/// The product of the full-range operands by an independent oracle: 64-bit sums or products, the zero
/// absorbing, then a clamp; the addition picks the max (min).
template <class S>
std::vector<I16> oracle(const std::vector<I16>& a, const std::vector<I16>& b, int m, int n, int k) {
  std::vector<I16> c(static_cast<std::size_t>(m * n));
  const bool is_max = S::kAdd == AddKind::kMax;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      std::int64_t acc = is_max ? kLow : kHigh;
      for (int p = 0; p < k; ++p) {
        const std::int64_t x = a[i * k + p], y = b[p * n + j];
        std::int64_t prod;
        if constexpr (S::kMul == MulKind::kAdd) {
          const std::int64_t z = is_max ? kLow : kHigh;
          prod = (x == z || y == z) ? z : x + y;
        } else if constexpr (S::kMul == MulKind::kMul) {
          prod = x * y;
        } else if constexpr (S::kMul == MulKind::kMin) {
          prod = std::min(x, y);
        } else {
          prod = std::max(x, y);
        }
        prod = std::clamp<std::int64_t>(prod, kLow, kHigh);
        acc = is_max ? std::max(acc, prod) : std::min(acc, prod);
      }
      c[i * n + j] = static_cast<I16>(acc);
    }
  }
  return c;
}

template <class S>
void check_full_range(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> any(kLow, kHigh), pick(0, 19);
  const int m = 9, n = 11, k = 37;
  std::vector<I16> a(m * k), b(k * n);
  for (auto* v : {&a, &b}) {
    for (auto& x : *v) {
      const int p = pick(rng);
      // Every bit pattern, with the extremes (the zero, the other infinity, one off them) often.
      x = static_cast<I16>(p == 0 ? kLow : p == 1 ? kHigh : p == 2 ? kLow + 1 : p == 3 ? kHigh - 1 : any(rng));
    }
  }
  std::vector<I16> c(m * n), c2(m * n);
  std::vector<std::int32_t> arg(m * n);
  gemm<S, I16>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c.data(), n);
  EXPECT_EQ(c, oracle<S>(a, b, m, n, k));
  gemm_argmax<S, I16>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c2.data(), n, arg.data(), n);
  EXPECT_EQ(c2, c);
}

TEST(ReferenceInt16, full_range_products_match_a_64_bit_oracle) {
  check_full_range<MaxPlus>(1);
  check_full_range<MinPlus>(2);
  check_full_range<MaxMul>(3);
  check_full_range<MaxMin>(4);
  check_full_range<MinMax>(5);
}

TEST(ReferenceInt16, small_values_sum_exactly) {
  // Values within +-2^14 (the GPU's DPX path) never saturate: C is the plain max of sums.
  std::mt19937_64 rng(6);
  std::uniform_int_distribution<int> small(-(1 << 14), (1 << 14) - 1);
  const int m = 5, n = 6, k = 50;
  std::vector<I16> a(m * k), b(k * n), c(m * n);
  for (auto& x : a) x = static_cast<I16>(small(rng));
  for (auto& x : b) x = static_cast<I16>(small(rng));
  gemm<MaxPlus, I16>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, c.data(), n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      int best = -100000;
      for (int p = 0; p < k; ++p) best = std::max(best, a[i * k + p] + b[p * n + j]);
      EXPECT_EQ(c[i * n + j], best);
    }
  }
}

}  // namespace
}  // namespace tropical::reference
