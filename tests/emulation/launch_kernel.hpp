// Launching a catalog kernel's CPU build (tests/emulation/emulator.hpp) the way the library launches
// the GPU one: its tier's block shape, and the grid of src/launch.cpp (detail::grid_for).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "../../src/launch.hpp"
#include "emulator.hpp"
#include "tropical/catalog_tiers.hpp"

namespace tropical::emulation {

/// The kernel of catalog name `name`.
inline catalog::KernelId id_of(std::string_view name) {
  for (const auto& info : catalog::kInfo) {
    if (info.name == name) return info.id;
  }
  ADD_FAILURE() << name << " is not in the catalog";
  return catalog::KernelId{};
}

/// The CPU build of kernel `id`'s fragment of `tier` ("tuned" or "quick"), or nullptr.
inline Entry entry_of(catalog::KernelId id, const char* tier) {
  return find_kernel(std::string(catalog::kInfo[static_cast<std::size_t>(id)].name).c_str(), tier);
}

/// Runs kernel `id`'s fragment of `tier` over `e` (one block per tile of C and per product of the batch,
/// as src/launch.cpp); a one-tier kernel whose grid is not that passes it as `grid`.
inline void launch_kernel(catalog::KernelId id, const char* tier, const detail::Extent& e, void** args,
                          const Dim3* grid = nullptr) {
  const auto index = static_cast<std::size_t>(id);
  const bool quick = std::string_view(tier) == "quick";
  const jit::LaunchShape shape = quick ? catalog::kQuickLaunch[index] : catalog::kTunedLaunch[index];
  const Entry entry = entry_of(id, tier);
  ASSERT_NE(entry, nullptr) << catalog::kInfo[index].name << " (" << tier
                            << ") is not built for the CPU: add it to tests/emulation/meson.build";
  const detail::Grid g = detail::grid_for(shape, e);
  launch(entry, args, grid != nullptr ? *grid : Dim3{g.x, g.y, g.z}, Dim3{shape.block_x, shape.block_y, 1});
}

/// launch_kernel() with the arguments of a struct of tropical/kernel_args.hpp (checked against kernel `id`'s
/// parameter list, as the library's launchers check them).
template <class Args>
void launch_kernel(catalog::KernelId id, const char* tier, const detail::Extent& e, Args& args,
                   const Dim3* grid = nullptr) {
  detail::check_signature(id, Args::kSignature);
  auto pointers = args.pointers();
  launch_kernel(id, tier, e, pointers.data(), grid);
}

}  // namespace tropical::emulation
