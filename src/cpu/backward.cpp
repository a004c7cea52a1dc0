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

/// dA's rows (wrt A) or dB's columns (wrt B) of w, each block of them one task. The term of dC(i, j) goes to
/// p = argmax(i, j): dA(i, p), times B(p, j) for MaxMul; or dB(p, j), times A(i, p). Rows of dC are walked
/// in the outer loop, so each element's terms are added in increasing j (dA) or i (dB).
template <Semiring S, Element T>
void run(const Gradient<T>& w, int threads) {
  const bool wrt_a = w.wrt == Wrt::kA;
  const std::int64_t m = w.m(), n = w.n(), k = w.k();
  const std::int64_t owners = wrt_a ? m : n, blocks = (owners + kBlock - 1) / kBlock;
  const double work = static_cast<double>(owners) * static_cast<double>((wrt_a ? n : m) + k) *
                      static_cast<double>(w.batch);
  parallel_for(w.batch * blocks, threads_for_work(threads, work), [&](std::int64_t task) {
    const std::int64_t q = task / blocks, o0 = task % blocks * kBlock;
    const std::int64_t o1 = o0 + kBlock < owners ? o0 + kBlock : owners;
    // (i, p, j) -> the gradient's element, and the operand's (read for MaxMul only: null otherwise).
    const auto grad = [&](std::int64_t i, std::int64_t p, std::int64_t j) -> T& {
      return wrt_a ? w.grad.at(i, p, q) : w.grad.at(p, j, q);
    };
    const auto operand = [&](std::int64_t i, std::int64_t p, std::int64_t j) {
      return wrt_a ? w.operand.at(p, j, q) : w.operand.at(i, p, q);
    };
    for (std::int64_t o = o0; o < o1; ++o) {  // o: row i of dA, or column j of dB
      for (std::int64_t p = 0; p < k; ++p) grad(o, p, o) = T(0);
    }
    const std::int64_t i0 = wrt_a ? o0 : 0, i1 = wrt_a ? o1 : m, j0 = wrt_a ? 0 : o0, j1 = wrt_a ? n : o1;
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t j = j0; j < j1; ++j) {
        const std::int32_t p = w.argmax.at(i, j, q);
        if (p < 0 || p >= k) continue;
        T g = w.grad_c.at(i, j, q);
        if constexpr (S::kMul == MulKind::kMul) g *= operand(i, p, j);
        grad(i, p, j) += g;
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
  detail::run<S, T>(w, nt);
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
