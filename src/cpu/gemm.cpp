#include "tropical/cpu/gemm.hpp"

#include <string>

#include "../checks.hpp"
#include "driver.hpp"
#include "pool.hpp"

namespace tropical::cpu {
namespace detail {

ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

namespace {

using tropical::detail::check_argmax;
using tropical::detail::check_batch;
using tropical::detail::check_non_null;
using tropical::detail::Strides;
using tropical::detail::check_product;
using tropical::detail::Extents;
using tropical::detail::invalid;
using Shape = tropical::detail::Problem;

/// The reference's alpha/beta flags: the one as alpha and the zero as beta need nothing.
template <class S, class T>
void set_scaling(Product<T>& p, T alpha, T beta) {
  p.alpha = alpha;
  p.beta = beta;
  p.scale = alpha != reference::one<S, T>();
  p.read_c = beta != reference::zero<S, T>();
  p.scale_c = beta != reference::one<S, T>();
}

/// Checks a (batched) product's arguments as the GPU launcher does; false if there is nothing to compute.
template <class T>
bool check_batched(const Product<T>& p, bool with_argmax = false) {
  const Shape shape{p.ta, p.tb, p.m, p.n, p.k, p.lda, p.ldb, p.ldc};
  const Extents e = check_product(shape, sizeof(T));
  const std::int64_t argmax_extent = with_argmax ? check_argmax(shape, p.ldargmax) : 0;
  if (p.batch < 0) invalid("negative batch " + std::to_string(p.batch));
  check_batch("stride_a", p.stride_a, p.k > 0 ? e.a : 0, p.batch, sizeof(T), false);
  check_batch("stride_b", p.stride_b, p.k > 0 ? e.b : 0, p.batch, sizeof(T), false);
  check_batch("stride_c", p.stride_c, e.c, p.batch, sizeof(T), true);
  if (with_argmax) check_batch("stride_argmax", p.stride_argmax, argmax_extent, p.batch, sizeof(std::int32_t), true);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return false;
  if (with_argmax) check_non_null(p.argmax, "argmax");
  // As the GPU launcher: an output sharing any element with an input is refused.
  tropical::detail::product_spans(shape, Strides{p.stride_a, p.stride_b, p.stride_c, p.stride_argmax}, p.batch,
                                  sizeof(T), p.a, p.b, p.c, p.argmax, p.ldargmax);
  return true;
}

}  // namespace
}  // namespace detail

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc, int threads) {
  const int nt = detail::threads_for(threads);
  detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc};
  detail::set_scaling<S, T>(p, alpha, beta);
  if (detail::check_batched(p)) detail::run_product<S, T>(p, nt);
}

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
          const T* b, std::int64_t ldb, T* c, std::int64_t ldc, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc};
  if (detail::check_batched(p)) detail::run_product<S, T>(p, nt);
}

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                 std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, std::int32_t* argmax,
                 std::int64_t ldargmax, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc, argmax, ldargmax};
  if (detail::check_batched(p, true)) detail::run_product<S, T>(p, nt);
}

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b,
                  T* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, int threads) {
  const int nt = detail::threads_for(threads);
  detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc};
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = stride_c;
  p.batch = batch;
  if (detail::check_batched(p)) detail::run_product<S, T>(p, nt);
}

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b,
                  T beta, T* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, int threads) {
  const int nt = detail::threads_for(threads);
  detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc};
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = stride_c;
  p.batch = batch;
  detail::set_scaling<S, T>(p, alpha, beta);
  if (detail::check_batched(p)) detail::run_product<S, T>(p, nt);
}

template <Semiring S, Element T>
  requires Supported<S, T>
void gemm_batched_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                         std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                         std::int32_t* argmax, std::int64_t ldargmax, std::int64_t stride_argmax,
                         std::int64_t batch, int threads) {
  const int nt = detail::threads_for(threads);
  const detail::Product<T> p{ta, tb, m, n, k, a, lda, b, ldb, c, ldc, argmax, ldargmax,
                             stride_a, stride_b, stride_c, stride_argmax, batch};
  if (detail::check_batched(p, true)) detail::run_product<S, T>(p, nt);
}

#define TROPICAL_CPU_PRODUCTS(S, T)                                                                           \
  template void gemm<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t,    \
                           const T*, std::int64_t, T*, std::int64_t, int);                                    \
  template void gemm<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t, \
                           const T*, std::int64_t, T, T*, std::int64_t, int);                                 \
  template void gemm_argmax<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,           \
                                  std::int64_t, const T*, std::int64_t, T*, std::int64_t, std::int32_t*,      \
                                  std::int64_t, int);                                                         \
  template void gemm_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,          \
                                   std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, T*,      \
                                   std::int64_t, std::int64_t, std::int64_t, int);                            \
  template void gemm_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, T, const T*,       \
                                   std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, T, T*,   \
                                   std::int64_t, std::int64_t, std::int64_t, int);                            \
  template void gemm_batched_argmax<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,   \
                                          std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t,   \
                                          T*, std::int64_t, std::int64_t, std::int32_t*, std::int64_t,        \
                                          std::int64_t, std::int64_t, int);

#define TROPICAL_CPU_NUMBERS(S) \
  TROPICAL_CPU_PRODUCTS(S, float) \
  TROPICAL_CPU_PRODUCTS(S, double) \
  TROPICAL_CPU_PRODUCTS(S, std::int32_t) \
  TROPICAL_CPU_PRODUCTS(S, std::int64_t) \
  TROPICAL_CPU_PRODUCTS(S, std::int16_t)

TROPICAL_CPU_NUMBERS(MaxPlus)
TROPICAL_CPU_NUMBERS(MinPlus)
TROPICAL_CPU_NUMBERS(MaxMul)
TROPICAL_CPU_NUMBERS(MaxMin)
TROPICAL_CPU_NUMBERS(MinMax)
TROPICAL_CPU_PRODUCTS(AndOr, std::uint8_t)

#undef TROPICAL_CPU_NUMBERS
#undef TROPICAL_CPU_PRODUCTS

}  // namespace tropical::cpu
