#pragma once

// Packing of operand blocks into the microkernels' layout (BLIS's packed
// panels): op(A) rows in slivers of mr, op(B) columns in slivers of nr, k
// running fastest within a sliver's column, edges padded with zeros.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tropical/reference.hpp"

namespace tropical::cpu::detail {

/// The value a kernel sees for x: NaN becomes the semiring zero for MaxMin and
/// MinMax (its products never win either way, and min/max then need no NaN
/// test), AndOr's bytes become 0 or 1; every other value is kept.
template <class S, class T>
inline T pack_value(T x) {
  if constexpr (S::kAdd == AddKind::kOr) {
    return static_cast<T>(x != 0);
  } else if constexpr (std::is_floating_point_v<T> && (S::kMul == MulKind::kMin || S::kMul == MulKind::kMax)) {
    return std::isnan(x) ? reference::zero<S, T>() : x;
  } else {
    return x;
  }
}

/// Packs rows [i0, i0 + rows) and k range [p0, p0 + kc) of op(A) into slivers of mr rows:
/// sliver s holds dst[s * kc * mr + p * mr + r].
template <class S, class T>
void pack_a(Trans ta, const T* a, std::int64_t lda, std::int64_t i0, std::int64_t rows, std::int64_t p0,
            std::int64_t kc, int mr, T* dst) {
  for (std::int64_t s = 0; s * mr < rows; ++s) {
    T* out = dst + s * kc * mr;
    const std::int64_t r0 = i0 + s * mr;
    const int valid = static_cast<int>(rows - s * mr < mr ? rows - s * mr : mr);
    if (ta == Trans::kNo) {
      for (int r = 0; r < valid; ++r) {
        const T* src = a + (r0 + r) * lda + p0;
        for (std::int64_t p = 0; p < kc; ++p) out[p * mr + r] = pack_value<S, T>(src[p]);
      }
    } else {
      for (std::int64_t p = 0; p < kc; ++p) {
        const T* src = a + (p0 + p) * lda + r0;
        for (int r = 0; r < valid; ++r) out[p * mr + r] = pack_value<S, T>(src[r]);
      }
    }
    for (int r = valid; r < mr; ++r) {
      for (std::int64_t p = 0; p < kc; ++p) out[p * mr + r] = T{};
    }
  }
}

/// Packs k range [p0, p0 + kc) and columns [j0, j0 + cols) of op(B) into slivers of nr columns:
/// sliver s holds dst[s * kc * nr + p * nr + c].
template <class S, class T>
void pack_b(Trans tb, const T* b, std::int64_t ldb, std::int64_t p0, std::int64_t kc, std::int64_t j0,
            std::int64_t cols, int nr, T* dst) {
  for (std::int64_t s = 0; s * nr < cols; ++s) {
    T* out = dst + s * kc * nr;
    const std::int64_t c0 = j0 + s * nr;
    const int valid = static_cast<int>(cols - s * nr < nr ? cols - s * nr : nr);
    if (tb == Trans::kNo) {
      for (std::int64_t p = 0; p < kc; ++p) {
        const T* src = b + (p0 + p) * ldb + c0;
        T* row = out + p * nr;
        for (int c = 0; c < valid; ++c) row[c] = pack_value<S, T>(src[c]);
        for (int c = valid; c < nr; ++c) row[c] = T{};
      }
    } else {
      for (int c = 0; c < valid; ++c) {
        const T* src = b + (c0 + c) * ldb + p0;
        for (std::int64_t p = 0; p < kc; ++p) out[p * nr + c] = pack_value<S, T>(src[p]);
      }
      for (std::int64_t p = 0; p < kc; ++p) {
        for (int c = valid; c < nr; ++c) out[p * nr + c] = T{};
      }
    }
  }
}

}  // namespace tropical::cpu::detail
