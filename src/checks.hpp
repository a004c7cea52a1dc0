#pragma once

// Argument checks of the products and backward passes (gemm.cpp launches):
// shapes, leading dimensions, 64-bit extents, null pointers, outputs that share
// memory with another operand, operands that run past the end of the address
// space or of their allocation, and the one device every pointer of a call must
// live on. Every check throws InvalidArgument with the word a user recognises,
// before anything is queued; all but the device and allocation checks need no GPU.

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tropical/gemm.hpp"

namespace tropical::detail {

/// Throws InvalidArgument("tropical: " + what).
[[noreturn]] void invalid(const std::string& what);

/// Rows and columns of an operand as stored (transposed storage swaps them).
struct Stored {
  std::int64_t rows, cols;
};

/// The stored shape of a rows x cols operand, transposed in storage if t.
Stored stored(Trans t, std::int64_t rows, std::int64_t cols);

/// Rejects a leading dimension below the stored row length (or 1).
void check_ld(const char* name, std::int64_t ld, Stored s);

/// Rejects a negative m, n or k.
void check_shape(const Problem& p);

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

/// Where one operand of a call lies: its device, and the allocation holding its first byte as the driver
/// reports it (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR / _RANGE_SIZE; both 0 if it reports none).
struct Placement {
  int device = -1;
  std::uintptr_t range_start = 0;
  std::uint64_t range_size = 0;
};

/// Where ptr lies, in one driver call; rejects null, host-only and unknown memory.
Placement placement_of(const void* ptr, const char* name);

/// Every pointer of a call must live on one device; that device runs the kernel.
class DeviceCheck {
 public:
  /// Adds an operand's span (nothing if it is empty): its first byte must be on the device of those added
  /// before, and its last byte inside the allocation that holds the first (a batch or leading dimension
  /// that runs past the end of the buffer is an InvalidArgument, not an illegal address in the kernel).
  void add(const Span& s);
  /// The common device; also checks that `stream` belongs to its primary context.
  int device(CUstream stream) const;

 private:
  int device_ = -1;
  const char* first_ = "";
};

/// Extents (elements spanned) of the operands of one product.
struct Extents {
  std::int64_t a, b, c;
};

/// Checks the shape, leading dimensions and 64-bit extents of C = op(A) (x) op(B).
Extents check_product(const Problem& p, std::size_t elem_size);

/// Rejects null operands of a non-empty product (A and B only if k > 0), then
/// C in place of A or B, and argmax (if not null) in place of any of them.
/// Runs before any driver call, so these errors need no GPU. (The first half of
/// product_spans(), which both backends call and which compares every byte.)
void check_operands(const Problem& p, const void* a, const void* b, const void* c, const void* argmax);

/// The spans of a (batched) product's operands: A and B empty if k = 0, argmax empty if null.
struct ProductSpans {
  Span a, b, c, argmax;
};

/// The operands of a non-empty product, checked (sizes and strides already were): nulls as
/// check_operands() does, then spans past the end of the address space, C sharing a byte with A or B,
/// argmax sharing one with A, B or C. Needs no GPU.
ProductSpans product_spans(const Problem& p, const Strides& strides, std::int64_t batch, std::size_t elem_size,
                           const void* a, const void* b, const void* c, const std::int32_t* argmax,
                           std::int64_t ldargmax);

/// Adds the operands of a checked, non-empty product to a device check (device and allocation).
void add_operands(DeviceCheck& devices, const ProductSpans& s);

/// The argmax of a product: checks k, ldargmax and the extent; returns the extent.
std::int64_t check_argmax(const Problem& p, std::int64_t ldargmax);

/// The checked shapes of a backward pass.
struct BackwardShape {
  bool wrt_a;
  Stored grad, other;  // the gradient (stored like its operand) and the other operand
  Stored gc;           // dC and the argmax: m x n
  std::int64_t grad_extent, gc_extent, argmax_extent, other_extent;
  std::size_t elem_size;
  std::int64_t ldgc, ldargmax, ld_operand, ldgrad;
};

/// Checks the shapes, leading dimensions and extents of a backward pass of kernel id.
BackwardShape check_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p, std::int64_t ldgc,
                             std::int64_t ldargmax, bool reads_operand, std::int64_t ld_operand,
                             std::int64_t ldgrad);

/// The spans of a backward pass's operands: dC, argmax and the operand empty unless read.
struct BackwardSpans {
  Span grad, gc, argmax, other;
};

/// The operands of a non-empty backward pass (both backends), checked: null pointers, spans past the end of
/// the address space, and the gradient sharing a byte with dC, argmax or the operand (reads_c: m, n > 0;
/// reads_operand: MaxMul). Needs no GPU. strides: a = dC, b = the operand, c = the gradient (those of a
/// batch; none for one product).
BackwardSpans backward_spans(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                             bool reads_operand, const void* operand, const void* grad, const Strides& strides = {},
                             std::int64_t batch = 1);

/// backward_spans(), then the common device and each operand's allocation.
int backward_device(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                    bool reads_operand, const void* operand, const void* grad, CUstream stream,
                    const Strides& strides = {}, std::int64_t batch = 1);

}  // namespace tropical::detail
