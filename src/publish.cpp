// Publishing cached kernels to the fleet (tropical/runtime.hpp): the library's policy for what a producer
// may sign, used by `tropical warm`, the C ABI and Python alike.
#include <cstdio>
#include <string>
#include <vector>

#include "tropical/internal/registry.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/runtime.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/remote/fleet_store.hpp"

namespace tropical {

std::size_t publish_cached(int arch, std::span<const catalog::KernelId> kernels) {
  storage::remote::FleetStore* remote = nullptr;
  for (storage::Store* store : registry().stores().list()) {
    if (auto* r = dynamic_cast<storage::remote::FleetStore*>(store)) remote = r;
  }
  if (remote == nullptr || !remote->can_store()) return 0;
  std::vector<std::uint32_t> ids;
  if (kernels.empty()) {
    for (const auto& k : catalog::kInfo) ids.push_back(static_cast<std::uint32_t>(k.id));
  } else {
    for (const auto id : kernels) ids.push_back(static_cast<std::uint32_t>(id));
  }
  // A producer signs only what it compiled: an entry found in its primary may have come from a
  // layer, a team directory or another tool, whose trust is not the fleet's. What this process compiled the
  // walk has published; the others are compiled again here and that compile is published, not the entry.
  const std::vector<jit::KernelStats> compiled_here = registry().stats();
  std::size_t published = 0;
  std::vector<std::string> differing;
  for (const std::uint32_t id : ids) {
    if (id < compiled_here.size() && compiled_here[id].compiles != 0) continue;
    const storage::CacheKey key = registry().cache_key(id, arch);
    const storage::StoreKey store_key(key);
    if (remote->remote().lookup(store_key.digest).outcome == storage::remote::LookupOutcome::kHit) continue;
    const auto cached = registry().disk().load(key, storage::ImageParts::kCubin);
    if (!cached) continue;  // not cached: nothing to publish
    storage::CompiledImage own;
    try {
      own = jit::compile(registry().catalog()[id], arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tropical: %s not published: %s\n", key.kernel_name.c_str(), e.what());
      continue;
    }
    if (own.cubin != cached->cubin) differing.push_back(key.kernel_name);
    if (remote->store(store_key, own, storage::StoreReason::kCompiled)) ++published;
  }
  if (!differing.empty()) {
    std::fprintf(stderr,
                 "tropical: warning: %zu cached entr%s of %s differ%s from this producer's compile (%s%s); "
                 "the compile was published, not the entry\n",
                 differing.size(), differing.size() == 1 ? "y" : "ies", registry().disk().config().dir.c_str(),
                 differing.size() == 1 ? "s" : "", storage::printable(differing.front()).c_str(),
                 differing.size() > 1 ? ", ..." : "");
  }
  return published;
}

}  // namespace tropical
