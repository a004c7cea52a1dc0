#include <string>

#include "../checks.hpp"
#include "pool.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/gemm.hpp"

// The backward passes route each dC(i, j) to the k its forward product chose.
// dA's row i gathers its terms in increasing j, dB's column j in increasing i,
// both from 0, as the reference does: one owner per row (column) and no atomics,
// so the sums are the reference's bit for bit. Threads take blocks of rows (columns).
namespace tropical::cpu {
namespace detail {
namespace {

using tropical::detail::BackwardShape;
using tropical::detail::check_batch;
using tropical::detail::invalid;
using tropical::detail::Strides;

/// Element (row, col) of op(X), X row-major with leading dimension ld.
template <class T>
T& at(T* x, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? x[col * ld + row] : x[row * ld + col];
}

/// The operands of one backward call (strides 0 and batch 1 for the unbatched ops).
template <class T>
struct Backward {
  Trans ta, tb;
  std::int64_t m, n, k;
  const T* grad_c;
  std::int64_t ldgc;
  const std::int32_t* argmax;
  std::int64_t ldargmax;
  const T* operand;  // B for dA, A for dB; read by MaxMul only
  std::int64_t ld_operand;
  T* grad;
  std::int64_t ldgrad;
  std::int64_t stride_gc = 0, stride_argmax = 0, stride_operand = 0, stride_grad = 0, batch = 1;
};

/// The GPU launcher's checks (shapes, extents, strides, null pointers, a gradient sharing a byte with
/// what it reads), without the device's.
template <Semiring S, Element T, Op O>
bool check(const Backward<T>& w) {
  constexpr bool reads_operand = S::kMul == MulKind::kMul;
  const tropical::detail::Problem shape{w.ta, w.tb, w.m, w.n, w.k, 0, 0, 0};
  const BackwardShape s = tropical::detail::check_backward(kernel_id<S, T, O>(), sizeof(T), shape, w.ldgc,
                                                           w.ldargmax, reads_operand, w.ld_operand, w.ldgrad);
  if (w.batch < 0) invalid("negative batch " + std::to_string(w.batch));
  check_batch("stride_gc", w.stride_gc, s.gc_extent, w.batch, sizeof(T), false);
  check_batch("stride_argmax", w.stride_argmax, s.argmax_extent, w.batch, sizeof(std::int32_t), false);
  if (reads_operand) {
    check_batch(s.wrt_a ? "stride_b" : "stride_a", w.stride_operand, s.other_extent, w.batch, sizeof(T), false);
  }
  check_batch(s.wrt_a ? "stride_ga" : "stride_gb", w.stride_grad, s.grad_extent, w.batch, sizeof(T), true);
  if (s.grad.rows == 0 || s.grad.cols == 0 || w.batch == 0) return false;
  tropical::detail::backward_spans(s, w.m > 0 && w.n > 0, w.grad_c, w.argmax, reads_operand, w.operand, w.grad,
                                   Strides{w.stride_gc, w.stride_operand, w.stride_grad, w.stride_argmax}, w.batch);
  return true;
}

/// Rows (dA) or columns (dB) per task, and the thread count for `work` elements of dC.
constexpr std::int64_t kBlock = 64;
int threads_for_work(int threads, double work) { return work < 65536.0 ? 1 : threads; }

template <Semiring S, Element T>
void run_a(const Backward<T>& w, int threads) {
  const std::int64_t blocks = (w.m + kBlock - 1) / kBlock;
  const double work = static_cast<double>(w.m) * static_cast<double>(w.n + w.k) * static_cast<double>(w.batch);
  parallel_for(w.batch * blocks, threads_for_work(threads, work), [&](std::int64_t task) {
    const std::int64_t q = task / blocks, i0 = task % blocks * kBlock;
    const std::int64_t i1 = i0 + kBlock < w.m ? i0 + kBlock : w.m;
    const T* gc = w.grad_c + q * w.stride_gc;
    const std::int32_t* x = w.argmax + q * w.stride_argmax;
    const T* b = w.operand == nullptr ? nullptr : w.operand + q * w.stride_operand;
    T* ga = w.grad + q * w.stride_grad;
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t p = 0; p < w.k; ++p) at(ga, w.ldgrad, w.ta, i, p) = T(0);
      for (std::int64_t j = 0; j < w.n; ++j) {
        const std::int32_t p = x[i * w.ldargmax + j];
        if (p < 0 || p >= w.k) continue;
        T g = gc[i * w.ldgc + j];
        if constexpr (S::kMul == MulKind::kMul) g *= at(b, w.ld_operand, w.tb, p, j);
        at(ga, w.ldgrad, w.ta, i, p) += g;
      }
    }
  });
}

template <Semiring S, Element T>
void run_b(const Backward<T>& w, int threads) {
  const std::int64_t blocks = (w.n + kBlock - 1) / kBlock;
  const double work = static_cast<double>(w.n) * static_cast<double>(w.m + w.k) * static_cast<double>(w.batch);
  parallel_for(w.batch * blocks, threads_for_work(threads, work), [&](std::int64_t task) {
    const std::int64_t q = task / blocks, j0 = task % blocks * kBlock;
    const std::int64_t j1 = j0 + kBlock < w.n ? j0 + kBlock : w.n;
    const T* gc = w.grad_c + q * w.stride_gc;
    const std::int32_t* x = w.argmax + q * w.stride_argmax;
    const T* a = w.operand == nullptr ? nullptr : w.operand + q * w.stride_operand;
    T* gb = w.grad + q * w.stride_grad;
    for (std::int64_t p = 0; p < w.k; ++p) {
      for (std::int64_t j = j0; j < j1; ++j) at(gb, w.ldgrad, w.tb, p, j) = T(0);
    }
    for (std::int64_t i = 0; i < w.m; ++i) {
      for (std::int64_t j = j0; j < j1; ++j) {
        const std::int32_t p = x[i * w.ldargmax + j];
        if (p < 0 || p >= w.k) continue;
        T g = gc[i * w.ldgc + j];
        if constexpr (S::kMul == MulKind::kMul) g *= at(a, w.ld_operand, w.ta, i, p);
        at(gb, w.ldgrad, w.tb, p, j) += g;
      }
    }
  });
}

}  // namespace
}  // namespace detail

