#pragma once

// The argument checks of a CountingTropical product, shared by the GPU
// launcher (gemm_counting.cpp) and the CPU backend (cpu/counting.cpp): shapes,
// leading dimensions, 64-bit extents and batch strides of its six arrays,
// null pointers, outputs sharing memory with an input or with each other (the
// spans and byte-exact overlap test of spans.hpp). Every check throws
// InvalidArgument before anything is queued or written; none needs a GPU.

#include <cstddef>
#include <cstdint>

#include "spans.hpp"
#include "tropical/semiring.hpp"

namespace tropical::detail {

/// The arrays of a checked call, A's values and counts, B's, then C's, as the
/// bytes each touches (an empty span: not touched, when m, n or batch is 0,
/// and A's and B's when k is 0).
struct CountingArrays {
  Span array[6];
};

/// Checks C = op(A) (x) op(B) over CountingTropical (`batched`: the strides
/// too, over `batch` products): no output may share a byte with an input or
/// with the other output. Returns the arrays' spans.
CountingArrays check_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              const CountingMatrix<const void>& a, const CountingMatrix<const void>& b,
                              const CountingMatrix<void>& c, std::int64_t batch, bool batched, std::size_t elem_size);

}  // namespace tropical::detail
