// The one check of a product or a backward pass (tropical/problem.hpp), for every backend.
#include "tropical/problem.hpp"

#include <string>

#include "spans.hpp"

namespace tropical {
namespace detail {
namespace {

Stored stored_shape(const Operand<const void>& x) { return {x.stored_rows(), x.stored_cols()}; }
Stored stored_shape(const Operand<void>& x) { return {x.stored_rows(), x.stored_cols()}; }

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

/// Rejects an operand whose shape is not rows x cols (a call built by hand with sizes that disagree).
template <class X>
void check_agrees(const char* name, const X& x, std::int64_t rows, std::int64_t cols) {
  if (x.rows != rows || x.cols != cols) {
    invalid(std::string(name) + " is " + shape_text(x.rows, x.cols) + " where the product needs " +
            shape_text(rows, cols));
  }
}

/// Rejects a transposed output: C, the argmax and dC are row-major as they are.
template <class X>
void check_plain(const char* name, const X& x) {
  if (x.trans != Trans::kNo) invalid(std::string(name) + " cannot be transposed");
}

void check_argmax_k(std::int64_t k) {
  if (k > 0x7fffffff) invalid("k = " + std::to_string(k) + " does not fit a 32-bit argmax");
}

void check_batch_count(std::int64_t batch) {
  if (batch < 0) invalid("negative batch " + std::to_string(batch));
}

}  // namespace

ProductSpans spans(const Product<void>& p, std::size_t elem_size) {
  ProductSpans s;
  if (p.k() > 0) {
    s.a = span("A", p.a.data, stored_shape(p.a), p.a.ld, p.a.stride, p.batch, elem_size);
    s.b = span("B", p.b.data, stored_shape(p.b), p.b.ld, p.b.stride, p.batch, elem_size);
  }
  s.c = span("C", p.c.data, {p.m(), p.n()}, p.c.ld, p.c.stride, p.batch, elem_size);
  if (p.argmax) {
    s.argmax = span("argmax", p.argmax->data, {p.m(), p.n()}, p.argmax->ld, p.argmax->stride, p.batch,
                    sizeof(std::int32_t));
  }
  return s;
}

GradientSpans spans(const Gradient<void>& g, std::size_t elem_size) {
  const bool wrt_a = g.wrt == Wrt::kA;
  const char* grad_name = wrt_a ? "grad_a" : "grad_b";
  GradientSpans r;
  r.grad = span(grad_name, g.grad.data, stored_shape(g.grad), g.grad.ld, g.grad.stride, g.batch, elem_size);
  if (g.m() > 0 && g.n() > 0) {
    const Stored gc{g.m(), g.n()};
    r.gc = span("grad_c", g.grad_c.data, gc, g.grad_c.ld, g.grad_c.stride, g.batch, elem_size);
    r.argmax = span("argmax", g.argmax.data, gc, g.argmax.ld, g.argmax.stride, g.batch, sizeof(std::int32_t));
    if (g.reads_operand) {
      r.other = span(wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)", g.operand.data,
                     stored_shape(g.operand), g.operand.ld, g.operand.stride, g.batch, elem_size);
    }
  }
  return r;
}


bool check_shapes(const Product<void>& p, std::size_t elem_size) {
  const std::int64_t m = p.m(), n = p.n(), k = p.k();
  check_sizes(p.a.trans, p.b.trans, m, n, k);
  check_agrees("A", p.a, m, k);
  check_agrees("B", p.b, k, n);
  check_plain("C", p.c);
  check_ld("lda", p.a.ld, stored_shape(p.a));
  check_ld("ldb", p.b.ld, stored_shape(p.b));
  check_ld("ldc", p.c.ld, {m, n});
  const std::int64_t ea = extent("A", stored_shape(p.a), p.a.ld, elem_size);
  const std::int64_t eb = extent("B", stored_shape(p.b), p.b.ld, elem_size);
  const std::int64_t ec = extent("C", {m, n}, p.c.ld, elem_size);
  std::int64_t ex = 0;
  if (p.argmax) {
    check_agrees("argmax", *p.argmax, m, n);
    check_plain("argmax", *p.argmax);
    check_argmax_k(k);
    check_ld("ldargmax", p.argmax->ld, {m, n});
    ex = extent("argmax", {m, n}, p.argmax->ld, sizeof(std::int32_t));
  }
  check_batch_count(p.batch);
  // A and B are not read when k = 0; the products of C (and of the argmax) must not overlap.
  check_batch("stride_a", p.a.stride, k > 0 ? ea : 0, p.batch, elem_size, false);
  check_batch("stride_b", p.b.stride, k > 0 ? eb : 0, p.batch, elem_size, false);
  check_batch("stride_c", p.c.stride, ec, p.batch, elem_size, true);
  if (p.argmax) check_batch("stride_argmax", p.argmax->stride, ex, p.batch, sizeof(std::int32_t), true);
  return m > 0 && n > 0 && p.batch > 0;
}

void check_operands(const Product<void>& p, std::size_t elem_size) {
  const std::int64_t k = p.k();
  // Null pointers first, and identical pointers named plainly, before any overlap test.
  const void* a = p.a.data;
  const void* b = p.b.data;
  const void* c = p.c.data;
  const void* x = p.argmax ? p.argmax->data : nullptr;
  if (p.argmax) check_non_null(x, "argmax");
  if (k > 0) {
    check_non_null(a, "A");
    check_non_null(b, "B");
  }
  check_non_null(c, "C");
  // Blocks write C while others still read A and B: no in-place products.
  if (k > 0 && (c == a || c == b)) invalid("C must not overlap A or B (write the product to another buffer)");
  if (x != nullptr && (x == c || (k > 0 && (x == a || x == b)))) invalid("argmax must not overlap A, B or C");
  // An element of C that is also one of A or B gives undefined results; blocks of one matrix that share
  // no element are fine.
  const ProductSpans s = spans(p, elem_size);
  for (const Span* in : {&s.a, &s.b}) {
    if (overlap(s.c, *in)) {
      invalid(std::string("C must not overlap A or B: C shares memory with ") + in->name +
              " (write the product to another buffer)");
    }
  }
  for (const Span* other : {&s.a, &s.b, &s.c}) {
    if (overlap(s.argmax, *other)) {
      invalid(std::string("argmax must not overlap A, B or C: it shares memory with ") + other->name);
    }
  }
}

bool check_shapes(const Gradient<void>& g, std::size_t elem_size) {
  const bool wrt_a = g.wrt == Wrt::kA;
  const std::int64_t m = g.m(), n = g.n(), k = g.k();
  // ta and tb: the transposes of A and B, whichever of them the gradient belongs to.
  check_sizes(wrt_a ? g.grad.trans : g.operand.trans, wrt_a ? g.operand.trans : g.grad.trans, m, n, k);
  check_agrees("argmax", g.argmax, m, n);
  check_agrees(wrt_a ? "grad_a" : "grad_b", g.grad, wrt_a ? m : k, wrt_a ? k : n);
  check_plain("grad_c", g.grad_c);
  check_plain("argmax", g.argmax);
  const Stored gc{m, n}, grad = stored_shape(g.grad), other = stored_shape(g.operand);
  check_ld("ldgc", g.grad_c.ld, gc);
  check_ld("ldargmax", g.argmax.ld, gc);
  check_ld(wrt_a ? "ldga" : "ldgb", g.grad.ld, grad);
  check_argmax_k(k);
  const std::int64_t grad_extent = extent(wrt_a ? "grad_a" : "grad_b", grad, g.grad.ld, elem_size);
  const std::int64_t gc_extent = extent("grad_c", gc, g.grad_c.ld, elem_size);
  const std::int64_t argmax_extent = extent("argmax", gc, g.argmax.ld, sizeof(std::int32_t));
  std::int64_t other_extent = 0;
  if (g.reads_operand) {
    check_agrees(wrt_a ? "B" : "A", g.operand, wrt_a ? k : m, wrt_a ? n : k);
    check_ld(wrt_a ? "ldb" : "lda", g.operand.ld, other);
    other_extent = extent(wrt_a ? "B" : "A", other, g.operand.ld, elem_size);
  }
  check_batch_count(g.batch);
  check_batch("stride_gc", g.grad_c.stride, gc_extent, g.batch, elem_size, false);
  check_batch("stride_argmax", g.argmax.stride, argmax_extent, g.batch, sizeof(std::int32_t), false);
  if (g.reads_operand) {
    check_batch(wrt_a ? "stride_b" : "stride_a", g.operand.stride, other_extent, g.batch, elem_size, false);
  }
  // Each owner of a row (column) writes one gradient: the gradients of a batch must not overlap.
  check_batch(wrt_a ? "stride_ga" : "stride_gb", g.grad.stride, grad_extent, g.batch, elem_size, true);
  return grad.rows > 0 && grad.cols > 0 && g.batch > 0;
}

void check_operands(const Gradient<void>& g, std::size_t elem_size) {
  const bool wrt_a = g.wrt == Wrt::kA;
  const std::int64_t m = g.m(), n = g.n();
  check_non_null(g.grad.data, wrt_a ? "grad_a" : "grad_b");
  if (m > 0 && n > 0) {
    check_non_null(g.grad_c.data, "grad_c");
    check_non_null(g.argmax.data, "argmax");
    if (g.reads_operand) {
      check_non_null(g.operand.data, wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)");
    }
  }
  // The gradient is zeroed, then summed into, while dC, the argmax and the operand are still read.
  const GradientSpans s = spans(g, elem_size);
  for (const Span* in : {&s.gc, &s.argmax, &s.other}) {
    if (overlap(s.grad, *in)) {
      invalid(std::string("the gradient must not overlap grad_c, argmax or the operand: ") + s.grad.name +
              " shares memory with " + in->name);
    }
  }
}

}  // namespace detail

bool check(const Product<void>& p, std::size_t elem_size) {
  if (!detail::check_shapes(p, elem_size)) return false;
  detail::check_operands(p, elem_size);
  return true;
}

bool check(const Gradient<void>& g, std::size_t elem_size) {
  if (!detail::check_shapes(g, elem_size)) return false;
  detail::check_operands(g, elem_size);
  return true;
}

}  // namespace tropical
