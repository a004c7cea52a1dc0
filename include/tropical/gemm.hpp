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

/// C (m x n, ldc) = op(A) (x) op(B); C is not read.
template <Semiring S, Element T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
          CUstream stream = nullptr) {
  detail::launch_gemm(kernel_id<S, T, Op::kGemm>(), erased(Product<T>{{a, m, k, lda, ta}, {b, k, n, ldb, tb}, {c, m, n, ldc}}), sizeof(T), stream);
}

/// C = alpha (x) (op(A) (x) op(B)) (+) beta (x) C with semiring elements alpha
/// and beta: beta = the zero overwrites C without reading it (as the call
/// without alpha and beta, at the same speed), beta = the one accumulates
/// (C = C (+) ...), in place.
template <Semiring S, Element T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc,
          CUstream stream = nullptr) {
  detail::launch_gemm(kernel_id<S, T, Op::kGemm>(),
                      erased(Product<T>{{a, m, k, lda, ta}, {b, k, n, ldb, tb}, {c, m, n, ldc}, {}, reference::scaling<S, T>(alpha, beta)}), sizeof(T),
                      stream);
}

/// C = A (x) B for densely packed, untransposed A (m x k), B (k x n), C (m x n).
template <Semiring S, Element T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
          CUstream stream = nullptr) {
  const std::int64_t lda = k > 1 ? k : 1, ldbc = n > 1 ? n : 1;
  gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a, lda, b, ldbc, c, ldbc, stream);
}

/// C = op(A) (x) op(B) and argmax (m x n, ldargmax): the k whose product won
/// each element, ties to the smallest k, -1 where no product beat the zero.
/// k must be below 2^31.
template <Semiring S, Element T>
void gemm_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                 std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                 std::int32_t* argmax, std::int64_t ldargmax, CUstream stream = nullptr) {
  detail::launch_gemm_argmax(kernel_id<S, T, Op::kGemmArgmax>(),
                             erased(Product<T>{{a, m, k, lda, ta}, {b, k, n, ldb, tb}, {c, m, n, ldc}, Operand<std::int32_t>{argmax, m, n, ldargmax}}),
                             sizeof(T), stream);
}

/// dA (laid out like A: m x k, or k x m if ta) from dC (m x n) and the argmax
/// of the forward product; overwrites dA. b is read for MaxMul only (may be
/// null otherwise). Not deterministic: it scatters with atomics, so float
/// sums may differ in the last bits from run to run (the batched form is).
template <Semiring S, Element T>
void backward_a(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* b, std::int64_t ldb, T* grad_a, std::int64_t ldga,
                CUstream stream = nullptr) {
  detail::launch_backward(kernel_id<S, T, Op::kBackwardA>(),
                          erased(Gradient<T>{Wrt::kA, {grad_c, m, n, ldgc}, {argmax, m, n, ldargmax}, {b, k, n, ldb, tb},
                                             S::kMul == MulKind::kMul, {grad_a, m, k, ldga, ta}}),
                          sizeof(T), stream);
}

/// dB (laid out like B: k x n, or n x k if tb) from dC (m x n) and the argmax
/// of the forward product; overwrites dB. a is read for MaxMul only. Not
/// deterministic (atomics), like backward_a.
template <Semiring S, Element T>
void backward_b(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* a, std::int64_t lda, T* grad_b, std::int64_t ldgb,
                CUstream stream = nullptr) {
  detail::launch_backward(kernel_id<S, T, Op::kBackwardB>(),
                          erased(Gradient<T>{Wrt::kB, {grad_c, m, n, ldgc}, {argmax, m, n, ldargmax}, {a, m, k, lda, ta},
                                             S::kMul == MulKind::kMul, {grad_b, k, n, ldgb, tb}}),
                          sizeof(T), stream);
}

