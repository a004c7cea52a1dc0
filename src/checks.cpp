#include "checks.hpp"

#include <string>
#include <utility>

#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

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

int device_of(const void* ptr, const char* name) {
  if (ptr == nullptr) invalid(std::string(name) + " is null");
  const auto& api = jit::driver::api();
  int ordinal = -1;
  const CUresult r = api.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                               reinterpret_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS || ordinal < 0) {
    invalid(std::string(name) + " is not memory of a CUDA device (plain host memory?)");
  }
  return ordinal;
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

void add_operands(DeviceCheck& devices, const Problem& p, const void* a, const void* b, const void* c) {
  if (p.k > 0) {
    devices.add(a, "A");
    devices.add(b, "B");
  }
  devices.add(c, "C");
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
  s.grad_extent = extent(s.wrt_a ? "grad_a" : "grad_b", s.grad, ldgrad, elem_size);
  s.gc_extent = extent("grad_c", {p.m, p.n}, ldgc, elem_size);
  s.argmax_extent = extent("argmax", {p.m, p.n}, ldargmax, sizeof(std::int32_t));
  if (reads_operand) {
    check_ld(s.wrt_a ? "ldb" : "lda", ld_operand, s.other);
    s.other_extent = extent(s.wrt_a ? "B" : "A", s.other, ld_operand, elem_size);
  }
  return s;
}

int backward_device(const BackwardShape& s, bool reads_c, const void* grad_c, const std::int32_t* argmax,
                    bool reads_operand, const void* operand, const void* grad, CUstream stream) {
  const char* grad_name = s.wrt_a ? "grad_a" : "grad_b";
  const char* operand_name = s.wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)";
  check_non_null(grad, grad_name);
  if (reads_c) {
    check_non_null(grad_c, "grad_c");
    check_non_null(argmax, "argmax");
    if (reads_operand) check_non_null(operand, operand_name);
    if (grad == grad_c || grad == argmax || (reads_operand && grad == operand)) {
      invalid("the gradient must not overlap grad_c, argmax or the operand");
    }
  }
  DeviceCheck devices;
  devices.add(grad, grad_name);
  if (reads_c) {
    devices.add(grad_c, "grad_c");
    devices.add(argmax, "argmax");
    if (reads_operand) devices.add(operand, operand_name);
  }
  return devices.device(stream);
}

void DeviceCheck::add(const void* ptr, const char* name) {
  const int d = device_of(ptr, name);
  if (device_ < 0) {
    device_ = d;
    first_ = name;
  } else if (d != device_) {
    invalid(std::string(name) + " is on device " + std::to_string(d) + " but " + first_ +
            " is on device " + std::to_string(device_));
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
