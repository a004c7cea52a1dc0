#pragma once

#include <cstdint>

namespace tropical {

/// The addition of a semiring: which of two values the reduction keeps, or
/// the logical or of two bytes (any non-zero byte is true; the result is 0 or 1).
enum class AddKind : std::uint8_t { kMax, kMin, kOr };

/// The multiplication of a semiring: ordinary sum or product (saturating for
/// integers), the smaller or larger operand, or the logical and of two bytes.
enum class MulKind : std::uint8_t { kAdd, kMul, kMin, kMax, kAnd };

/// A semiring identity: kLowest/kHighest are -inf/+inf for floats and
/// numeric_limits<T>::lowest()/max() for integers; kZero/kOne are 0 and 1.
enum class Identity : std::uint8_t { kLowest, kHighest, kZero, kOne };

/// Matrix storage of an operand: as is, or transposed (row-major either way).
enum class Trans : std::uint8_t { kNo, kYes };

/// A matrix of CountingTropical elements (value, count), stored as two
/// row-major arrays of T (structure of arrays), each with its own leading
/// dimension; the operand's Trans applies to both. The strides (elements
/// between consecutive matrices of each array) are read by the batched
/// products only.
template <class T>
struct CountingMatrix {
  T* values;
  std::int64_t ld_values;
  T* counts;
  std::int64_t ld_counts;
  std::int64_t stride_values = 0;
  std::int64_t stride_counts = 0;
};

}  // namespace tropical
