#include "checks.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace {

// Sums of up to four spans' worth of byte offsets (each below 2^63) need more than 64 bits.
__extension__ using Wide = __int128;

std::string hex(std::uintptr_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, address);
  return text;
}

/// How a span's bytes come about, for messages: "3 rows, ld 8; a batch of 4, stride 16" (in elements).
std::string layout_of(const Span& s, std::size_t elem_size) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) about string + literal chains here.
  std::string text = std::to_string(s.rows);
  text.append(s.rows == 1 ? " row" : " rows");
  if (s.rows > 1) text.append(", ld ").append(std::to_string(s.ld / static_cast<std::int64_t>(elem_size)));
  if (s.batch > 1) {
    text.append("; a batch of ").append(std::to_string(s.batch));
    text.append(", stride ").append(std::to_string(s.elements_stride));
  }
  return text;
}

/// Whether some 0 <= x_k <= ub_k puts sum a_k * x_k within [lo, hi], for up to four terms a_k > 0: a
/// depth-first search, largest coefficient first, that prunes by the reachable range and by the gcd of the
/// coefficients left. Blocks of one matrix and separate buffers settle in a handful of steps; `work` bounds
/// the rest.
class BoundedSum {
 public:
  enum Result { kNone, kFound, kUnsettled };

  void add(Wide a, Wide ub) {
    if (a == 0 || ub == 0) return;
    for (int i = 0; i < n_; ++i) {
      if (a_[i] == a) {  // a*x + a*y with x <= u, y <= v is a*z with z <= u + v
        ub_[i] += ub;
        return;
      }
    }
    a_[n_] = a;
    ub_[n_] = ub;
    ++n_;
  }

  Result find(Wide lo, Wide hi) {
    // Largest coefficient first: the outer loops take the fewest steps.
    for (int i = 0; i < n_; ++i) {
      for (int j = i + 1; j < n_; ++j) {
        if (a_[j] > a_[i]) {
          std::swap(a_[i], a_[j]);
          std::swap(ub_[i], ub_[j]);
        }
      }
    }
    rest_[n_] = 0;
    gcd_[n_] = 0;
    for (int i = n_ - 1; i >= 0; --i) {
      rest_[i] = rest_[i + 1] + a_[i] * ub_[i];
      gcd_[i] = gcd(a_[i], gcd_[i + 1]);
    }
    return search(0, lo, hi);
  }

 private:
  static constexpr int kMaxTerms = 4;
  static constexpr long kWork = 4096;  // steps: some tens of microseconds at worst

  static Wide gcd(Wide a, Wide b) {
    while (b != 0) a = std::exchange(b, a % b);
    return a;
  }
  static Wide ceil_div(Wide x, Wide d) { return (x + d - 1) / d; }  // x >= 0, d > 0

  Result search(int k, Wide lo, Wide hi) {
    lo = std::max<Wide>(lo, 0);
    if (hi < lo || lo > rest_[k]) return kNone;
    if (k == n_) return kFound;  // lo == 0 here
    // What the terms from k on add up to is a multiple of their gcd.
    if (hi / gcd_[k] * gcd_[k] < lo) return kNone;
    const Wide a = a_[k];
    const Wide first = lo > rest_[k + 1] ? ceil_div(lo - rest_[k + 1], a) : 0;
    const Wide last = std::min(ub_[k], hi / a);
    if (k == n_ - 1) return first <= last ? kFound : kNone;
    for (Wide x = first; x <= last; ++x) {
      if (--work_ < 0) return kUnsettled;
      if (const Result r = search(k + 1, lo - a * x, hi - a * x); r != kNone) return r;
    }
    return kNone;
  }

  std::array<Wide, kMaxTerms> a_{}, ub_{};
  std::array<Wide, kMaxTerms + 1> rest_{}, gcd_{};
  int n_ = 0;
  long work_ = kWork;
};

}  // namespace

void invalid(const std::string& what) { throw InvalidArgument("tropical: " + what); }

Stored stored(Trans t, std::int64_t rows, std::int64_t cols) {
  return t == Trans::kYes ? Stored{cols, rows} : Stored{rows, cols};
}

void check_ld(const char* name, std::int64_t ld, Stored s) {
  if (ld < (s.cols > 1 ? s.cols : 1)) {
    invalid(std::string("leading dimension ") + name + " = " + std::to_string(ld) + " is below " +
            std::to_string(s.cols > 1 ? s.cols : 1));
  }
}

