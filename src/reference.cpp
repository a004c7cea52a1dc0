#include "tropical/reference.hpp"

namespace tropical::reference {
namespace {

/// Element (row, col) of op(X) where X is stored row-major with leading dimension ld.
template <class T>
T& at(T* p, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? p[col * ld + row] : p[row * ld + col];
}

}  // namespace

template <class S, class T>
  requires SupportedPair<S, T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  const bool scale = alpha != one<S, T>(), read_c = beta != zero<S, T>(), scale_c = beta != one<S, T>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T acc = zero<S, T>();
      for (std::int64_t p = 0; p < k; ++p) {
        acc = add<S, T>(acc, mul<S, T>(at(a, lda, ta, i, p), at(b, ldb, tb, p, j)));
      }
      if (scale) acc = mul<S, T>(alpha, acc);
      if (read_c) {
        const T old = c[i * ldc + j];
        acc = add<S, T>(acc, scale_c ? mul<S, T>(beta, old) : old);
      }
      c[i * ldc + j] = acc;
    }
  }
}

template <class S, class T>
  requires SupportedPair<S, T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  gemm<S, T>(ta, tb, m, n, k, one<S, T>(), a, lda, b, ldb, zero<S, T>(), c, ldc);
}

template <class S, class T>
  requires SupportedPair<S, T>
void gemm_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                 std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                 std::int32_t* argmax, std::int64_t ldargmax) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T acc = zero<S, T>();
      std::int32_t best = -1;
      for (std::int64_t p = 0; p < k; ++p) {
        const T prod = mul<S, T>(at(a, lda, ta, i, p), at(b, ldb, tb, p, j));
        if (better<S, T>(prod, acc)) {
          acc = prod;
          best = static_cast<std::int32_t>(p);
        }
      }
      c[i * ldc + j] = acc;
      argmax[i * ldargmax + j] = best;
    }
  }
}

template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void backward_a(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* b, std::int64_t ldb, T* grad_a, std::int64_t ldga) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) at(grad_a, ldga, ta, i, p) = T(0);
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int32_t p = argmax[i * ldargmax + j];
      if (p < 0 || p >= k) continue;
      T g = grad_c[i * ldgc + j];
      if constexpr (S::kMul == MulKind::kMul) g *= at(b, ldb, tb, p, j);
      at(grad_a, ldga, ta, i, p) += g;
    }
  }
}

template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void backward_b(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* a, std::int64_t lda, T* grad_b, std::int64_t ldgb) {
  for (std::int64_t p = 0; p < k; ++p) {
    for (std::int64_t j = 0; j < n; ++j) at(grad_b, ldgb, tb, p, j) = T(0);
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int32_t p = argmax[i * ldargmax + j];
      if (p < 0 || p >= k) continue;
      T g = grad_c[i * ldgc + j];
      if constexpr (S::kMul == MulKind::kMul) g *= at(a, lda, ta, i, p);
      at(grad_b, ldgb, tb, p, j) += g;
    }
  }
}

template <class S, class T>
  requires SupportedPair<S, T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                  const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    gemm<S, T>(ta, tb, m, n, k, alpha, a + p * stride_a, lda, b + p * stride_b, ldb, beta, c + p * stride_c, ldc);
  }
}

template <class S, class T>
  requires SupportedPair<S, T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch) {
  gemm_batched<S, T>(ta, tb, m, n, k, one<S, T>(), a, lda, stride_a, b, ldb, stride_b, zero<S, T>(), c, ldc,
                     stride_c, batch);
}

template <class S, class T>
  requires SupportedPair<S, T>
void gemm_batched_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                         std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                         std::int32_t* argmax, std::int64_t ldargmax, std::int64_t stride_argmax,
                         std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    gemm_argmax<S, T>(ta, tb, m, n, k, a + p * stride_a, lda, b + p * stride_b, ldb, c + p * stride_c, ldc,
                      argmax + p * stride_argmax, ldargmax);
  }
}

template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void backward_a_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        const T* grad_c, std::int64_t ldgc, std::int64_t stride_gc,
                        const std::int32_t* argmax, std::int64_t ldargmax, std::int64_t stride_argmax,
                        const T* b, std::int64_t ldb, std::int64_t stride_b, T* grad_a, std::int64_t ldga,
                        std::int64_t stride_ga, std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    backward_a<S, T>(ta, tb, m, n, k, grad_c + p * stride_gc, ldgc, argmax + p * stride_argmax, ldargmax,
                     b == nullptr ? nullptr : b + p * stride_b, ldb, grad_a + p * stride_ga, ldga);
  }
}