/// C[p] = op(A[p]) (x) op(B[p]) for p < batch; matrix p of each operand
/// starts stride elements after matrix p - 1. stride_a or stride_b may be 0
/// (one operand for the whole batch); negative strides, and a stride_c below
/// one product's extent ((m - 1) * ldc + n: products of C that could share an
/// element), are rejected. Small products (m and n up
/// to a small tile of codegen/spec.py) run one block per product.
template <Semiring S, Element T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_gemm_batched(kernel_id<S, T, Op::kGemmBatched>(), erased(Product<T>{{a, m, k, lda, ta, stride_a}, {b, k, n, ldb, tb, stride_b}, {c, m, n, ldc, Trans::kNo, stride_c}, {}, {}, batch}),
                              sizeof(T), stream);
}

/// C[p] = alpha (x) (op(A[p]) (x) op(B[p])) (+) beta (x) C[p] for p < batch,
/// with alpha and beta as in gemm (beta = the zero: C not read).
template <Semiring S, Element T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_gemm_batched(kernel_id<S, T, Op::kGemmBatched>(),
                              erased(Product<T>{{a, m, k, lda, ta, stride_a}, {b, k, n, ldb, tb, stride_b}, {c, m, n, ldc, Trans::kNo, stride_c}, {},
                                                reference::scaling<S, T>(alpha, beta), batch}),
                              sizeof(T), stream);
}

/// gemm_argmax of every product of a batch, strided like gemm_batched; the
/// argmax of product p (m x n, ldargmax) starts at argmax + p * stride_argmax.
/// Product p equals gemm_argmax on slice p. k must be below 2^31.
template <Semiring S, Element T>
void gemm_batched_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                         std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                         std::int32_t* argmax, std::int64_t ldargmax, std::int64_t stride_argmax,
                         std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_gemm_batched(
      kernel_id<S, T, Op::kGemmBatchedArgmax>(),
      erased(Product<T>{{a, m, k, lda, ta, stride_a}, {b, k, n, ldb, tb, stride_b}, {c, m, n, ldc, Trans::kNo, stride_c},
                        Operand<std::int32_t>{argmax, m, n, ldargmax, Trans::kNo, stride_argmax}, {}, batch}),
      sizeof(T), stream);
}

/// backward_a of every product of a batch (dA[p] from dC[p], argmax[p] and,
/// for MaxMul, B[p]); overwrites every dA[p]. Deterministic: each element's
/// terms are added in increasing j without atomics, the same sums as the CPU
/// reference bit for bit. One thread per row of each product: fast for many
/// small products, slow for a few large ones (use backward_a there).
template <Semiring S, Element T>
void backward_a_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                        std::int64_t ldgc, std::int64_t stride_gc, const std::int32_t* argmax,
                        std::int64_t ldargmax, std::int64_t stride_argmax, const T* b, std::int64_t ldb,
                        std::int64_t stride_b, T* grad_a, std::int64_t ldga, std::int64_t stride_ga,
                        std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_backward_batched(
      kernel_id<S, T, Op::kBackwardABatched>(),
      erased(Gradient<T>{Wrt::kA, {grad_c, m, n, ldgc, Trans::kNo, stride_gc},
                         {argmax, m, n, ldargmax, Trans::kNo, stride_argmax}, {b, k, n, ldb, tb, stride_b},
                         S::kMul == MulKind::kMul, {grad_a, m, k, ldga, ta, stride_ga}, batch}),
      sizeof(T), stream);
}

/// backward_b of every product of a batch; overwrites every dB[p].
/// Deterministic (terms added in increasing i), like backward_a_batched; one
/// thread per column of each product.
template <Semiring S, Element T>
void backward_b_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                        std::int64_t ldgc, std::int64_t stride_gc, const std::int32_t* argmax,
                        std::int64_t ldargmax, std::int64_t stride_argmax, const T* a, std::int64_t lda,
                        std::int64_t stride_a, T* grad_b, std::int64_t ldgb, std::int64_t stride_gb,
                        std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_backward_batched(
      kernel_id<S, T, Op::kBackwardBBatched>(),
      erased(Gradient<T>{Wrt::kB, {grad_c, m, n, ldgc, Trans::kNo, stride_gc},
                         {argmax, m, n, ldargmax, Trans::kNo, stride_argmax}, {a, m, k, lda, ta, stride_a},
                         S::kMul == MulKind::kMul, {grad_b, k, n, ldgb, tb, stride_gb}, batch}),
      sizeof(T), stream);
}

}  // namespace tropical
