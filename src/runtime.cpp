#include "tropical/runtime.hpp"

#include <string>
#include <utility>

#include "tropical/catalog_sources.hpp"
#include "tropical/error.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/version.hpp"

namespace tropical {

namespace {

// The public structs mirror the internal ones field by field; these copies are
// the library boundary (users' programs never see a jit:: type).
KernelStats to_public(const jit::KernelStats& s) noexcept {
  return {s.compiles,    s.compile_ns,          s.disk_hits,         s.loads,       s.load_ns,
          s.quick_compiles, s.quick_calls,      s.background_compiles, s.first_to_tuned_ns, s.jit_compiles};
}

CacheStats to_public(const storage::CacheStats& s) noexcept {
  return {s.hits, s.misses, s.compiles, s.evictions, s.errors, s.bytes_written, s.bytes_read, s.compile_ns, s.load_ns};
}

static_assert(sizeof(KernelStats) == sizeof(jit::KernelStats) && sizeof(CacheStats) == sizeof(storage::CacheStats),
              "a counter was added on one side of the boundary only: copy it in to_public");

}  // namespace

std::atomic<jit::Registry*> detail::registry_instance{nullptr};

jit::Registry& detail::create_registry() {
  // Leaked on purpose: no destructor may unload modules while the driver
  // tears itself down at exit.
  static jit::Registry* const instance = [] {
    jit::TierConfig tiers;
    tiers.table = catalog::kTiers;
    tiers.mode = jit::tier_mode_from_env();
    tiers.ptx = catalog::kShippedPtx;
    auto* made = new jit::Registry(catalog::kKernels, storage::CacheConfig::from_env(), std::move(tiers));
    registry_instance.store(made, std::memory_order_release);
    return made;
  }();
  return *instance;
}

WarmReport warm(int arch, std::span<const catalog::KernelId> kernels, unsigned threads,
                const WarmProgress& progress) {
  std::vector<std::uint32_t> ids;
  ids.reserve(kernels.size());
  for (auto id : kernels) ids.push_back(static_cast<std::uint32_t>(id));
  jit::WarmReport r = registry().warm(ids, arch, threads, progress);
  return {r.kernels, r.compiled, r.ready, r.threads, r.peak_compiles, r.seconds, std::move(r.errors), r.unavailable};
}

int device_count() noexcept {
  try {
    return jit::driver::device_count();
  } catch (...) {
    return 0;
  }
}

const char* version() noexcept { return TROPICAL_VERSION; }

int device_arch(int device) {
  if (device < 0) throw InvalidArgument("tropical: device " + std::to_string(device) + " is negative");
  const int count = device_count();
  if (count > 0 && device >= count) {
    throw InvalidArgument("tropical: device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                          (count == 1 ? " device)" : " devices)"));
  }
  return jit::driver::device_arch(device);
}

Stats stats() {
  auto& r = registry();
  Stats s;
  for (const jit::KernelStats& k : r.stats()) s.kernels.push_back(to_public(k));
  s.process = to_public(r.disk().process_stats());
  s.machine = to_public(r.disk().machine_stats());
  return s;
}

std::uint64_t clear() { return registry().disk().clear(); }

CacheInfo info() {
  const storage::CacheInfo i = registry().disk().info();
  return {i.dir.string(), i.enabled, i.entries, i.bytes, i.max_bytes};
}

}  // namespace tropical
