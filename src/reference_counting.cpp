// The CPU reference of CountingTropical (include/tropical/reference.hpp): the
// semiring's sum over k, in k order, one element at a time.
#include <cmath>
#include <limits>

#include "tropical/reference.hpp"

namespace tropical::reference {
namespace {

/// Element (row, col) of op(X) where X is stored row-major with leading dimension ld.
template <class T>
T at(const T* p, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? p[col * ld + row] : p[row * ld + col];
}

}  // namespace

template <CountingElement T>
void gemm_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T value = -std::numeric_limits<T>::infinity(), count = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        // (value, count) (+)= a(i, p) (x) b(p, j): a larger value restarts the count, an equal one adds to it.
        const T v = at(a.values, a.ld_values, ta, i, p) + at(b.values, b.ld_values, tb, p, j);
        if (v >= value) {
          count = std::fma(at(a.counts, a.ld_counts, ta, i, p), at(b.counts, b.ld_counts, tb, p, j),
                           v > value ? T(0) : count);
        }
        value = std::fmax(value, v);
      }
      c.values[i * c.ld_values + j] = value;
      c.counts[i * c.ld_counts + j] = count;
    }
  }
}

template <CountingElement T>
void gemm_batched_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                           const CountingMatrix<const T>& a, const CountingMatrix<const T>& b,
                           const CountingMatrix<T>& c, std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    const CountingMatrix<const T> ap{a.values + p * a.stride_values, a.ld_values, a.counts + p * a.stride_counts,
                                     a.ld_counts};
    const CountingMatrix<const T> bp{b.values + p * b.stride_values, b.ld_values, b.counts + p * b.stride_counts,
                                     b.ld_counts};
    const CountingMatrix<T> cp{c.values + p * c.stride_values, c.ld_values, c.counts + p * c.stride_counts,
                               c.ld_counts};
    gemm_counting<T>(ta, tb, m, n, k, ap, bp, cp);
  }
}

#define TROPICAL_INSTANTIATE_COUNTING(T)                                                                   \
  template void gemm_counting<T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,                  \
                                 const CountingMatrix<const T>&, const CountingMatrix<const T>&,           \
                                 const CountingMatrix<T>&);                                                \
  template void gemm_batched_counting<T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,          \
                                         const CountingMatrix<const T>&, const CountingMatrix<const T>&,   \
                                         const CountingMatrix<T>&, std::int64_t);

TROPICAL_INSTANTIATE_COUNTING(float)
TROPICAL_INSTANTIATE_COUNTING(double)

#undef TROPICAL_INSTANTIATE_COUNTING

}  // namespace tropical::reference
