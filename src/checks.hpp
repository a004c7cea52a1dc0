#pragma once

// Argument checks of the products and backward passes (gemm.cpp launches):
// shapes, leading dimensions, 64-bit extents, null and overlapping pointers,
// and the one device every pointer of a call must live on. Every check throws
// InvalidArgument with the word a user recognises, before anything is queued.

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

/// The device ordinal owning ptr; rejects null, host-only and unknown memory.
int device_of(const void* ptr, const char* name);

/// Every pointer of a call must live on one device; that device runs the kernel.
class DeviceCheck {
 public:
  /// Adds ptr (named for the error), which must be on the device of the pointers added before.
  void add(const void* ptr, const char* name);
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
/// Runs before any driver call, so these errors need no GPU.
void check_operands(const Problem& p, const void* a, const void* b, const void* c, const void* argmax);

/// Adds the operands of a checked, non-empty product to a device check.
void add_operands(DeviceCheck& devices, const Problem& p, const void* a, const void* b, const void* c);

/// The argmax of a product: checks k, ldargmax and the extent; returns the extent.
std::int64_t check_argmax(const Problem& p, std::int64_t ldargmax);

/// The checked shapes of a backward pass.
struct BackwardShape {
  bool wrt_a;
  Stored grad, other;  // the gradient (stored like its operand) and the other operand
  std::int64_t grad_extent, gc_extent, argmax_extent, other_extent;
};

/// Checks the shapes, leading dimensions and extents of a backward pass of kernel id.
BackwardShape check_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p, std::int64_t ldgc,
                             std::int64_t ldargmax, bool reads_operand, std::int64_t ld_operand,
                             std::int64_t ldgrad);

/// Null and overlap checks of a backward pass, then the common device.
int backward_device(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                    bool reads_operand, const void* operand, const void* grad, CUstream stream);

}  // namespace tropical::detail
