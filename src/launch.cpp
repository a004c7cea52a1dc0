// The launch sequence every product launcher shares (src/launch.hpp).
#include "launch.hpp"

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

/// cuLaunchKernel of `function` on `grid` with a block of block_x x block_y threads and smem_bytes of dynamic
/// shared memory; a function taking more than the 48 KB any function may take unasked is allowed its bytes
/// first (an attribute of the function, set before each such launch: one cheap driver call, no table to keep).
void launch_function(CUfunction function, Grid grid, unsigned block_x, unsigned block_y, unsigned smem_bytes,
                     CUstream stream, void** args) {
  const auto& api = jit::driver::api();
  constexpr unsigned kUnaskedSharedBytes = 48 * 1024;
  if (smem_bytes > kUnaskedSharedBytes) {
    jit::driver::check(api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(smem_bytes)),
                       "cuFuncSetAttribute");
  }
  jit::driver::check(
      api.cuLaunchKernel(function, grid.x, grid.y, grid.z, block_x, block_y, 1, smem_bytes, stream, args, nullptr),
      "cuLaunchKernel");
}

}  // namespace

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

void launch(catalog::KernelId id, int device, const Extent& e, CUstream stream, void** args) {
  const auto index = static_cast<std::uint32_t>(id);
  jit::Registry& reg = registry();
  // Checked against the tuned kernel's grid, so a call fails the same way on either tier.
  const Grid tuned_grid = grid_for(catalog::kTunedLaunch[index], e);
  jit::driver::ScopedContext context(device);
  // Once the tuned kernel is published this is the whole lookup; the request
  // (the cost model's facts) is made only until then.
  const jit::Resolved* kernel = reg.settled(index, device);
  if (kernel == nullptr) kernel = &reg.kernel(index, device, request_for(index, e, stream));
  const Grid grid = kernel->tier == jit::Tier::kTuned ? tuned_grid : grid_for(kernel->launch, e);
  launch_function(kernel->function, grid, kernel->launch.block_x, kernel->launch.block_y, kernel->launch.smem_bytes,
                  stream, args);
}

void launch_one_tier(catalog::KernelId id, int device, Grid grid, CUstream stream, void** args) {
  const auto& info = catalog::kInfo[static_cast<std::size_t>(id)];
  CUfunction function = registry().function(static_cast<std::uint32_t>(id), device);
  jit::driver::ScopedContext context(device);
  launch_function(function, grid, info.launch.block_x, info.launch.block_y, info.launch.smem_bytes, stream, args);
}

void signature_mismatch(catalog::KernelId id) {
  throw std::logic_error("tropical: kernel " + std::string(catalog::kInfo[static_cast<std::size_t>(id)].name) +
                         " launched with another kernel's argument list");
}

void check_grid(catalog::KernelId id, const Extent& e) {
  grid_for(catalog::kTunedLaunch[static_cast<std::size_t>(id)], e);
}

}  // namespace tropical::detail
