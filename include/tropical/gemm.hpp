#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tropical/catalog.hpp"
#include "tropical/problem.hpp"
#include "tropical/reference.hpp"
#include "tropical/semiring.hpp"

/// Tropical matrix products on the GPU.
///
/// Conventions (the same as tropical::reference, which documents the
/// semantics of infinities, saturation, NaN, AndOr's bytes, alpha and beta):
/// - Matrices are row-major device pointers. op(X) is X, or X stored
///   transposed when its Trans is kYes: op(A) is m x k, so A itself is m x k
///   with lda >= k, or k x m with lda >= m when transposed (CBLAS RowMajor).
/// - Work is queued on `stream` (0: the default stream of the device's primary
///   context) and the call returns without waiting. A stream must belong to
///   the primary context of the device that holds the operands (a stream of
///   another context is rejected): the library launches in primary contexts.
/// - Every pointer must be memory of one device; the kernel runs there. Each
///   operand (every product of a batch, every row to the last, at its leading
///   dimension) must lie inside the allocation that holds its first element, as
///   the driver reports it (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR / _SIZE: for
///   cuMemMap'd memory the reserved range); a batch, stride or leading dimension
///   that runs past its end, or past the end of the address space, is rejected.
/// - An output must not share an element with an input: C none with A or B,
///   argmax none with A, B or C, a gradient none with dC, argmax or the operand
///   (C = alpha (x) op(A) (x) op(B) (+) beta (x) C reads and writes C in place,
///   which is allowed). The check compares bytes, not address ranges: blocks
///   of one matrix that share no element are accepted (an interleaving too
///   intricate to settle within a small bounded search is accepted too).
/// - A gemm or gemm_argmax whose m x n fits a small tile of the batched op
///   (f32: 16, 32 or 64 square; f64: 16 or 32; catalog::pick_product) runs as
///   a batch of one on that tile's kernel: one block, no idle threads, a
///   smaller module. Warming a gemm kernel by name does not warm those tiles
///   (tropical::warm of every kernel, `tropical warm --all`, does).
/// - The first call of each (semiring, type, op, tile) on a device compiles or
///   loads one kernel; later calls find it with one atomic load, then check the
///   pointers with the driver (a few cuPointerGetAttribute calls) and launch.
/// - Thread-safe: any thread may call any function at any time (kernels are
///   resolved once per device behind call_once slots; nothing else is shared);
///   products that write the same C concurrently are the caller's to order.
/// - CUDA graphs: a call on a capturing stream records its launch (and, for
///   the non-batched backward passes, a memset). Resolve the kernel before
///   capturing (a first call, or tropical::warm): loading a module is not a
///   stream operation and a capture in global mode may refuse it.
/// - Throws InvalidArgument (negative size, small leading dimension, a size
///   or offset that overflows 64 bits, null or host pointer, an operand past
///   the end of its allocation, an output sharing memory with an input,
///   pointers on different devices, stream of another device), CompileError,
///   CudaError, or Unavailable (no driver or no GPU). Nothing is queued when it
///   throws; every check but the device and allocation ones needs no GPU.
/// - A semiring x type x op missing from the catalog does not compile. Every
///   semiring has gemm, gemm_argmax, gemm_batched and gemm_batched_argmax
///   (AndOr over std::uint8_t only; its argmax is the first k with a(i, k) and
///   b(k, j) both true; MaxMin/MinMax's is the first k attaining the
///   bottleneck). Backward passes exist for float and double of MaxPlus,
///   MinPlus and MaxMul only: MaxMin/MinMax's product selects an operand (no
///   derivative to route) and AndOr's are booleans.
namespace tropical {

namespace detail {

/// alpha and beta of a product (pointers to one element each) and which
/// parts of the epilogue they need, as the kernels take them (their TROPICAL_* flags).
struct Scaling {
  const void* alpha;
  const void* beta;
  int flags;
};

inline constexpr int kApplyAlpha = 1, kReadC = 2, kApplyBeta = 4;

/// The kernels' form of a product's Scaling.
inline Scaling kernel_scaling(const tropical::Scaling<void>& s) {
  return {s.alpha, s.beta,
          (s.apply_alpha ? kApplyAlpha : 0) | (s.read_c ? kReadC : 0) | (s.apply_beta ? kApplyBeta : 0)};
}

/// The kernels' Scaling of alpha and beta for semiring S (reference::scaling's flags).
template <class S, class T>
Scaling scaling(const T& alpha, const T& beta) {
  const tropical::Scaling<T> s = reference::scaling<S, T>(alpha, beta);
  return kernel_scaling({s.alpha, s.beta, s.apply_alpha, s.read_c, s.apply_beta});
}

/// Checks p (tropical::check, then the device and allocation of every operand) and launches `id` (a gemm
/// whose m x n fits a small tile runs as a batch of one on that tile's kernel).
void launch_gemm(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream);
/// As launch_gemm, with the argmax.
void launch_gemm_argmax(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream);
/// Launches batched `id` (a default tile: the small tile for m x n is picked here; a small-tile id is launched
/// as is) after the checks of launch_gemm; the argmax is read for gemm_batched_argmax only.
void launch_gemm_batched(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream);
/// Checks g and zeroes the gradient, then launches `id` (atomics).
void launch_backward(catalog::KernelId id, const Gradient<void>& g, std::size_t elem_size, CUstream stream);
/// Checks g and launches batched `id` (one thread per row or column of a gradient, no atomics).
void launch_backward_batched(catalog::KernelId id, const Gradient<void>& g, std::size_t elem_size,
                             CUstream stream);

}  // namespace detail

}  // namespace tropical

// gemm, gemm_argmax, backward_a, backward_b and their batched forms: generated from codegen/operations.py.
#include "tropical/detail/gpu_face.hpp"
