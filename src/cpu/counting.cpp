// CountingTropical on host memory: the reference's fold over k of each element
// (tropical/reference.hpp), one row of C at a time with k outermost so that
// B's rows are read in order, on the pool's threads over blocks of rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../counting_checks.hpp"
#include "pool.hpp"
#include "tropical/cpu/gemm.hpp"

namespace tropical::cpu {
namespace {

/// Element (row, col) of op(X), X row-major with leading dimension ld.
template <class T>
T at(const T* x, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? x[col * ld + row] : x[row * ld + col];
}

constexpr std::int64_t kRowsPerTask = 8;

template <class T>
void run(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const CountingMatrix<const T>& a,
         const CountingMatrix<const T>& b, const CountingMatrix<T>& c, std::int64_t batch, bool batched,
         int threads) {
  const auto arrays = tropical::detail::check_counting(
      ta, tb, m, n, k, {a.values, a.ld_values, a.counts, a.ld_counts, a.stride_values, a.stride_counts},
      {b.values, b.ld_values, b.counts, b.ld_counts, b.stride_values, b.stride_counts},
      {c.values, c.ld_values, c.counts, c.ld_counts, c.stride_values, c.stride_counts}, batch, batched, sizeof(T));
  if (arrays.array[4].bytes == 0) return;
  const int nt = detail::threads_for(threads);
  const std::int64_t blocks = (m + kRowsPerTask - 1) / kRowsPerTask;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                      static_cast<double>(batch);
  detail::parallel_for(batch * blocks, work < 262144.0 ? 1 : nt, [&](std::int64_t task) {
    const std::int64_t p = batched ? task / blocks : 0, i0 = task % blocks * kRowsPerTask;
    const std::int64_t i1 = i0 + kRowsPerTask < m ? i0 + kRowsPerTask : m;
    const T* av = a.values + p * a.stride_values;
    const T* ac = a.counts + p * a.stride_counts;
    const T* bv = b.values + p * b.stride_values;
    const T* bc = b.counts + p * b.stride_counts;
    std::vector<T> value(static_cast<std::size_t>(n)), count(static_cast<std::size_t>(n));
    for (std::int64_t i = i0; i < i1; ++i) {
      std::fill(value.begin(), value.end(), -std::numeric_limits<T>::infinity());
      std::fill(count.begin(), count.end(), T(0));
      for (std::int64_t q = 0; q < k; ++q) {
        const T x = at(av, a.ld_values, ta, i, q), xc = at(ac, a.ld_counts, ta, i, q);
        for (std::int64_t j = 0; j < n; ++j) {
          const T v = x + at(bv, b.ld_values, tb, q, j);
          T& vj = value[static_cast<std::size_t>(j)];
          T& cj = count[static_cast<std::size_t>(j)];
          if (v >= vj) cj = std::fma(xc, at(bc, b.ld_counts, tb, q, j), v > vj ? T(0) : cj);
          vj = std::fmax(vj, v);
        }
      }
      T* cv = c.values + p * c.stride_values + i * c.ld_values;
      T* cc = c.counts + p * c.stride_counts + i * c.ld_counts;
      for (std::int64_t j = 0; j < n; ++j) {
        cv[j] = value[static_cast<std::size_t>(j)];
        cc[j] = count[static_cast<std::size_t>(j)];
      }
    }
  });
}

}  // namespace

template <CountingElement T>
void gemm_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c,
                   int threads) {
  run<T>(ta, tb, m, n, k, a, b, c, 1, false, threads);
}

template <CountingElement T>
void gemm_batched_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                           const CountingMatrix<const T>& a, const CountingMatrix<const T>& b,
                           const CountingMatrix<T>& c, std::int64_t batch, int threads) {
  run<T>(ta, tb, m, n, k, a, b, c, batch, true, threads);
}

template void gemm_counting<float>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,
                                   const CountingMatrix<const float>&, const CountingMatrix<const float>&,
                                   const CountingMatrix<float>&, int);
template void gemm_counting<double>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,
                                    const CountingMatrix<const double>&, const CountingMatrix<const double>&,
                                    const CountingMatrix<double>&, int);
template void gemm_batched_counting<float>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,
                                           const CountingMatrix<const float>&, const CountingMatrix<const float>&,
                                           const CountingMatrix<float>&, std::int64_t, int);
template void gemm_batched_counting<double>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,
                                            const CountingMatrix<const double>&,
                                            const CountingMatrix<const double>&, const CountingMatrix<double>&,
                                            std::int64_t, int);

}  // namespace tropical::cpu