void check_shape(const Problem& p) {
  for (const auto& [t, name] : {std::pair{p.ta, "ta"}, std::pair{p.tb, "tb"}}) {
    if (t != Trans::kNo && t != Trans::kYes) {
      invalid(std::string(name) + " = Trans(" + std::to_string(static_cast<int>(t)) +
              ") is neither Trans::kNo nor Trans::kYes");
    }
  }
  if (p.m < 0 || p.n < 0 || p.k < 0) {
    invalid("negative size m = " + std::to_string(p.m) + ", n = " + std::to_string(p.n) +
            ", k = " + std::to_string(p.k));
  }
}

std::int64_t extent(const char* name, Stored s, std::int64_t ld, std::size_t elem_size) {
  if (s.rows == 0 || s.cols == 0) return 0;
  std::int64_t e = 0, bytes = 0;
  if (__builtin_mul_overflow(s.rows - 1, ld, &e) || __builtin_add_overflow(e, s.cols, &e) ||
      __builtin_mul_overflow(e, static_cast<std::int64_t>(elem_size), &bytes)) {
    invalid(std::string(name) + ": " + std::to_string(s.rows) + " rows with leading dimension " +
            std::to_string(ld) + " overflow 64 bits");
  }
  return e;
}

void check_batch(const char* name, std::int64_t stride, std::int64_t extent, std::int64_t batch,
                 std::size_t elem_size, bool disjoint) {
  if (stride < 0) invalid("negative " + std::string(name) + " = " + std::to_string(stride));
  if (batch <= 1 || extent == 0) return;
  if (disjoint && stride < extent) {
    invalid(std::string(name) + " = " + std::to_string(stride) + " makes the products of the batch overlap");
  }
  std::int64_t last = 0;
  if (__builtin_mul_overflow(batch - 1, stride, &last) || __builtin_add_overflow(last, extent, &last) ||
      __builtin_mul_overflow(last, static_cast<std::int64_t>(elem_size), &last)) {
    invalid(std::string(name) + " = " + std::to_string(stride) + " times a batch of " + std::to_string(batch) +
            " overflows 64 bits");
  }
}

void check_non_null(const void* ptr, const char* name) {
  if (ptr == nullptr) invalid(std::string(name) + " is null");
}

Span span(const char* name, const void* ptr, Stored s, std::int64_t ld, std::int64_t stride, std::int64_t batch,
          std::size_t elem_size) {
  Span r;
  r.name = name;
  r.start = reinterpret_cast<std::uintptr_t>(ptr);
  if (s.rows == 0 || s.cols == 0 || batch <= 0) return r;
  const auto size = static_cast<std::int64_t>(elem_size);
  r.batch = batch;
  r.rows = s.rows;
  r.elements_stride = batch > 1 ? stride : 0;
  // extent() and check_batch() bounded every product below; checked again here, as it costs nothing.
  std::int64_t rows_bytes = 0;
  if (__builtin_mul_overflow(r.elements_stride, size, &r.stride) ||
      __builtin_mul_overflow(s.rows > 1 ? ld : 0, size, &r.ld) || __builtin_mul_overflow(s.cols, size, &r.row) ||
      __builtin_mul_overflow(batch - 1, r.stride, &r.bytes) || __builtin_mul_overflow(s.rows - 1, r.ld, &rows_bytes) ||
      __builtin_add_overflow(r.bytes, rows_bytes, &r.bytes) || __builtin_add_overflow(r.bytes, r.row, &r.bytes)) {
    invalid(std::string(name) + ": " + layout_of(r, elem_size) + " overflow 64 bits");
  }
  if (r.start > std::numeric_limits<std::uintptr_t>::max() - static_cast<std::uint64_t>(r.bytes - 1)) {
    invalid(std::string(name) + " (" + layout_of(r, elem_size) + ") spans " + std::to_string(r.bytes) +
            " bytes from " + hex(r.start) + ", past the end of the address space");
  }
  return r;
}

bool overlap(const Span& x, const Span& y) {
  if (x.bytes == 0 || y.bytes == 0) return false;
  const Wide x_start = x.start, x_end = x_start + x.bytes, y_start = y.start, y_end = y_start + y.bytes;
  if (x_end <= y_start || y_end <= x_start) return false;
  // A byte of x is x_start + p * x.stride + i * x.ld + u (u < x.row); counted back from y's last byte, one of
  // y is y_end - 1 - (q * y.stride + j * y.ld + v) (v < y.row). They are the same byte when
  //   p x.stride + i x.ld + q y.stride + j y.ld + (u + v) = y_end - 1 - x_start,
  // where u + v takes every value from 0 to x.row + y.row - 2: a bounded sum that must hit a window.
  BoundedSum sum;
  sum.add(x.stride, x.batch - 1);
  sum.add(x.ld, x.rows - 1);
  sum.add(y.stride, y.batch - 1);
  sum.add(y.ld, y.rows - 1);
  const Wide target = y_end - 1 - x_start;
  return sum.find(target - (x.row + y.row - 2), target) == BoundedSum::kFound;
}

