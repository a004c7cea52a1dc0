// A product's shape and transposes, as the emulation tests walk them, and the stored size of an operand.
#pragma once

#include "tropical/semiring.hpp"

namespace tropical::emulation {

/// One product of a test's cases: C (m x n) = op(A) (m x k) (x) op(B) (k x n).
struct Case {
  long long m, n, k;
  Trans ta, tb;
};

/// Rows of an operand stored transposed or not, whose op() is r x c.
inline long long rows_of(Trans t, long long r, long long c) { return t == Trans::kYes ? c : r; }

/// Columns of the same.
inline long long cols_of(Trans t, long long r, long long c) { return t == Trans::kYes ? r : c; }

}  // namespace tropical::emulation