template <Semiring S, Element T>
  requires HasBackward<S, T>
void backward_a(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                std::int64_t ldgc, const std::int32_t* argmax, std::int64_t ldargmax, const T* b,
                std::int64_t ldb, T* grad_a, std::int64_t ldga, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Backward<T> w{ta, tb, m, n, k, grad_c, ldgc, argmax, ldargmax,
                              S::kMul == MulKind::kMul ? b : nullptr, ldb, grad_a, ldga};
  if (detail::check<S, T, Op::kBackwardA>(w)) detail::run_a<S, T>(w, nt);
}

template <Semiring S, Element T>
  requires HasBackward<S, T>
void backward_b(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                std::int64_t ldgc, const std::int32_t* argmax, std::int64_t ldargmax, const T* a,
                std::int64_t lda, T* grad_b, std::int64_t ldgb, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Backward<T> w{ta, tb, m, n, k, grad_c, ldgc, argmax, ldargmax,
                              S::kMul == MulKind::kMul ? a : nullptr, lda, grad_b, ldgb};
  if (detail::check<S, T, Op::kBackwardB>(w)) detail::run_b<S, T>(w, nt);
}

template <Semiring S, Element T>
  requires HasBackward<S, T>
void backward_a_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                        std::int64_t ldgc, std::int64_t stride_gc, const std::int32_t* argmax,
                        std::int64_t ldargmax, std::int64_t stride_argmax, const T* b, std::int64_t ldb,
                        std::int64_t stride_b, T* grad_a, std::int64_t ldga, std::int64_t stride_ga,
                        std::int64_t batch, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Backward<T> w{ta, tb, m, n, k, grad_c, ldgc, argmax, ldargmax,
                              S::kMul == MulKind::kMul ? b : nullptr, ldb, grad_a, ldga,
                              stride_gc, stride_argmax, stride_b, stride_ga, batch};
  if (detail::check<S, T, Op::kBackwardABatched>(w)) detail::run_a<S, T>(w, nt);
}

template <Semiring S, Element T>
  requires HasBackward<S, T>
void backward_b_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* grad_c,
                        std::int64_t ldgc, std::int64_t stride_gc, const std::int32_t* argmax,
                        std::int64_t ldargmax, std::int64_t stride_argmax, const T* a, std::int64_t lda,
                        std::int64_t stride_a, T* grad_b, std::int64_t ldgb, std::int64_t stride_gb,
                        std::int64_t batch, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Backward<T> w{ta, tb, m, n, k, grad_c, ldgc, argmax, ldargmax,
                              S::kMul == MulKind::kMul ? a : nullptr, lda, grad_b, ldgb,
                              stride_gc, stride_argmax, stride_a, stride_gb, batch};
  if (detail::check<S, T, Op::kBackwardBBatched>(w)) detail::run_b<S, T>(w, nt);
}

#define TROPICAL_CPU_BACKWARD(S, T)                                                                            \
  template void backward_a<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,            \
                                 std::int64_t, const std::int32_t*, std::int64_t, const T*, std::int64_t, T*, \
                                 std::int64_t, int);                                                          \
  template void backward_b<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,            \
                                 std::int64_t, const std::int32_t*, std::int64_t, const T*, std::int64_t, T*, \
                                 std::int64_t, int);                                                          \
  template void backward_a_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,    \
                                         std::int64_t, std::int64_t, const std::int32_t*, std::int64_t,       \
                                         std::int64_t, const T*, std::int64_t, std::int64_t, T*,              \
                                         std::int64_t, std::int64_t, std::int64_t, int);                      \
  template void backward_b_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,    \
                                         std::int64_t, std::int64_t, const std::int32_t*, std::int64_t,       \
                                         std::int64_t, const T*, std::int64_t, std::int64_t, T*,              \
                                         std::int64_t, std::int64_t, std::int64_t, int);

TROPICAL_CPU_BACKWARD(MaxPlus, float)
TROPICAL_CPU_BACKWARD(MaxPlus, double)
TROPICAL_CPU_BACKWARD(MinPlus, float)
TROPICAL_CPU_BACKWARD(MinPlus, double)
TROPICAL_CPU_BACKWARD(MaxMul, float)
TROPICAL_CPU_BACKWARD(MaxMul, double)

#undef TROPICAL_CPU_BACKWARD

}  // namespace tropical::cpu
