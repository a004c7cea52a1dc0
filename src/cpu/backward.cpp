#include "pool.hpp"
#include "tropical/cpu/gemm.hpp"

// The backward passes route each dC(i, j) to the k its forward product chose.
// dA's row i gathers its terms in increasing j, dB's column j in increasing i,
// both from 0, as the reference does: one owner per row (column) and no atomics,
// so the sums are the reference's bit for bit. Threads take blocks of rows (columns).
namespace tropical::cpu {
namespace detail {
namespace {

/// Rows (dA) or columns (dB) per task, and the thread count for `work` elements of dC.
constexpr std::int64_t kBlock = 64;
int threads_for_work(int threads, double work) { return work < 65536.0 ? 1 : threads; }

/// Element (row, col) of op(X), X row-major with leading dimension ld.
template <class T>
T& at(T* x, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? x[col * ld + row] : x[row * ld + col];
}

template <Semiring S, Element T>
void run_a(const Gradient<T>& w, int threads) {
  const std::int64_t m = w.m(), n = w.n(), k = w.k();
  const Trans ta = w.grad.trans, tb = w.operand.trans;
  const std::int64_t blocks = (m + kBlock - 1) / kBlock;
  const double work = static_cast<double>(m) * static_cast<double>(n + k) * static_cast<double>(w.batch);
  parallel_for(w.batch * blocks, threads_for_work(threads, work), [&](std::int64_t task) {
    const std::int64_t q = task / blocks, i0 = task % blocks * kBlock;
    const std::int64_t i1 = i0 + kBlock < m ? i0 + kBlock : m;
    const T* gc = w.grad_c.data + q * w.grad_c.stride;
    const std::int32_t* x = w.argmax.data + q * w.argmax.stride;
    const T* b = w.operand.data == nullptr ? nullptr : w.operand.data + q * w.operand.stride;
    T* ga = w.grad.data + q * w.grad.stride;
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t p = 0; p < k; ++p) at(ga, w.grad.ld, ta, i, p) = T(0);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int32_t p = x[i * w.argmax.ld + j];
        if (p < 0 || p >= k) continue;
        T g = gc[i * w.grad_c.ld + j];
        if constexpr (S::kMul == MulKind::kMul) g *= at(b, w.operand.ld, tb, p, j);
        at(ga, w.grad.ld, ta, i, p) += g;
      }
    }
  });
}

template <Semiring S, Element T>
void run_b(const Gradient<T>& w, int threads) {
  const std::int64_t m = w.m(), n = w.n(), k = w.k();
  const Trans ta = w.operand.trans, tb = w.grad.trans;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  const double work = static_cast<double>(n) * static_cast<double>(m + k) * static_cast<double>(w.batch);
  parallel_for(w.batch * blocks, threads_for_work(threads, work), [&](std::int64_t task) {
    const std::int64_t q = task / blocks, j0 = task % blocks * kBlock;
    const std::int64_t j1 = j0 + kBlock < n ? j0 + kBlock : n;
    const T* gc = w.grad_c.data + q * w.grad_c.stride;
    const std::int32_t* x = w.argmax.data + q * w.argmax.stride;
    const T* a = w.operand.data == nullptr ? nullptr : w.operand.data + q * w.operand.stride;
    T* gb = w.grad.data + q * w.grad.stride;
    for (std::int64_t p = 0; p < k; ++p) {
      for (std::int64_t j = j0; j < j1; ++j) at(gb, w.grad.ld, tb, p, j) = T(0);
    }
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = j0; j < j1; ++j) {
        const std::int32_t p = x[i * w.argmax.ld + j];
        if (p < 0 || p >= k) continue;
        T g = gc[i * w.grad_c.ld + j];
        if constexpr (S::kMul == MulKind::kMul) g *= at(a, w.operand.ld, ta, i, p);
        at(gb, w.grad.ld, tb, p, j) += g;
      }
    }
  });
}

}  // namespace
}  // namespace detail

template <Semiring S, Element T>
  requires HasBackward<S, T>
void gradient(const Gradient<T>& g, int threads) {
  const int nt = detail::threads_for(threads);
  if (!check(g)) return;
  Gradient<T> w = g;
  if (!w.reads_operand) w.operand.data = nullptr;  // (+) semirings never read it
  if (w.wrt == Wrt::kA) {
    detail::run_a<S, T>(w, nt);
  } else {
    detail::run_b<S, T>(w, nt);
  }
}

#define TROPICAL_CPU_GRADIENT(S, T) template void gradient<S, T>(const Gradient<T>&, int);

TROPICAL_CPU_GRADIENT(MaxPlus, float)
TROPICAL_CPU_GRADIENT(MaxPlus, double)
TROPICAL_CPU_GRADIENT(MinPlus, float)
TROPICAL_CPU_GRADIENT(MinPlus, double)
TROPICAL_CPU_GRADIENT(MaxMul, float)
TROPICAL_CPU_GRADIENT(MaxMul, double)

#undef TROPICAL_CPU_GRADIENT

}  // namespace tropical::cpu
