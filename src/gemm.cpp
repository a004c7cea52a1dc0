#include "tropical/gemm.hpp"

#include <string>

#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/runtime.hpp"

namespace tropical::detail {
namespace {

constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxGridZ = 65535;

[[noreturn]] void invalid(const std::string& what) { throw InvalidArgument("tropical: " + what); }

/// Rows and columns of an operand as stored (transposed storage swaps them).
struct Stored {
  std::int64_t rows, cols;
};

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
  if (p.m < 0 || p.n < 0 || p.k < 0) {
    invalid("negative size m = " + std::to_string(p.m) + ", n = " + std::to_string(p.n) +
            ", k = " + std::to_string(p.k));
  }
}

/// The device ordinal owning ptr; rejects null, host-only and unknown memory.
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

/// Every pointer of a call must live on one device; that device runs the kernel.
class DeviceCheck {
 public:
  void add(const void* ptr, const char* name) {
    const int d = device_of(ptr, name);
    if (device_ < 0) {
      device_ = d;
      first_ = name;
    } else if (d != device_) {
      invalid(std::string(name) + " is on device " + std::to_string(d) + " but " + first_ +
              " is on device " + std::to_string(device_));
    }
  }

  /// The common device; also checks that `stream` belongs to its primary context.
  int device(CUstream stream) const {
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

 private:
  int device_ = -1;
  const char* first_ = "";
};

struct Grid {
  unsigned x, y, z;
};

/// What one launch computes: the output's rows and columns, the depth of its
/// products (for the first-use cost model) and the batch.
struct Extent {
  std::int64_t m, n, k, batch = 1;
};

Grid grid_for(const jit::LaunchShape& launch, const Extent& e) {
  const std::int64_t gx = e.n == 0 ? 0 : (e.n - 1) / launch.tile_n + 1;
  const std::int64_t gy = e.m == 0 ? 0 : (e.m - 1) / launch.tile_m + 1;
  if (gy > kMaxGridY) {
    invalid("m = " + std::to_string(e.m) + " needs more than " + std::to_string(kMaxGridY) +
            " row tiles; split the product");
  }
  if (gx > 0x7fffffff) invalid("n = " + std::to_string(e.n) + " is too large for one launch");
  return Grid{static_cast<unsigned>(gx), static_cast<unsigned>(gy),
              static_cast<unsigned>(e.batch < kMaxGridZ ? e.batch : kMaxGridZ)};
}

/// Launches kernel `id` (whichever tier the registry serves this call) on `device`.
void launch(catalog::KernelId id, int device, const Extent& e, CUstream stream, void** args) {
  const auto& api = jit::driver::api();
  const auto index = static_cast<std::size_t>(id);
  // Checked against the tuned kernel's grid, so a call fails the same way on
  // either tier; the quick kernel (smaller tiles) serves only where its grid fits.
  grid_for(catalog::kTunedLaunch[index], e);
  jit::driver::ScopedContext context(device);
  const bool quick_fits = (e.m - 1) / catalog::kQuickLaunch[index].tile_m + 1 <= kMaxGridY;
  const double macs = static_cast<double>(e.m) * static_cast<double>(e.n) * static_cast<double>(e.k) *
                      static_cast<double>(e.batch);
  const jit::Resolved& kernel =
      registry().kernel(static_cast<std::uint32_t>(id), device, jit::Request{macs, stream, quick_fits});
  const Grid grid = grid_for(kernel.launch, e);
  jit::driver::check(api.cuLaunchKernel(kernel.function, grid.x, grid.y, grid.z, kernel.launch.block_x,
                                        kernel.launch.block_y, 1, kernel.launch.smem_bytes, stream, args, nullptr),
                     "cuLaunchKernel");
}

int trans_flag(Trans t) { return t == Trans::kYes ? 1 : 0; }

/// Checks the shape and leading dimensions of C = op(A) (x) op(B).
void check_product(const Problem& p) {
  check_shape(p);
  check_ld("lda", p.lda, stored(p.ta, p.m, p.k));
  check_ld("ldb", p.ldb, stored(p.tb, p.k, p.n));
  check_ld("ldc", p.ldc, {p.m, p.n});
}

/// Adds the operands of a non-empty product (A and B only if k > 0) to a device check.
void add_operands(DeviceCheck& devices, const Problem& p, const void* a, const void* b, const void* c) {
  if (p.k > 0) {
    // Blocks write C while others still read A and B: no in-place products.
    if (c == a || c == b) invalid("C must not overlap A or B (write the product to another buffer)");
    devices.add(a, "A");
    devices.add(b, "B");
  }
  devices.add(c, "C");
}

}  // namespace

void launch_gemm(catalog::KernelId id, std::size_t, const Problem& p, const void* a, const void* b,
                 void* c, CUstream stream) {
  check_product(p);
  if (p.m == 0 || p.n == 0) return;
  DeviceCheck devices;
  add_operands(devices, p, a, b, c);
  const int device = devices.device(stream);
  long long m = p.m, n = p.n, k = p.k, lda = p.lda, ldb = p.ldb, ldc = p.ldc;
  int ta = trans_flag(p.ta), tb = trans_flag(p.tb);
  void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb};
  launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
}

