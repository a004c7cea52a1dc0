#include "tropical/reference.hpp"

namespace tropical::reference {
namespace {

/// Element (row, col) of op(X) where X is stored row-major with leading dimension ld.
template <class T>
T& at(T* p, std::int64_t ld, Trans t, std::int64_t row, std::int64_t col) {
  return t == Trans::kYes ? p[col * ld + row] : p[row * ld + col];
}

}  // namespace

template <Semiring S, Element T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      T acc = zero<S, T>();
      for (std::int64_t p = 0; p < k; ++p) {
        acc = add<S, T>(acc, mul<S, T>(at(a, lda, ta, i, p), at(b, ldb, tb, p, j)));
      }
      c[i * ldc + j] = acc;
    }
  }
}

template <Semiring S, Element T>
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

template <Semiring S, Element T>
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

template <Semiring S, Element T>
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

template <Semiring S, Element T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch) {
  for (std::int64_t p = 0; p < batch; ++p) {
    gemm<S, T>(ta, tb, m, n, k, a + p * stride_a, lda, b + p * stride_b, ldb, c + p * stride_c, ldc);
  }
}

// Every semiring x type is instantiated here, so the reference is compiled
// into the library once (backward passes for every type too: the CPU side
// costs nothing and keeps the tests uniform).
#define TROPICAL_INSTANTIATE(S, T)                                                               \
  template void gemm<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t, const T*,     \
                           std::int64_t, const T*, std::int64_t, T*, std::int64_t);              \
  template void gemm_argmax<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,        \
                                  const T*, std::int64_t, const T*, std::int64_t, T*,            \
                                  std::int64_t, std::int32_t*, std::int64_t);                    \
  template void backward_a<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,         \
                                 const T*, std::int64_t, const std::int32_t*, std::int64_t,      \
                                 const T*, std::int64_t, T*, std::int64_t);                      \
  template void backward_b<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,         \
                                 const T*, std::int64_t, const std::int32_t*, std::int64_t,      \
                                 const T*, std::int64_t, T*, std::int64_t);                      \
  template void gemm_batched<S, T>(Trans, Trans, std::int64_t, std::int64_t, std::int64_t,       \
                                   const T*, std::int64_t, std::int64_t, const T*, std::int64_t, \
                                   std::int64_t, T*, std::int64_t, std::int64_t, std::int64_t);

#define TROPICAL_INSTANTIATE_TYPES(S)   \
  TROPICAL_INSTANTIATE(S, float)        \
  TROPICAL_INSTANTIATE(S, double)       \
  TROPICAL_INSTANTIATE(S, std::int32_t) \
  TROPICAL_INSTANTIATE(S, std::int64_t)

TROPICAL_INSTANTIATE_TYPES(MaxPlus)
TROPICAL_INSTANTIATE_TYPES(MinPlus)
TROPICAL_INSTANTIATE_TYPES(MaxMul)

#undef TROPICAL_INSTANTIATE_TYPES
#undef TROPICAL_INSTANTIATE

}  // namespace tropical::reference
