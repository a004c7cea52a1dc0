#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tropical/catalog.hpp"
#include "tropical/semiring.hpp"

/// CountingTropical products on the GPU: C = op(A) (x) op(B) where every
/// element is a (value, count) pair, as the tensor-network packages use it to
/// count optimal configurations (ground-state degeneracy, the number of
/// maximum independent sets). Semantics (ties, -inf, NaN, rounding of counts)
/// are documented once, in tropical/reference.hpp (reference::gemm_counting
/// is the CPU oracle).
///
/// Conventions (those of tropical/gemm.hpp, less alpha and beta):
/// - An operand is a CountingMatrix: values and counts as two row-major device
///   arrays of one type (float or double), each with its own leading dimension
///   (and, for the batched call, its own batch stride); the operand's Trans
///   applies to both arrays.
/// - C's values and counts are overwritten (no alpha/beta: accumulate by
///   splitting k over two calls and adding their results on the host, or
///   contract the batch on the GPU). Neither of C's arrays may be one of A's
///   or B's, nor C's values its counts (identical pointers are rejected).
/// - Queued on `stream`; throws InvalidArgument, CompileError, CudaError or
///   Unavailable as tropical::gemm does. Nothing is queued when it throws.
/// - Kernels: tropical_gemm_counting_<f32|f64> and
///   tropical_gemm_batched_counting_<f32|f64>, with a quick and a tuned tier
///   that give the same bits.
namespace tropical {

namespace detail {

/// Launches counting kernel `id` (gemm or gemm_batched) over `batch` products after checking every argument.
void launch_gemm_counting(catalog::KernelId id, std::size_t elem_size, Trans ta, Trans tb, std::int64_t m,
                          std::int64_t n, std::int64_t k, const CountingMatrix<const void>& a,
                          const CountingMatrix<const void>& b, const CountingMatrix<void>& c, std::int64_t batch,
                          CUstream stream);

template <class T>
CountingMatrix<const void> untyped(const CountingMatrix<const T>& x) {
  return {x.values, x.ld_values, x.counts, x.ld_counts, x.stride_values, x.stride_counts};
}

template <class T>
CountingMatrix<void> untyped(const CountingMatrix<T>& x) {
  return {x.values, x.ld_values, x.counts, x.ld_counts, x.stride_values, x.stride_counts};
}

}  // namespace detail

/// C (m x n) = op(A) (x) op(B) over CountingTropical; C's values and counts
/// are overwritten (the strides are not read).
template <CountingElement T>
void gemm_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c,
                   CUstream stream = nullptr) {
  detail::launch_gemm_counting(kernel_id<CountingTropical, T, Op::kGemm>(), sizeof(T), ta, tb, m, n, k,
                               detail::untyped(a), detail::untyped(b), detail::untyped(c), 1, stream);
}

/// C[p] = op(A[p]) (x) op(B[p]) over CountingTropical for p < batch; matrix p
/// of each array starts its stride after matrix p - 1 (A's or B's strides may
/// be 0 to share one operand; negative strides, and strides that make two of
/// C's products overlap, are rejected).
template <CountingElement T>
void gemm_batched_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                           const CountingMatrix<const T>& a, const CountingMatrix<const T>& b,
                           const CountingMatrix<T>& c, std::int64_t batch, CUstream stream = nullptr) {
  detail::launch_gemm_counting(kernel_id<CountingTropical, T, Op::kGemmBatched>(), sizeof(T), ta, tb, m, n, k,
                               detail::untyped(a), detail::untyped(b), detail::untyped(c), batch, stream);
}

}  // namespace tropical
