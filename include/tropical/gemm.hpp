#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <boost/hana/contains.hpp>
#include <boost/hana/at_key.hpp>

#include "tropical/catalog.hpp"
#include "tropical/semiring.hpp"

/// Tropical matrix products on the GPU.
///
/// Conventions (the same as tropical::reference, which documents the
/// semantics of infinities, saturation and NaN):
/// - Matrices are row-major device pointers. op(X) is X, or X stored
///   transposed when its Trans is kYes: op(A) is m x k, so A itself is m x k
///   with lda >= k, or k x m with lda >= m when transposed (CBLAS RowMajor).
/// - Work is queued on `stream` (0: the default stream of the device's primary
///   context) and the call returns without waiting.
/// - Every pointer must be memory of one device; the kernel runs there. An
///   output must not overlap an input (no in-place C = C (x) C: write to
///   another buffer); identical pointers are rejected, partial overlaps are
///   the caller's to avoid.
/// - The first call of each (semiring, type, op) on a device compiles or loads
///   one kernel; later calls find it with one atomic load, then check the
///   pointers with the driver (a few cuPointerGetAttribute calls) and launch.
/// - Throws InvalidArgument (negative size, small leading dimension, null or
///   host pointer, pointers on different devices, stream of another device),
///   CompileError, CudaError, or Unavailable (no driver or no GPU).
/// - A semiring x type x op missing from the catalog does not compile.
namespace tropical {

/// True if the generated catalog has a kernel for semiring S, element T, op O.
template <class S, class T, Op O>
inline constexpr bool kInCatalog =
    decltype(boost::hana::contains(catalog::kKernelMap, boost::hana::type_c<catalog::Key<S, T, O>>))::value;

/// The catalog id of (S, T, O), chosen at compile time.
template <class S, class T, Op O>
constexpr catalog::KernelId kernel_id() {
  static_assert(kInCatalog<S, T, O>,
                "tropical: this semiring x element type x operation is not in the generated "
                "catalog (backward passes exist for float and double only; see codegen/spec.py)");
  if constexpr (kInCatalog<S, T, O>) {
    return std::remove_cvref_t<decltype(catalog::kKernelMap[boost::hana::type_c<catalog::Key<S, T, O>>])>::value;
  } else {
    return catalog::KernelId{};
  }
}

namespace detail {

/// Shapes and leading dimensions of one call, as the launch code sees them.
struct Problem {
  Trans ta, tb;
  std::int64_t m, n, k;
  std::int64_t lda, ldb, ldc;
};

void launch_gemm(catalog::KernelId id, std::size_t elem_size, const Problem& p, const void* a,
                 const void* b, void* c, CUstream stream);
void launch_gemm_argmax(catalog::KernelId id, std::size_t elem_size, const Problem& p, const void* a,
                        const void* b, void* c, std::int32_t* argmax, std::int64_t ldargmax,
                        CUstream stream);
void launch_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p,
                     const void* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                     std::int64_t ldargmax, bool reads_operand, const void* operand,
                     std::int64_t ld_operand, void* grad, std::int64_t ldgrad, CUstream stream);
void launch_gemm_batched(catalog::KernelId id, std::size_t elem_size, const Problem& p,
                         const void* a, std::int64_t stride_a, const void* b, std::int64_t stride_b,
                         void* c, std::int64_t stride_c, std::int64_t batch, CUstream stream);

}  // namespace detail

/// C (m x n, ldc) = op(A) (x) op(B).
template <Semiring S, Element T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
          CUstream stream = nullptr) {
  detail::launch_gemm(kernel_id<S, T, Op::kGemm>(), sizeof(T), {ta, tb, m, n, k, lda, ldb, ldc}, a,
                      b, c, stream);
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
  detail::launch_gemm_argmax(kernel_id<S, T, Op::kGemmArgmax>(), sizeof(T),
                             {ta, tb, m, n, k, lda, ldb, ldc}, a, b, c, argmax, ldargmax, stream);
}

/// dA (laid out like A: m x k, or k x m if ta) from dC (m x n) and the argmax
/// of the forward product; overwrites dA. b is read for MaxMul only (may be
/// null otherwise). Accumulates with atomics, so float sums may differ in the
/// last bits from run to run.
template <Semiring S, Element T>
void backward_a(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* b, std::int64_t ldb, T* grad_a, std::int64_t ldga,
                CUstream stream = nullptr) {
  detail::launch_backward(kernel_id<S, T, Op::kBackwardA>(), sizeof(T), {ta, tb, m, n, k, 0, ldb, 0},
                          grad_c, ldgc, argmax, ldargmax, S::kMul == MulKind::kMul, b, ldb, grad_a, ldga,
                          stream);
}

/// dB (laid out like B: k x n, or n x k if tb) from dC (m x n) and the argmax
/// of the forward product; overwrites dB. a is read for MaxMul only.
template <Semiring S, Element T>
void backward_b(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* a, std::int64_t lda, T* grad_b, std::int64_t ldgb,
                CUstream stream = nullptr) {
  detail::launch_backward(kernel_id<S, T, Op::kBackwardB>(), sizeof(T), {ta, tb, m, n, k, lda, 0, 0},
                          grad_c, ldgc, argmax, ldargmax, S::kMul == MulKind::kMul, a, lda, grad_b, ldgb,
                          stream);
}

/// C[p] = op(A[p]) (x) op(B[p]) for p < batch; matrix p of each operand
/// starts stride elements after matrix p - 1. stride_a or stride_b may be 0
/// (one operand for the whole batch); negative strides, and a stride_c that
/// makes two products of C overlap, are rejected.
template <Semiring S, Element T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_gemm_batched(kernel_id<S, T, Op::kGemmBatched>(), sizeof(T),
                              {ta, tb, m, n, k, lda, ldb, ldc}, a, stride_a, b, stride_b, c, stride_c,
                              batch, stream);
}

}  // namespace tropical
