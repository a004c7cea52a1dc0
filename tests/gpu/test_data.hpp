// Data and comparisons shared by the GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tropical/tropical.hpp"

namespace tropical::gpu_test {

/// Random operands for semiring S: finite values, with `extremes` some
/// infinities or integer extremes; AndOr gets bytes that are 0 half the time
/// and any other byte otherwise (non-0/1 bytes are true).
template <class S, class T>
std::vector<T> random_matrix(std::size_t n, std::mt19937_64& rng, bool extremes) {
  std::vector<T> v(n);
  const bool nonneg = S::kMul == MulKind::kMul;
  std::uniform_int_distribution<int> small(nonneg ? 0 : -1000, 1000);
  std::uniform_int_distribution<int> pick(0, 99);
  for (auto& x : v) {
    if constexpr (S::kAdd == AddKind::kOr) {
      x = pick(rng) < 50 ? T(0) : static_cast<T>(1 + pick(rng) * (extremes ? 2 : 0));
      continue;
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(small(rng)) / T(37);
    } else {
      x = static_cast<T>(small(rng));
    }
    if (!extremes) continue;
    const int p = pick(rng);
    if (p < 4) x = std::numeric_limits<T>::max();  // +inf for MinPlus, saturates elsewhere
    else if (p < 8 && !nonneg) x = std::numeric_limits<T>::lowest();
    if constexpr (std::is_floating_point_v<T>) {
      if (p < 4) x = std::numeric_limits<T>::infinity();
      else if (p < 8 && !nonneg) x = -std::numeric_limits<T>::infinity();
    } else if (p >= 8 && p < 12 && !nonneg) {
      // Large values whose sums overflow without saturation.
      x = static_cast<T>((p % 2 ? 1 : -1) * (std::numeric_limits<T>::max() / 3 * 2));
    }
  }
  return v;
}

/// Element-wise equality (NaN equals NaN); reports the first mismatches.
template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = got[i] == want[i] || (std::is_floating_point_v<T> && got[i] != got[i] && want[i] != want[i]);
    if (!same && bad++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << +got[i] << ", want " << +want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

template <class S, class T>
struct Pair {
  using Semi = S;
  using Elem = T;
};
/// Every semiring x type of the generated catalog (codegen/spec.py).
using AllPairs = catalog::ForEachPair<::testing::Types, Pair>;

}  // namespace tropical::gpu_test
