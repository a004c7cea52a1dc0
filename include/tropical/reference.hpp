#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tropical/catalog.hpp"
#include "tropical/semiring.hpp"

/// CPU reference of every operation, written independently of the GPU
/// templates: the oracle of the tests and of `tropical verify`.
///
/// Semantics shared with the kernels:
/// - Matrices are row-major; with Trans::kYes an operand is stored transposed
///   (op(A) is M x K, so a transposed A is stored K x M with lda >= M).
/// - Integers have no infinity: lowest()/max() play -inf/+inf; the
///   multiplication saturates to [lowest(), max()] and the semiring zero
///   absorbs (-inf + x = -inf in MaxPlus), so nothing overflows.
/// - NaN: the addition is IEEE fmax/fmin, which ignores a NaN operand, so a NaN
///   product (NaN input, or -inf + inf) never wins; an element of C with no
///   non-NaN product is the semiring zero and its argmax is -1.
/// - argmax: the k whose product wins, ties to the smallest k; -1 if no
///   product is strictly better than the semiring zero.
/// - backward: dA(i, k*) += dC(i, j) * d(a (x) b)/da with k* = argmax(i, j)
///   (the derivative is 1 for (+) semirings and b for MaxMul); dA is
///   overwritten, laid out like A (transposed if A is).
namespace tropical::reference {

/// The value of a semiring identity for element type T.
template <class T>
constexpr T identity_value(Identity id) {
  switch (id) {
    case Identity::kLowest:
      if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
      else return std::numeric_limits<T>::lowest();
    case Identity::kHighest:
      if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
      else return std::numeric_limits<T>::max();
    case Identity::kZero: return T(0);
    case Identity::kOne: return T(1);
  }
  return T(0);
}

/// The semiring zero (identity of the addition, absorbing for the multiplication).
template <Semiring S, Element T>
constexpr T zero() { return identity_value<T>(S::kZero); }

/// The semiring one (identity of the multiplication).
template <Semiring S, Element T>
constexpr T one() { return identity_value<T>(S::kOne); }

/// The semiring addition (max or min; IEEE fmax/fmin for floats).
template <Semiring S, Element T>
T add(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return S::kAdd == AddKind::kMax ? std::fmax(a, b) : std::fmin(a, b);
  } else {
    return S::kAdd == AddKind::kMax ? (a > b ? a : b) : (a < b ? a : b);
  }
}

/// True if product p beats the running winner acc (strictly; false for NaN).
template <Semiring S, Element T>
bool better(T p, T acc) {
  return S::kAdd == AddKind::kMax ? p > acc : p < acc;
}

/// The semiring multiplication; saturating, with an absorbing zero, for integers.
template <Semiring S, Element T>
T mul(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return S::kMul == MulKind::kAdd ? a + b : a * b;
  } else {
    constexpr T lo = std::numeric_limits<T>::lowest();
    constexpr T hi = std::numeric_limits<T>::max();
    T r{};
    if constexpr (S::kMul == MulKind::kAdd) {
      constexpr T z = zero<S, T>();
      if (a == z || b == z) return z;
      if (__builtin_add_overflow(a, b, &r)) return a < 0 ? lo : hi;
    } else {
      if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? lo : hi;
    }
    return r;
  }
}

/// C (m x n) = op(A) (x) op(B).
template <Semiring S, Element T>
void gemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc);

/// C = op(A) (x) op(B) and the winning k of every element (see above).
template <Semiring S, Element T>
void gemm_argmax(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                 std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
                 std::int32_t* argmax, std::int64_t ldargmax);

/// dA (laid out like A) from dC (m x n) and the argmax; b is read for MaxMul only.
template <Semiring S, Element T>
void backward_a(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* b, std::int64_t ldb, T* grad_a, std::int64_t ldga);

/// dB (laid out like B) from dC (m x n) and the argmax; a is read for MaxMul only.
template <Semiring S, Element T>
void backward_b(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                std::int64_t ldargmax, const T* a, std::int64_t lda, T* grad_b, std::int64_t ldgb);

/// C[p] = op(A[p]) (x) op(B[p]) for p < batch, operand p at base + p * stride.
template <Semiring S, Element T>
void gemm_batched(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                  std::int64_t stride_b, T* c, std::int64_t ldc, std::int64_t stride_c,
                  std::int64_t batch);

}  // namespace tropical::reference
