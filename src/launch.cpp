// The launch sequence every product launcher shares (src/launch.hpp).
#include "launch.hpp"

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

#include "checks.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
namespace {

/// What a call of kernel `id` over `e` on `stream` allows (the first-use rules): the
/// quick kernel (smaller tiles) only where its grid fits.
jit::Request request_for(std::size_t index, const Extent& e, CUstream stream) {
  const bool quick_fits = (e.m - 1) / catalog::kQuickLaunch[index].tile_m + 1 <= kMaxGridY;
  const double macs = static_cast<double>(e.m) * static_cast<double>(e.n) * static_cast<double>(e.k) *
                      static_cast<double>(e.batch);
  return jit::Request{macs, stream, quick_fits};
}

}  // namespace

void launch_function(CUfunction function, Grid grid, const jit::LaunchShape& launch, CUstream stream, void** args,
                     bool dependent) {
  const auto& api = jit::driver::api();
  constexpr unsigned kUnaskedSharedBytes = 48 * 1024;
  if (launch.smem_bytes > kUnaskedSharedBytes) {
    jit::driver::check(api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(launch.smem_bytes)),
                       "cuFuncSetAttribute");
  }
  if (dependent) {
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = grid.y;
    config.gridDimZ = grid.z;
    config.blockDimX = launch.block_x;
    config.blockDimY = launch.block_y;
    config.blockDimZ = 1;
    config.sharedMemBytes = launch.smem_bytes;
    config.hStream = stream;
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    jit::driver::check(api.cuLaunchKernelEx(&config, function, args, nullptr), "cuLaunchKernelEx");
    return;
  }
  jit::driver::check(api.cuLaunchKernel(function, grid.x, grid.y, grid.z, launch.block_x, launch.block_y, 1,
                                        launch.smem_bytes, stream, args, nullptr),
                     "cuLaunchKernel");
}

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

Served serve(catalog::KernelId id, int device, const Extent& e, CUstream stream) {
  const auto index = static_cast<std::uint32_t>(id);
  jit::Registry& reg = registry();
  // Checked against the tuned kernel's grid, so a call fails the same way on either tier.
  const Grid tuned_grid = grid_for(catalog::kTunedLaunch[index], e);
  jit::driver::ScopedContext context(device);
  // Once the tuned kernel is published this is the whole lookup; the request
  // (the cost model's facts) is made only until then.
  const jit::Resolved* kernel = reg.settled(index, device);
  if (kernel == nullptr) kernel = &reg.kernel(index, device, request_for(index, e, stream));
  return Served{kernel, kernel->tier == jit::Tier::kTuned ? tuned_grid : grid_for(kernel->launch, e)};
}

void launch(catalog::KernelId id, int device, const Extent& e, CUstream stream, void** args) {
  const Served served = serve(id, device, e, stream);
  jit::driver::ScopedContext context(device);
  launch_function(served.kernel->function, served.grid, served.kernel->launch, stream, args);
}

void launch_one_tier(catalog::KernelId id, int device, Grid grid, CUstream stream, void** args) {
  const auto& info = catalog::kInfo[static_cast<std::size_t>(id)];
  CUfunction function = registry().function(static_cast<std::uint32_t>(id), device);
  jit::driver::ScopedContext context(device);
  const jit::LaunchShape shape{info.launch.block_x, info.launch.block_y, info.launch.tile_m, info.launch.tile_n,
                               info.launch.smem_bytes};
  launch_function(function, grid, shape, stream, args);
}

void signature_mismatch(catalog::KernelId id) {
  throw std::logic_error("tropical: kernel " + std::string(catalog::kInfo[static_cast<std::size_t>(id)].name) +
                         " launched with another kernel's argument list");
}

void check_grid(catalog::KernelId id, const Extent& e) {
  grid_for(catalog::kTunedLaunch[static_cast<std::size_t>(id)], e);
}

int multiprocessors(int device) {
  static std::array<std::atomic<int>, 64> known{};  // 0: not asked yet
  std::atomic<int>* slot = device >= 0 && device < static_cast<int>(known.size()) ? &known[device] : nullptr;
  if (slot != nullptr) {
    if (const int sms = slot->load(std::memory_order_relaxed); sms > 0) return sms;
  }
  int sms = 0;
  if (jit::driver::api().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) !=
          CUDA_SUCCESS ||
      sms < 1) {
    return 1;
  }
  if (slot != nullptr) slot->store(sms, std::memory_order_relaxed);
  return sms;
}

}  // namespace tropical::detail
