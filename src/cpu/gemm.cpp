#include "tropical/cpu/gemm.hpp"

#include "driver.hpp"
#include "pool.hpp"

namespace tropical::cpu {
namespace detail {

ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

namespace {

/// The driver's flat view of a checked product (strides 0 and batch 1 for the unbatched ops).
template <class S, class T>
Job<T> job_of(const Product<T>& p) {
  Job<T> j{p.a.trans, p.b.trans, p.m(), p.n(), p.k(), p.a.data, p.a.ld, p.b.data, p.b.ld, p.c.data, p.c.ld};
  if (p.argmax) {
    j.argmax = p.argmax->data;
    j.ldargmax = p.argmax->ld;
    j.stride_argmax = p.argmax->stride;
  }
  j.stride_a = p.a.stride;
  j.stride_b = p.b.stride;
  j.stride_c = p.c.stride;
  j.batch = p.batch;
  const Scaling<T>& s = p.scaling;
  j.scale = s.apply_alpha;
  j.read_c = s.read_c;
  j.scale_c = s.apply_beta;
  if (s.apply_alpha) j.alpha = *s.alpha;
  if (s.apply_beta) j.beta = *s.beta;
  return j;
}

}  // namespace
}  // namespace detail

template <Semiring S, Element T>
  requires Supported<S, T>
void product(const Product<T>& p, int threads) {
  const int nt = detail::threads_for(threads);
  if (check(p)) detail::run_product<S, T>(detail::job_of<S, T>(p), nt);
}

#define TROPICAL_CPU_PRODUCT(S, T) template void product<S, T>(const Product<T>&, int);

#define TROPICAL_CPU_NUMBERS(S) \
  TROPICAL_CPU_PRODUCT(S, float) \
  TROPICAL_CPU_PRODUCT(S, double) \
  TROPICAL_CPU_PRODUCT(S, std::int32_t) \
  TROPICAL_CPU_PRODUCT(S, std::int64_t) \
  TROPICAL_CPU_PRODUCT(S, std::int16_t)

TROPICAL_CPU_NUMBERS(MaxPlus)
TROPICAL_CPU_NUMBERS(MinPlus)
TROPICAL_CPU_NUMBERS(MaxMul)
TROPICAL_CPU_NUMBERS(MaxMin)
TROPICAL_CPU_NUMBERS(MinMax)
TROPICAL_CPU_PRODUCT(AndOr, std::uint8_t)

#undef TROPICAL_CPU_NUMBERS
#undef TROPICAL_CPU_PRODUCT

}  // namespace tropical::cpu
