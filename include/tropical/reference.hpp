#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tropical/catalog.hpp"
#include "tropical/problem.hpp"
#include "tropical/semiring.hpp"

/// CPU reference of every operation, written independently of the GPU
/// templates: the oracle of the tests and of `tropical verify`.
///
/// Semantics shared with the kernels:
/// - Matrices are row-major; with Trans::kYes an operand is stored transposed
///   (op(A) is M x K, so a transposed A is stored K x M with lda >= M).
/// - Integers have no infinity: lowest()/max() play -inf/+inf; the
///   multiplication saturates to [lowest(), max()] and the semiring zero
///   absorbs (-inf + x = -inf in MaxPlus), so nothing overflows. MaxMin and
///   MinMax need neither: min and max are exact.
/// - NaN: the addition is IEEE fmax/fmin, which ignores a NaN operand, so a NaN
///   product (NaN input, -inf + inf, 0 * inf, or a NaN operand of MaxMin's
///   and MinMax's NaN-propagating min/max) never wins; an element of C with
///   no non-NaN product is the semiring zero and its argmax is -1. A NaN that
///   reaches C (a NaN input, or alpha/beta making one) has the bits its processor
///   gives: x86's default NaN has the sign bit set, NVIDIA's does not.
/// - AndOr works on bytes: any non-zero byte is true; every result is 0 or 1.
/// - argmax: the k whose product wins, ties to the smallest k; -1 if no
///   product is strictly better than the semiring zero (AndOr: the first k
///   with a(i, k) and b(k, j) both true; MaxMin/MinMax: the first k that
///   attains the bottleneck).
/// - alpha/beta: C = alpha (x) P (+) beta (x) C with P = op(A) (x) op(B);
///   alpha equal to the one is skipped (alpha (x) P = P), beta equal to the
///   zero overwrites C without reading it, beta equal to the one adds C as is.
/// - CountingTropical (tropical::CountingTropical; values and counts of one
///   float type, two arrays: CountingMatrix): (v1, c1) (x) (v2, c2) =
///   (v1 + v2, c1 * c2); (+) keeps the larger value with its count and adds
///   the counts of equal values (+0 equals -0); zero (-inf, 0), one (0, 1).
///   C(i, j)'s value is the fmax over k of a_v + b_v (a NaN sum, from a NaN
///   value or -inf + inf, never wins nor ties); its count is the sum, in
///   increasing k from +0, of a_c * b_c over the k whose sum equals that
///   value, each term added with one rounding (fma(a_c, b_c, count)): the
///   semiring's sum taken in k order. Counts are exact while they are integers
///   below 2^24 (float) or 2^53 (double); past that they round, and past the
///   type's range they become inf. -inf is a value like any other: products of
///   value -inf tie, so a value -inf with non-zero counts keeps its count
///   (the zero's count is 0). There is no alpha/beta: C is overwritten.
/// - backward (MaxPlus, MinPlus, MaxMul): dA(i, k*) += dC(i, j) *
///   d(a (x) b)/da with k* = argmax(i, j) (the derivative is 1 for (+)
///   semirings and b for MaxMul); dA is overwritten, laid out like A
///   (transposed if A is); each element sums its terms in increasing j (dA)
///   or i (dB), starting from 0. MaxMin, MinMax and AndOr have no backward.
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

/// True if the catalog has semiring S over element type T (a concept, so a
/// missing pair does not compile).
template <class S, class T>
concept SupportedPair = Semiring<S> && Element<T> && kSupported<S, T>;

/// True if S has a backward pass (its product is + or *).
template <class S>
concept Differentiable = Semiring<S> && (S::kMul == MulKind::kAdd || S::kMul == MulKind::kMul);

/// The semiring zero (identity of the addition, absorbing for the multiplication).
template <class S, class T>
  requires SupportedPair<S, T>
constexpr T zero() { return identity_value<T>(S::kZero); }

/// The semiring one (identity of the multiplication).
template <class S, class T>
  requires SupportedPair<S, T>
constexpr T one() { return identity_value<T>(S::kOne); }

/// The semiring addition (max or min, IEEE fmax/fmin for floats; logical or, 0 or 1).
template <class S, class T>
  requires SupportedPair<S, T>
T add(T a, T b) {
  if constexpr (S::kAdd == AddKind::kOr) {
    return static_cast<T>(a != 0 || b != 0);
  } else if constexpr (std::is_floating_point_v<T>) {
    return S::kAdd == AddKind::kMax ? std::fmax(a, b) : std::fmin(a, b);
  } else {
    return S::kAdd == AddKind::kMax ? (a > b ? a : b) : (a < b ? a : b);
  }
}

/// True if product p beats the running winner acc (strictly; false for NaN).
template <class S, class T>
  requires SupportedPair<S, T>
bool better(T p, T acc) {
  return S::kAdd == AddKind::kMin ? p < acc : p > acc;
}

/// The semiring multiplication: saturating with an absorbing zero for
/// integer sums and products, NaN-propagating min/max, logical and (0 or 1).
template <class S, class T>
  requires SupportedPair<S, T>
T mul(T a, T b) {
  if constexpr (S::kMul == MulKind::kAnd) {
    return static_cast<T>(a != 0 && b != 0);
  } else if constexpr (S::kMul == MulKind::kMin || S::kMul == MulKind::kMax) {
    const bool take_a = S::kMul == MulKind::kMin ? a < b : a > b;
    if constexpr (std::is_floating_point_v<T>) {
      return std::isnan(a) || take_a ? a : b;
    } else {
      return take_a ? a : b;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    return S::kMul == MulKind::kAdd ? a + b : a * b;
  } else {
    constexpr T lo = std::numeric_limits<T>::lowest();
    constexpr T hi = std::numeric_limits<T>::max();
    T r{};
    if constexpr (S::kMul == MulKind::kAdd) {
      constexpr T z = identity_value<T>(S::kZero);
      if (a == z || b == z) return z;
      if (__builtin_add_overflow(a, b, &r)) return a < 0 ? lo : hi;
    } else {
      if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? lo : hi;
    }
    return r;
  }
}

/// The Scaling of alpha and beta for semiring S: the one as alpha and the zero
/// as beta need nothing (C = P, C not read); beta = the one adds C as it is.
template <class S, class T>
  requires SupportedPair<S, T>
Scaling<T> scaling(const T& alpha, const T& beta) {
  return {&alpha, &beta, alpha != one<S, T>(), beta != zero<S, T>(), beta != one<S, T>()};
}

/// Computes p (see above; no argument is checked: the oracle takes what it is given).
template <class S, class T>
  requires SupportedPair<S, T>
void product(const Product<T>& p);

/// Computes g (see above; no argument is checked).
template <class S, class T>
  requires SupportedPair<S, T> && Differentiable<S>
void gradient(const Gradient<T>& g);

/// C (m x n) = op(A) (x) op(B) over CountingTropical (values and counts
/// overwritten; the strides are not read).
template <CountingElement T>
void gemm_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c);

/// gemm_counting of every product of a batch: matrix p of each array at its
/// base + p * its stride.
template <CountingElement T>
void gemm_batched_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                           const CountingMatrix<const T>& a, const CountingMatrix<const T>& b,
                           const CountingMatrix<T>& c, std::int64_t batch);

}  // namespace tropical::reference

// gemm, gemm_argmax, backward_a, backward_b and their batched forms: generated from codegen/operations.py.
#include "tropical/detail/reference_face.hpp"
