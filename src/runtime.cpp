#include "tropical/runtime.hpp"

#include <utility>

#include "tropical/catalog_sources.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/version.hpp"

namespace tropical {

std::atomic<jit::Registry*> detail::registry_instance{nullptr};

jit::Registry& detail::create_registry() {
  // Leaked on purpose: no destructor may unload modules while the driver
  // tears itself down at exit.
  static jit::Registry* const instance = [] {
    jit::TierConfig tiers;
    tiers.table = catalog::kTiers;
    tiers.mode = jit::tier_mode_from_env();
    tiers.ptx = catalog::kShippedPtx;
    auto* made = new jit::Registry(catalog::kKernels, jit::CacheConfig::from_env(), std::move(tiers));
    registry_instance.store(made, std::memory_order_release);
    return made;
  }();
  return *instance;
}

jit::WarmReport warm(int arch, std::span<const catalog::KernelId> kernels, unsigned threads,
                     const jit::WarmProgress& progress) {
  std::vector<std::uint32_t> ids;
  ids.reserve(kernels.size());
  for (auto id : kernels) ids.push_back(static_cast<std::uint32_t>(id));
  return registry().warm(ids, arch, threads, progress);
}

int device_count() noexcept {
  try {
    return jit::driver::device_count();
  } catch (...) {
    return 0;
  }
}

const char* version() noexcept { return TROPICAL_VERSION; }

int device_arch(int device) { return jit::driver::device_arch(device); }

Stats stats() {
  auto& r = registry();
  return Stats{r.stats(), r.disk().process_stats(), r.disk().machine_stats()};
}

std::uint64_t clear() { return registry().disk().clear(); }

jit::CacheInfo info() { return registry().disk().info(); }

}  // namespace tropical