Placement placement_of(const void* ptr, const char* name) {
  if (ptr == nullptr) invalid(std::string(name) + " is null");
  const auto& api = jit::driver::api();
  // One driver call for all three: it is made for every operand of every product.
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned int memory_type = 0;  // 0: not CUDA memory (cuPointerGetAttributes then succeeds with zeros)
  int ordinal = -1;
  CUdeviceptr range_start = 0;
  std::size_t range_size = 0;
  void* data[] = {&memory_type, &ordinal, &range_start, &range_size};
  const CUresult r = api.cuPointerGetAttributes(4, attributes, data, reinterpret_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS || memory_type == 0 || ordinal < 0) {
    invalid(std::string(name) + " is not memory of a CUDA device (plain host memory?)");
  }
  return Placement{ordinal, static_cast<std::uintptr_t>(range_start), static_cast<std::uint64_t>(range_size)};
}

Extents check_product(const Problem& p, std::size_t elem_size) {
  check_shape(p);
  check_ld("lda", p.lda, stored(p.ta, p.m, p.k));
  check_ld("ldb", p.ldb, stored(p.tb, p.k, p.n));
  check_ld("ldc", p.ldc, {p.m, p.n});
  return {extent("A", stored(p.ta, p.m, p.k), p.lda, elem_size), extent("B", stored(p.tb, p.k, p.n), p.ldb, elem_size),
          extent("C", {p.m, p.n}, p.ldc, elem_size)};
}

void check_operands(const Problem& p, const void* a, const void* b, const void* c, const void* argmax) {
  if (p.k > 0) {
    check_non_null(a, "A");
    check_non_null(b, "B");
  }
  check_non_null(c, "C");
  // Blocks write C while others still read A and B: no in-place products.
  if (p.k > 0 && (c == a || c == b)) invalid("C must not overlap A or B (write the product to another buffer)");
  if (argmax != nullptr && (argmax == c || (p.k > 0 && (argmax == a || argmax == b)))) {
    invalid("argmax must not overlap A, B or C");
  }
}

ProductSpans product_spans(const Problem& p, const Strides& strides, std::int64_t batch, std::size_t elem_size,
                           const void* a, const void* b, const void* c, const std::int32_t* argmax,
                           std::int64_t ldargmax) {
  check_operands(p, a, b, c, argmax);  // nulls first; identical pointers named as before
  ProductSpans s;
  if (p.k > 0) {
    s.a = span("A", a, stored(p.ta, p.m, p.k), p.lda, strides.a, batch, elem_size);
    s.b = span("B", b, stored(p.tb, p.k, p.n), p.ldb, strides.b, batch, elem_size);
  }
  s.c = span("C", c, {p.m, p.n}, p.ldc, strides.c, batch, elem_size);
  if (argmax != nullptr) {
    s.argmax = span("argmax", argmax, {p.m, p.n}, ldargmax, strides.argmax, batch, sizeof(std::int32_t));
  }
  // Blocks write C while others still read A and B: an element of C that is also one of A or B gives
  // undefined results. Blocks of one matrix that share no element are fine.
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
  return s;
}

void add_operands(DeviceCheck& devices, const ProductSpans& s) {
  devices.add(s.a);
  devices.add(s.b);
  devices.add(s.c);
  devices.add(s.argmax);
}

std::int64_t check_argmax(const Problem& p, std::int64_t ldargmax) {
  if (p.k > 0x7fffffff) invalid("k = " + std::to_string(p.k) + " does not fit a 32-bit argmax");
  check_ld("ldargmax", ldargmax, {p.m, p.n});
  return extent("argmax", {p.m, p.n}, ldargmax, sizeof(std::int32_t));
}