template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void backward_b_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        const T* grad_c, std::int64_t ldgc, std::int64_t stride_gc,
                        const std::int32_t* argmax, std::int64_t ldargmax, std::int64_t stride_argmax,
                        const T* a, std::int64_t lda, std::int64_t stride_a, T* grad_b, std::int64_t ldgb,
                        std::int64_t stride_gb, std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    backward_b<S, T>(ta, tb, m, n, k, grad_c + p * stride_gc, ldgc, argmax + p * stride_argmax, ldargmax,
                     a == nullptr ? nullptr : a + p * stride_a, lda, grad_b + p * stride_gb, ldgb);
  }
}

// Every semiring x type of the catalog is instantiated here, so the reference
// is compiled into the library once (backward passes for every type of the
// differentiable semirings: the CPU side costs nothing and keeps tests uniform).
#define TROPICAL_INSTANTIATE_PRODUCTS(S, T)                                                             \
  template void gemm<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,            \
                           std::int64_t, const T*, std::int64_t, T*, std::int64_t);                     \
  template void gemm<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, T, const T*,         \
                           std::int64_t, const T*, std::int64_t, T, T*, std::int64_t);                  \
  template void gemm_argmax<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,     \
                                  std::int64_t, const T*, std::int64_t, T*, std::int64_t,               \
                                  std::int32_t*, std::int64_t);                                         \
  template void gemm_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,    \
                                   std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t,    \
                                   T*, std::int64_t, std::int64_t, std::int64_t);                       \
  template void gemm_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, T,           \
                                   const T*, std::int64_t, std::int64_t, const T*, std::int64_t,        \
                                   std::int64_t, T, T*, std::int64_t, std::int64_t, std::int64_t);      \
  template void gemm_batched_argmax<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,       \
                                          const T*, std::int64_t, std::int64_t, const T*, std::int64_t, \
                                          std::int64_t, T*, std::int64_t, std::int64_t, std::int32_t*,  \
                                          std::int64_t, std::int64_t, std::int64_t);

#define TROPICAL_INSTANTIATE_BACKWARD(S, T)                                                            \
  template void backward_a<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,     \
                                 std::int64_t, const std::int32_t*, std::int64_t, const T*,            \
                                 std::int64_t, T*, std::int64_t);                                      \
  template void backward_b<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,     \
                                 std::int64_t, const std::int32_t*, std::int64_t, const T*,            \
                                 std::int64_t, T*, std::int64_t);                                      \
  template void backward_a_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,       \
                                         const T*, std::int64_t, std::int64_t, const std::int32_t*,    \
                                         std::int64_t, std::int64_t, const T*, std::int64_t,           \
                                         std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t);  \
  template void backward_b_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,       \
                                         const T*, std::int64_t, std::int64_t, const std::int32_t*,    \
                                         std::int64_t, std::int64_t, const T*, std::int64_t,           \
                                         std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t);

#define TROPICAL_INSTANTIATE_NUMBERS(S, MACRO) \
  MACRO(S, float)                              \
  MACRO(S, double)                             \
  MACRO(S, std::int32_t)                       \
  MACRO(S, std::int64_t)                       \
  MACRO(S, std::int16_t)

TROPICAL_INSTANTIATE_NUMBERS(MaxPlus, TROPICAL_INSTANTIATE_PRODUCTS)
TROPICAL_INSTANTIATE_NUMBERS(MinPlus, TROPICAL_INSTANTIATE_PRODUCTS)
TROPICAL_INSTANTIATE_NUMBERS(MaxMul, TROPICAL_INSTANTIATE_PRODUCTS)
TROPICAL_INSTANTIATE_NUMBERS(MaxMin, TROPICAL_INSTANTIATE_PRODUCTS)
TROPICAL_INSTANTIATE_NUMBERS(MinMax, TROPICAL_INSTANTIATE_PRODUCTS)
TROPICAL_INSTANTIATE_PRODUCTS(AndOr, std::uint8_t)
TROPICAL_INSTANTIATE_NUMBERS(MaxPlus, TROPICAL_INSTANTIATE_BACKWARD)
TROPICAL_INSTANTIATE_NUMBERS(MinPlus, TROPICAL_INSTANTIATE_BACKWARD)
TROPICAL_INSTANTIATE_NUMBERS(MaxMul, TROPICAL_INSTANTIATE_BACKWARD)

#undef TROPICAL_INSTANTIATE_NUMBERS
#undef TROPICAL_INSTANTIATE_BACKWARD
#undef TROPICAL_INSTANTIATE_PRODUCTS

}  // namespace tropical::reference
