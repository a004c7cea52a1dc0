#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tropical/catalog.hpp"
#include "tropical/problem.hpp"
#include "tropical/reference.hpp"
#include "tropical/semiring.hpp"

/// Tropical matrix products on host memory: the GPU API's operations, on the CPU.
///
/// Conventions (those of tropical::gemm in gemm.hpp, less the stream; the
/// semantics of infinities, saturation, NaN, AndOr's bytes, alpha and beta are
/// tropical::reference's, and every result equals the reference's bit for bit,
/// but for the sign of a zero where +0 and -0 tie: std::fmax leaves it open, and
/// so do the reference's and the vector code's max and min):
/// - Matrices are row-major host pointers; op(X) is X, or X stored transposed
///   when its Trans is kYes (op(A) is m x k: A is m x k with lda >= k, or k x m
///   with lda >= m when transposed).
/// - The call computes on the calling thread and on up to `threads - 1` threads
///   of a process-wide pool, and returns when the result is written. threads = 0
///   means num_threads(). Products under about 64^3 multiply-adds stay on the
///   calling thread. Two calls at once are allowed (from any threads); a call
///   that finds the pool busy runs on its own thread.
/// - The products are blocked (packed panels, a register-tiled SIMD microkernel)
///   and vectorized for the best instruction set of the running CPU, chosen once
///   per process (Highway's runtime dispatch; TROPICAL_CPU_ISA forces one, see isa()).
///   Integer sum semirings take the vector path when no product can saturate and
///   no operand is the zero (a scan of A and B decides), else an exact scalar one.
/// - An output must not be an input (identical pointers are rejected, partial
///   overlaps are the caller's to avoid); C = alpha (x) P (+) beta (x) C reads
///   and writes C in place.
/// - Throws InvalidArgument (negative size, small leading dimension, negative or
///   overlapping stride, a size or offset that overflows 64 bits, null pointer
///   of a non-empty operand, an output in place of an input) before writing
///   anything; std::bad_alloc if a packing buffer cannot be had.
/// - Every semiring x element pair of the catalog has the products (AndOr over
///   std::uint8_t only); backward passes exist for float and double of MaxPlus,
///   MinPlus and MaxMul, as on the GPU. Other pairs do not compile. std::int16_t
///   products are vectorized (but their argmax is scalar: a 16-bit lane cannot
///   hold k); CountingTropical runs the reference's loops on threads.
namespace tropical::cpu {

/// True if the catalog has semiring S over element type T.
template <class S, class T>
concept Supported = reference::SupportedPair<S, T>;

/// True if S over T has backward passes (float and double of MaxPlus, MinPlus, MaxMul).
template <class S, class T>
concept HasBackward = Supported<S, T> && reference::Differentiable<S> && std::is_floating_point_v<T>;

/// The thread count of a call that passes 0: set_num_threads's value, else
/// TROPICAL_NUM_THREADS (a positive integer), else the hardware's thread count.
int num_threads();

/// Sets the default thread count (n >= 1), or goes back to the environment's and
/// the hardware's (n = 0); throws InvalidArgument if n < 0. Thread-safe.
void set_num_threads(int n);

/// The instruction set the microkernels run on ("avx512", "avx2", "sse4" or
/// "scalar" on x86; "neon", ... elsewhere): the best the CPU has, or the best at
/// or below TROPICAL_CPU_ISA (read once, at the first call; an unknown name, or
/// one this CPU lacks, is ignored with one warning on stderr: the best it has runs).
std::string_view isa();

/// Computes p (checked by tropical::check() first: throws InvalidArgument before writing anything).
template <Semiring S, Element T>
  requires Supported<S, T>
void product(const Product<T>& p, int threads = 0);

/// Computes g (checked by tropical::check() first); deterministic, each element's terms summed as the reference does.
template <Semiring S, Element T>
  requires HasBackward<S, T>
void gradient(const Gradient<T>& g, int threads = 0);

/// C (m x n) = op(A) (x) op(B) over CountingTropical (tropical/counting.hpp's
/// conventions, reference::gemm_counting's results bit for bit); C's values and
/// counts are overwritten. The reference's loops, on threads over blocks of rows.
template <CountingElement T>
void gemm_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c,
                   int threads = 0);

/// gemm_counting of every product of a batch (matrix p of each array at its base + p * its stride).
template <CountingElement T>
void gemm_batched_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                           const CountingMatrix<const T>& a, const CountingMatrix<const T>& b,
                           const CountingMatrix<T>& c, std::int64_t batch, int threads = 0);

}  // namespace tropical::cpu

// gemm, gemm_argmax, backward_a, backward_b and their batched forms: generated from codegen/operations.py.
#include "tropical/detail/cpu_face.hpp"
