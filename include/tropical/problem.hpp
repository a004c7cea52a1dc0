#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "tropical/semiring.hpp"

/// One call of a product or a backward pass, as every backend sees it (the GPU
/// launchers, the CPU backend and the reference): operands with their shape,
/// leading dimension, transpose and batch stride, alpha and beta, and one check()
/// of them all. No backend's header is needed to build or check one; the
/// BLAS-style functions of gemm.hpp, cpu/gemm.hpp and reference.hpp build one
/// and hand it on.
///
/// Conventions (those of tropical::gemm): row-major; an operand op(X) of rows x
/// cols is X itself, or X stored transposed (cols x rows) when trans is kYes; ld
/// counts elements between rows of X as stored; matrix p of a batch starts p *
/// stride elements after the first.
namespace tropical {

/// A matrix operand op(X) (rows x cols) of elements T at data.
template <class T>
struct Operand {
  T* data = nullptr;
  std::int64_t rows = 0, cols = 0;  ///< of op(X), not of X as stored
  std::int64_t ld = 0;              ///< elements between rows of X as stored
  Trans trans = Trans::kNo;
  std::int64_t stride = 0;  ///< elements between matrices of a batch

  Operand() = default;
  Operand(T* data_, std::int64_t rows_, std::int64_t cols_, std::int64_t ld_, Trans trans_ = Trans::kNo,
          std::int64_t stride_ = 0)
      : data(data_), rows(rows_), cols(cols_), ld(ld_), trans(trans_), stride(stride_) {}

  /// Rows of X as stored (cols when transposed).
  std::int64_t stored_rows() const { return trans == Trans::kYes ? cols : rows; }
  /// Columns of X as stored (rows when transposed).
  std::int64_t stored_cols() const { return trans == Trans::kYes ? rows : cols; }
  /// Element (r, c) of op(X) in matrix q of the batch; no bounds check.
  decltype(auto) at(std::int64_t r, std::int64_t c, std::int64_t q = 0) const
    requires(!std::is_void_v<T>)
  {
    return (data[q * stride + (trans == Trans::kYes ? c * ld + r : r * ld + c)]);
  }
};

/// alpha and beta of C = alpha (x) P (+) beta (x) C, and which of them a product
/// needs (reference::scaling makes one for a semiring): none of them is C = P, C not read.
template <class T>
struct Scaling {
  const T* alpha = nullptr;  ///< read if apply_alpha
  const T* beta = nullptr;   ///< read if apply_beta
  bool apply_alpha = false, read_c = false, apply_beta = false;
};

/// C = alpha (x) (op(A) (x) op(B)) (+) beta (x) C for each of `batch`
/// products, with the winning k of every element when argmax is given: A is
/// m x k, B k x n, C and the argmax m x n (their trans is kNo).
template <class T>
struct Product {
  Operand<const T> a, b;
  Operand<T> c;
  std::optional<Operand<std::int32_t>> argmax;
  Scaling<T> scaling;
  std::int64_t batch = 1;

  Product(Operand<const T> a_, Operand<const T> b_, Operand<T> c_, std::optional<Operand<std::int32_t>> argmax_ = {},
          Scaling<T> scaling_ = {}, std::int64_t batch_ = 1)
      : a(a_), b(b_), c(c_), argmax(argmax_), scaling(scaling_), batch(batch_) {}

  std::int64_t m() const { return c.rows; }
  std::int64_t n() const { return c.cols; }
  std::int64_t k() const { return a.cols; }
};

/// Which operand a gradient belongs to.
enum class Wrt : std::uint8_t { kA, kB };

/// dA (laid out like A) or dB (like B) of `batch` products C = op(A) (x) op(B)
/// from dC and the argmax (both m x n) of the forward product; `operand` is
/// the other one (B for dA, A for dB), read only when reads_operand (MaxMul).
template <class T>
struct Gradient {
  Wrt wrt = Wrt::kA;
  Operand<const T> grad_c;
  Operand<const std::int32_t> argmax;
  Operand<const T> operand;
  bool reads_operand = false;
  Operand<T> grad;
  std::int64_t batch = 1;

  Gradient(Wrt wrt_, Operand<const T> grad_c_, Operand<const std::int32_t> argmax_, Operand<const T> operand_,
           bool reads_operand_, Operand<T> grad_, std::int64_t batch_ = 1)
      : wrt(wrt_), grad_c(grad_c_), argmax(argmax_), operand(operand_), reads_operand(reads_operand_), grad(grad_),
        batch(batch_) {}

  std::int64_t m() const { return grad_c.rows; }
  std::int64_t n() const { return grad_c.cols; }
  std::int64_t k() const { return wrt == Wrt::kA ? grad.cols : grad.rows; }
};

/// The operand with its element type erased (its size goes along to check()).
template <class T>
Operand<std::conditional_t<std::is_const_v<T>, const void, void>> erased(const Operand<T>& x) {
  return {x.data, x.rows, x.cols, x.ld, x.trans, x.stride};
}

/// The product with its element type erased, for code compiled once for every type.
template <class T>
Product<void> erased(const Product<T>& p) {
  const Scaling<T>& s = p.scaling;
  return {erased(p.a), erased(p.b), erased(p.c), p.argmax,
          Scaling<void>{s.alpha, s.beta, s.apply_alpha, s.read_c, s.apply_beta}, p.batch};
}

/// The gradient with its element type erased.
template <class T>
Gradient<void> erased(const Gradient<T>& g) {
  return {g.wrt, erased(g.grad_c), g.argmax, erased(g.operand), g.reads_operand, erased(g.grad), g.batch};
}

/// Checks every argument of a product of elements of elem_size bytes: shapes
/// that agree and are not negative, leading dimensions, batch and strides (C's
/// and the argmax's must keep products apart), sizes and offsets within 64 bits,
/// k below 2^31 with an argmax, null pointers of a non-empty call, and an output
/// sharing a byte with an input (or the argmax with C). Throws InvalidArgument
/// naming the argument; returns false if there is nothing to compute (m, n or
/// batch 0). Needs no GPU: a backend adds its own checks (device, allocation).
bool check(const Product<void>& p, std::size_t elem_size);

/// Checks a backward pass as check(Product) does (the gradient must share no
/// byte with dC, the argmax or the operand it reads); false if the gradient is empty.
bool check(const Gradient<void>& g, std::size_t elem_size);

/// check() of a typed product.
template <class T>
bool check(const Product<T>& p) {
  return check(erased(p), sizeof(T));
}

/// check() of a typed gradient.
template <class T>
bool check(const Gradient<T>& g) {
  return check(erased(g), sizeof(T));
}

}  // namespace tropical