BackwardShape check_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p, std::int64_t ldgc,
                             std::int64_t ldargmax, bool reads_operand, std::int64_t ld_operand,
                             std::int64_t ldgrad) {
  check_shape(p);
  const Op op = catalog::kInfo[static_cast<std::size_t>(id)].op;
  BackwardShape s{};
  s.wrt_a = op == Op::kBackwardA || op == Op::kBackwardABatched;
  // The gradient has the stored shape of the operand it belongs to; the other
  // operand (read for MaxMul only) has its own.
  s.grad = s.wrt_a ? stored(p.ta, p.m, p.k) : stored(p.tb, p.k, p.n);
  s.other = s.wrt_a ? stored(p.tb, p.k, p.n) : stored(p.ta, p.m, p.k);
  check_ld("ldgc", ldgc, {p.m, p.n});
  check_ld("ldargmax", ldargmax, {p.m, p.n});
  check_ld(s.wrt_a ? "ldga" : "ldgb", ldgrad, s.grad);
  if (p.k > 0x7fffffff) invalid("k = " + std::to_string(p.k) + " does not fit a 32-bit argmax");
  s.elem_size = elem_size;
  s.ldgc = ldgc;
  s.ldargmax = ldargmax;
  s.ld_operand = ld_operand;
  s.ldgrad = ldgrad;
  s.grad_extent = extent(s.wrt_a ? "grad_a" : "grad_b", s.grad, ldgrad, elem_size);
  s.gc = {p.m, p.n};
  s.gc_extent = extent("grad_c", {p.m, p.n}, ldgc, elem_size);
  s.argmax_extent = extent("argmax", {p.m, p.n}, ldargmax, sizeof(std::int32_t));
  if (reads_operand) {
    check_ld(s.wrt_a ? "ldb" : "lda", ld_operand, s.other);
    s.other_extent = extent(s.wrt_a ? "B" : "A", s.other, ld_operand, elem_size);
  }
  return s;
}

BackwardSpans backward_spans(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                             bool reads_operand, const void* operand, const void* grad, const Strides& strides,
                             std::int64_t batch) {
  const char* grad_name = s.wrt_a ? "grad_a" : "grad_b";
  const char* operand_name = s.wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)";
  check_non_null(grad, grad_name);
  BackwardSpans r;
  r.grad = span(grad_name, grad, s.grad, s.ldgrad, strides.c, batch, s.elem_size);
  if (reads_c) {
    check_non_null(grad_c, "grad_c");
    check_non_null(argmax, "argmax");
    if (reads_operand) check_non_null(operand, operand_name);
    r.gc = span("grad_c", grad_c, s.gc, s.ldgc, strides.a, batch, s.elem_size);
    r.argmax = span("argmax", argmax, s.gc, s.ldargmax, strides.argmax, batch, sizeof(std::int32_t));
    if (reads_operand) r.other = span(operand_name, operand, s.other, s.ld_operand, strides.b, batch, s.elem_size);
    // The gradient is zeroed, then summed into, while dC, the argmax and the operand are still read.
    for (const Span* in : {&r.gc, &r.argmax, &r.other}) {
      if (overlap(r.grad, *in)) {
        invalid(std::string("the gradient must not overlap grad_c, argmax or the operand: ") + grad_name +
                " shares memory with " + in->name);
      }
    }
  }
  return r;
}

int backward_device(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                    bool reads_operand, const void* operand, const void* grad, CUstream stream,
                    const Strides& strides, std::int64_t batch) {
  const BackwardSpans spans = backward_spans(s, reads_c, grad_c, argmax, reads_operand, operand, grad, strides, batch);
  DeviceCheck devices;
  devices.add(spans.grad);
  devices.add(spans.gc);
  devices.add(spans.argmax);
  devices.add(spans.other);
  return devices.device(stream);
}

void DeviceCheck::add(const Span& s) {
  if (s.bytes == 0) return;
  const Placement place = placement_of(reinterpret_cast<const void*>(s.start), s.name);
  if (device_ < 0) {
    device_ = place.device;
    first_ = s.name;
  } else if (place.device != device_) {
    invalid(std::string(s.name) + " is on device " + std::to_string(place.device) + " but " + first_ +
            " is on device " + std::to_string(device_));
  }
  // The allocation that holds the first byte must hold the last: the kernel would read or write past its
  // end (an illegal address that ends the context, or another buffer's bytes). No range: nothing to prove.
  if (place.range_size == 0 || s.start < place.range_start) return;
  const std::uint64_t left = place.range_size - std::min<std::uint64_t>(s.start - place.range_start, place.range_size);
  if (static_cast<std::uint64_t>(s.bytes) > left) {
    invalid(std::string(s.name) + " spans " + std::to_string(s.bytes) + " bytes from " + hex(s.start) +
            ", past the end of its allocation (" + std::to_string(left) + " bytes left of the " +
            std::to_string(place.range_size) + " from " + hex(place.range_start) +
            "): check the batch, the strides and the leading dimensions");
  }
}

int DeviceCheck::device(CUstream stream) const {
  // The special handles (legacy, per-thread) mean "the current context's".
  if (reinterpret_cast<std::uintptr_t>(stream) > 2) {
    CUcontext ctx = nullptr;
    jit::driver::check(jit::driver::api().cuStreamGetCtx(stream, &ctx), "cuStreamGetCtx");
    if (ctx != jit::driver::primary_context(device_)) {
      invalid("stream does not belong to the primary context of device " + std::to_string(device_) +
              ", where the operands live");
    }
  }
  return device_;
}

}  // namespace tropical::detail