void launch_gemm_argmax(catalog::KernelId id, std::size_t, const Problem& p, const void* a,
                        const void* b, void* c, std::int32_t* argmax, std::int64_t ldargmax,
                        CUstream stream) {
  check_product(p);
  if (p.k > 0x7fffffff) invalid("k = " + std::to_string(p.k) + " does not fit a 32-bit argmax");
  check_ld("ldargmax", ldargmax, {p.m, p.n});
  if (p.m == 0 || p.n == 0) return;
  if (argmax == c || argmax == a || argmax == b) invalid("argmax must not overlap A, B or C");
  DeviceCheck devices;
  add_operands(devices, p, a, b, c);
  devices.add(argmax, "argmax");
  const int device = devices.device(stream);
  long long m = p.m, n = p.n, k = p.k, lda = p.lda, ldb = p.ldb, ldc = p.ldc, ldx = ldargmax;
  int ta = trans_flag(p.ta), tb = trans_flag(p.tb);
  void* args[] = {&a, &b, &c, &argmax, &m, &n, &k, &lda, &ldb, &ldc, &ldx, &ta, &tb};
  launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
}

void launch_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p,
                     const void* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                     std::int64_t ldargmax, bool reads_operand, const void* operand,
                     std::int64_t ld_operand, void* grad, std::int64_t ldgrad, CUstream stream) {
  check_shape(p);
  const bool wrt_a = catalog::kInfo[static_cast<std::size_t>(id)].op == Op::kBackwardA;
  // The gradient has the stored shape of the operand it belongs to; the other
  // operand (read for MaxMul only) has its own.
  const Stored grad_shape = wrt_a ? stored(p.ta, p.m, p.k) : stored(p.tb, p.k, p.n);
  const Stored other_shape = wrt_a ? stored(p.tb, p.k, p.n) : stored(p.ta, p.m, p.k);
  check_ld("ldgc", ldgc, {p.m, p.n});
  check_ld("ldargmax", ldargmax, {p.m, p.n});
  check_ld(wrt_a ? "ldga" : "ldgb", ldgrad, grad_shape);
  if (reads_operand) {
    check_ld(wrt_a ? "ldb" : "lda", ld_operand, other_shape);
  } else {
    operand = nullptr;  // (+) semirings never read it
  }
  if (grad_shape.rows == 0 || grad_shape.cols == 0) return;

  const bool reads_c = p.m > 0 && p.n > 0;
  if (reads_c && (grad == grad_c || grad == operand || grad == argmax)) {
    invalid("the gradient must not overlap grad_c, argmax or the operand");
  }
  DeviceCheck devices;
  devices.add(grad, wrt_a ? "grad_a" : "grad_b");
  if (reads_c) {
    devices.add(grad_c, "grad_c");
    devices.add(argmax, "argmax");
    if (reads_operand) {
      devices.add(operand, wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)");
    }
  }
  const int device = devices.device(stream);
  const auto& api = jit::driver::api();
  {
    // The kernel scatters with atomics, so the gradient starts from zero.
    jit::driver::ScopedContext context(device);
    jit::driver::check(
        api.cuMemsetD2D8Async(reinterpret_cast<CUdeviceptr>(grad), static_cast<std::size_t>(ldgrad) * elem_size,
                              0, static_cast<std::size_t>(grad_shape.cols) * elem_size,
                              static_cast<std::size_t>(grad_shape.rows), stream),
        "cuMemsetD2D8Async");
  }
  if (!reads_c) return;
  long long m = p.m, n = p.n, k = p.k, ldg = ldgc, ldx = ldargmax, ldo = ld_operand, ldr = ldgrad;
  int ta = trans_flag(p.ta), tb = trans_flag(p.tb);
  void* args[] = {&grad_c, &argmax, &operand, &grad, &m, &n, &k, &ldg, &ldx, &ldo, &ldr, &ta, &tb};
  launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
}

void launch_gemm_batched(catalog::KernelId id, std::size_t, const Problem& p, const void* a,
                         std::int64_t stride_a, const void* b, std::int64_t stride_b, void* c,
                         std::int64_t stride_c, std::int64_t batch, CUstream stream) {
  check_product(p);
  if (batch < 0) invalid("negative batch " + std::to_string(batch));
  if (stride_a < 0 || stride_b < 0) invalid("negative stride_a or stride_b");
  std::int64_t c_extent = 0;  // elements one product of C spans
  if (__builtin_mul_overflow(p.m > 0 ? p.m - 1 : 0, p.ldc, &c_extent) ||
      __builtin_add_overflow(c_extent, p.n, &c_extent)) {
    invalid("m x ldc overflows 64 bits");
  }
  if (batch > 1 && stride_c < c_extent) {
    invalid("stride_c = " + std::to_string(stride_c) + " makes the products of the batch overlap");
  }
  if (p.m == 0 || p.n == 0 || batch == 0) return;
  DeviceCheck devices;
  add_operands(devices, p, a, b, c);
  const int device = devices.device(stream);
  long long m = p.m, n = p.n, k = p.k, lda = p.lda, ldb = p.ldb, ldc = p.ldc;
  long long sa = stride_a, sb = stride_b, sc = stride_c, nb = batch;
  int ta = trans_flag(p.ta), tb = trans_flag(p.tb);
  void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, &sa, &sb, &sc, &nb};
  launch(id, device, Extent{p.m, p.n, p.k, batch}, stream, args);
}

}  // namespace tropical::detail
