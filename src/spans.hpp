#pragma once

// The checks every backend shares (problem.cpp's check(), CountingTropical's and the packed
// booleans'): stored shapes, leading dimensions, 64-bit extents, batches, null pointers, and the
// bytes an operand touches (spans) with an exact test of two spans sharing one. Every check
// throws InvalidArgument with the word a user recognises; none needs a GPU or CUDA's headers.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tropical/problem.hpp"

namespace tropical::detail {

/// Throws InvalidArgument("tropical: " + what).
[[noreturn]] void invalid(const std::string& what);

/// The address as "0x..." for messages.
std::string hex(std::uintptr_t address);

/// Rows and columns of an operand as stored (transposed storage swaps them).
struct Stored {
  std::int64_t rows, cols;
};

/// The stored shape of a rows x cols operand, transposed in storage if t.
Stored stored(Trans t, std::int64_t rows, std::int64_t cols);

/// Rejects a leading dimension below the stored row length (or 1).
void check_ld(const char* name, std::int64_t ld, Stored s);

/// Rejects a Trans other than kNo and kYes, and a negative m, n or k.
void check_sizes(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k);

/// Elements from the first to one past the last element of a rows x cols
/// matrix with leading dimension ld ((rows - 1) * ld + cols; 0 if empty),
/// checked so that it and its size in bytes fit 64 bits.
std::int64_t extent(const char* name, Stored s, std::int64_t ld, std::size_t elem_size);

/// Checks that `batch` products of `extent` elements, `stride` apart, are
/// addressable in 64 bits ((batch - 1) * stride + extent, in bytes); with
/// `disjoint`, also that they do not overlap (stride >= extent).
void check_batch(const char* name, std::int64_t stride, std::int64_t extent, std::int64_t batch,
                 std::size_t elem_size, bool disjoint);

/// Rejects a null pointer, before any overlap check can mistake it for one.
void check_non_null(const void* ptr, const char* name);

/// The bytes one operand of a call reads or writes: `batch` matrices `stride` bytes apart, each of `rows`
/// rows of `row` bytes, `ld` bytes apart, from `start`. Made by span() from checked sizes: every offset fits
/// 64 bits and the last byte does not wrap the address space.
struct Span {
  const char* name = "";
  std::uintptr_t start = 0;
  std::int64_t bytes = 0;  ///< from the first byte to one past the last; 0: the operand is not touched
  std::int64_t batch = 1, stride = 0, rows = 1, ld = 0, row = 0;
  std::int64_t elements_stride = 0;  ///< stride in elements, for messages
};

/// The span of `batch` matrices of stored shape s (rows ld elements apart), `stride` elements apart, at ptr
/// (empty if s has no element or batch is 0). The sizes must have passed extent() and check_batch().
/// Rejects a span whose last byte lies past the end of the 64-bit address space: no memory can hold it.
Span span(const char* name, const void* ptr, Stored s, std::int64_t ld, std::int64_t stride, std::int64_t batch,
          std::size_t elem_size);

/// True if x and y have a byte in common (not merely overlapping ranges: sub-blocks of one matrix that
/// share no element are disjoint). Exact: a bounded search over the few strides involved; an interleaving
/// it cannot settle within its bound (thousands of candidate rows, never met by blocks of one matrix or
/// separate buffers) counts as disjoint, so that no call the check cannot prove wrong is refused.
bool overlap(const Span& x, const Span& y);

/// The spans of a (batched) product's operands: A and B empty if k = 0, argmax empty if not given.
struct ProductSpans {
  Span a, b, c, argmax;
};

/// The spans of a product that check() accepted.
ProductSpans spans(const Product<void>& p, std::size_t elem_size);

/// The spans of a backward pass's operands: dC and the argmax empty if m or n is 0, the operand
/// empty unless read.
struct GradientSpans {
  Span grad, gc, argmax, other;
};

/// The spans of a gradient that check() accepted.
GradientSpans spans(const Gradient<void>& g, std::size_t elem_size);

/// check()'s first half: every size, leading dimension, extent and stride of p; false if there is
/// nothing to compute. A backend may check its own limits (a grid) before the second half.
bool check_shapes(const Product<void>& p, std::size_t elem_size);

/// check()'s second half, for a product the first accepted: null pointers, spans past the end of the
/// address space, an output sharing a byte with an input.
void check_operands(const Product<void>& p, std::size_t elem_size);

/// check_shapes() of a gradient.
bool check_shapes(const Gradient<void>& g, std::size_t elem_size);

/// check_operands() of a gradient.
void check_operands(const Gradient<void>& g, std::size_t elem_size);

}  // namespace tropical::detail
