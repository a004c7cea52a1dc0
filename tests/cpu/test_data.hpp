// Data, shapes and bit-for-bit comparisons shared by the CPU backend's tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tropical/cpu/gemm.hpp"
#include "tropical/reference.hpp"

namespace tropical::cpu_test {

/// A semiring and an element type, for typed tests.
template <class S, class T>
struct Pair {
  using Semiring = S;
  using Element = T;
};

using AllPairs = ::testing::Types<
    Pair<MaxPlus, float>, Pair<MaxPlus, double>, Pair<MaxPlus, std::int32_t>, Pair<MaxPlus, std::int64_t>,
    Pair<MinPlus, float>, Pair<MinPlus, double>, Pair<MinPlus, std::int32_t>, Pair<MinPlus, std::int64_t>,
    Pair<MaxMul, float>, Pair<MaxMul, double>, Pair<MaxMul, std::int32_t>, Pair<MaxMul, std::int64_t>,
    Pair<MaxMin, float>, Pair<MaxMin, double>, Pair<MaxMin, std::int32_t>, Pair<MaxMin, std::int64_t>,
    Pair<MinMax, float>, Pair<MinMax, double>, Pair<MinMax, std::int32_t>, Pair<MinMax, std::int64_t>,
    Pair<AndOr, std::uint8_t>, Pair<MaxPlus, std::int16_t>, Pair<MinPlus, std::int16_t>,
    Pair<MaxMul, std::int16_t>, Pair<MaxMin, std::int16_t>, Pair<MinMax, std::int16_t>>;

using BackwardPairs = ::testing::Types<Pair<MaxPlus, float>, Pair<MaxPlus, double>, Pair<MinPlus, float>,
                                       Pair<MinPlus, double>, Pair<MaxMul, float>, Pair<MaxMul, double>>;

/// What the operands hold: small values with many ties (the vector path for
/// integers), or the same plus infinities, NaN, -0 and integer extremes (the
/// zero, lowest(), max(), large values whose sums saturate).
enum class Data { kTies, kExtremes };

template <class S, class T>
std::vector<T> random_values(std::size_t count, std::mt19937_64& rng, Data data) {
  std::vector<T> v(count);
  const bool nonneg = S::kMul == MulKind::kMul;
  std::uniform_int_distribution<int> small(nonneg ? 0 : -20, 20);
  std::uniform_int_distribution<int> pick(0, 99);
  for (auto& x : v) {
    const int p = pick(rng);
    if constexpr (S::kAdd == AddKind::kOr) {
      x = p < 60 ? T(0) : static_cast<T>(data == Data::kExtremes ? 1 + p : 1);
      continue;
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(small(rng)) / T(4);
      if (data == Data::kTies) continue;
      constexpr T inf = std::numeric_limits<T>::infinity();
      if (p < 3) x = inf;
      else if (p < 6) x = -inf;
      else if (p < 9) x = std::numeric_limits<T>::quiet_NaN();
      else if (p < 12) x = -T(0);
      else if (p < 15) x = std::numeric_limits<T>::max();
    } else {
      x = static_cast<T>(small(rng));
      if (data == Data::kTies) continue;
      using L = std::numeric_limits<T>;
      if (p < 4) x = L::max();
      else if (p < 8) x = L::lowest();
      else if (p < 10) x = L::max() - 1;
      else if (p < 12) x = L::lowest() + 1;
      else if (p < 16) x = static_cast<T>((p % 2 ? 1 : -1) * (L::max() / 3 * 2));
    }
  }
  return v;
}

/// A stored matrix: rows x cols (as stored) with a leading dimension padded by `pad`.
template <class T>
struct Matrix {
  std::int64_t rows, cols, ld;
  std::vector<T> data;
};

template <class S, class T>
Matrix<T> random_matrix(std::int64_t rows, std::int64_t cols, std::int64_t pad, std::mt19937_64& rng, Data data) {
  const std::int64_t ld = (cols > 1 ? cols : 1) + pad;
  const std::int64_t count = rows == 0 ? 0 : (rows - 1) * ld + cols;
  return {rows, cols, ld, random_values<S, T>(static_cast<std::size_t>(count > 0 ? count : 1), rng, data)};
}

/// The same bytes (NaN payloads and padding count), except that +0 and -0 are
/// one value: the sign of a zero that ties with a zero of the other sign is
/// unspecified (std::fmax's own rule; GCC's inline fmax and the vector max pick
/// either operand).
/// With any_nan (results of two devices), also every NaN is one value: a NaN an
/// operation makes (0 * inf, inf - inf) is the hardware's default NaN, whose sign
/// differs (x86's has the sign bit set, NVIDIA's does not).
template <class T>
bool same_bits(const T& got, const T& want, bool any_nan = false) {
  if (std::memcmp(&got, &want, sizeof(T)) == 0) return true;
  if constexpr (std::is_floating_point_v<T>) return (got == 0 && want == 0) || (any_nan && got != got && want != want);
  return false;
}

/// same_bits for every element; reports the first differences.
template <class T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what,
                      bool any_nan = false) {
  ASSERT_EQ(got.size(), want.size()) << what;
  if (got.empty() || std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return;
  int shown = 0;
  for (std::size_t i = 0; i < got.size() && shown < 5; ++i) {
    if (!same_bits(got[i], want[i], any_nan)) {
      ADD_FAILURE() << what << ": element " << i << " is " << +got[i] << ", want " << +want[i];
      ++shown;
    }
  }
}

/// Shapes (m, n, k): odd sizes, k beyond one packed block, C beyond one task, empty ones.
inline std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> shapes() {
  return {{1, 1, 1},    {3, 17, 63},  {17, 3, 65},   {63, 65, 17},  {65, 127, 3}, {127, 1, 257},
          {1, 257, 3},  {257, 63, 1}, {5, 19, 1031}, {130, 530, 5}, {0, 5, 3},    {4, 0, 3},
          {7, 9, 0}};
}

inline const char* trans_name(Trans t) { return t == Trans::kYes ? "T" : "N"; }

inline std::string describe(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, Data data) {
  return std::string(trans_name(ta)) + trans_name(tb) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
         " k=" + std::to_string(k) + (data == Data::kTies ? " ties" : " extremes") + " isa=" +
         std::string(cpu::isa());
}

}  // namespace tropical::cpu_test
