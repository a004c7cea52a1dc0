#include "cache_entries.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "tropical/catalog_sources.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

std::vector<std::pair<std::string, jit::Tier>> fragment_names(std::uint32_t id) {
  auto& reg = registry();
  std::vector<std::pair<std::string, jit::Tier>> names;
  for (const jit::Tier tier : {jit::Tier::kTuned, jit::Tier::kQuick}) {
    // The name does not depend on the arch: any one makes the key.
    if (reg.has_tier(id, tier)) names.emplace_back(reg.cache_key(id, 90, tier).kernel_name, tier);
  }
  return names;
}

std::vector<CacheEntry> cache_entries() {
  auto& reg = registry();
  std::map<std::string, std::pair<std::uint32_t, jit::Tier>, std::less<>> fragments;
  for (const auto& k : catalog::kInfo) {
    const auto id = static_cast<std::uint32_t>(k.id);
    for (auto& [name, tier] : fragment_names(id)) fragments.emplace(std::move(name), std::pair{id, tier});
  }
  std::vector<CacheEntry> out;
  for (auto& stored : reg.disk().entries()) {
    CacheEntry entry;
    entry.file = std::move(stored.file);
    entry.bytes = stored.bytes;
    if (stored.key) {
      const storage::CacheKey& key = *stored.key;
      entry.readable = true;
      entry.kernel = key.kernel_name;
      entry.arch = key.arch;
      entry.nvrtc = key.compiler;
      if (const auto it = fragments.find(key.kernel_name); it != fragments.end()) {
        entry.id = it->second.first;
        entry.tier = it->second.second;
        // An image the driver's JIT made from shipped PTX has its own key (another
        // compiler: the driver, a PTX digest for the source); without a driver it cannot be matched.
        const bool jit = !key.options.empty() && key.options.front() == jit::kDriverJitOption;
        const std::optional<storage::CacheKey> jit_key =
            jit ? reg.jit_cache_key(*entry.id, key.arch, entry.tier) : std::nullopt;
        if (jit && !jit_key) {
          entry.mismatch = storage::KeyMismatch::kCompiler;
        } else {
          entry.mismatch = storage::key_mismatch(key, stored.format,
                                             jit ? *jit_key : reg.cache_key(*entry.id, key.arch, entry.tier));
        }
      }
    }
    out.push_back(std::move(entry));
  }
  const auto order = [](const CacheEntry& e) {
    // Entries of the catalog first, by kernel, arch, tier, usable first; then the rest by file name.
    return std::tuple(!e.id.has_value(), e.id.value_or(0), e.arch, e.tier, !e.usable(), e.nvrtc, e.file);
  };
  std::sort(out.begin(), out.end(),
            [&](const CacheEntry& a, const CacheEntry& b) { return order(a) < order(b); });
  return out;
}

std::string_view tier_name(jit::Tier tier) noexcept { return tier == jit::Tier::kQuick ? "quick" : "tuned"; }

std::string_view mismatch_json(storage::KeyMismatch mismatch) noexcept {
  switch (mismatch) {
    case storage::KeyMismatch::kNone:
      return "null";
    case storage::KeyMismatch::kKernel:
      return "\"kernel\"";
    case storage::KeyMismatch::kArch:
      return "\"arch\"";
    case storage::KeyMismatch::kCompiler:
      return "\"nvrtc\"";
    case storage::KeyMismatch::kFormat:
      return "\"format\"";
    case storage::KeyMismatch::kSource:
      return "\"source\"";
    case storage::KeyMismatch::kOptions:
      return "\"options\"";
  }
  return "null";
}

std::string_view mismatch_text(storage::KeyMismatch mismatch) noexcept {
  switch (mismatch) {
    case storage::KeyMismatch::kNone:
      return "usable";
    case storage::KeyMismatch::kKernel:
      return "not in this catalog";
    case storage::KeyMismatch::kArch:
      return "other arch";
    case storage::KeyMismatch::kCompiler:
      return "other NVRTC";
    case storage::KeyMismatch::kFormat:
      return "other format";
    case storage::KeyMismatch::kSource:
      return "other source";
    case storage::KeyMismatch::kOptions:
      return "other options";
  }
  return "usable";
}

std::string unusable_summary(const std::vector<CacheEntry>& entries, std::string_view indent) {
  struct Group {
    std::size_t count = 0;
    std::set<int> archs;
  };
  std::map<std::string, Group> other_nvrtc;  // by identity
  Group other;                               // another format, source or options
  std::size_t foreign = 0;
  std::size_t unreadable = 0;
  for (const auto& e : entries) {
    if (e.usable()) continue;
    if (!e.readable) {
      ++unreadable;
    } else if (!e.id) {
      ++foreign;
    } else {
      Group& g = e.mismatch == storage::KeyMismatch::kCompiler ? other_nvrtc[e.nvrtc] : other;
      ++g.count;
      g.archs.insert(e.arch);
    }
  }
  const auto archs = [](const Group& g) {
    std::string text;
    for (const int arch : g.archs) text += (text.empty() ? "sm_" : ", sm_") + std::to_string(arch);
    return text;
  };
  const auto entries_word = [](std::size_t n) {
    return std::to_string(n) + (n == 1 ? " entry" : " entries");
  };
  std::string out;
  for (const auto& [identity, g] : other_nvrtc) {
    out += std::string(indent) + entries_word(g.count) + " (" + archs(g) +
           ") of another NVRTC build: " + identity + " (this process: " + jit::nvrtc_identity() + ")\n";
  }
  if (other.count != 0) {
    out += std::string(indent) + entries_word(other.count) + " (" + archs(other) +
           ") of another format, source or options (another version of tropical): not used\n";
  }
  if (foreign != 0) {
    out += std::string(indent) + entries_word(foreign) +
           " of kernels not in this catalog (another version of " + "tropical): not used\n";
  }
  if (unreadable != 0) {
    out +=
        std::string(indent) + entries_word(unreadable) + " whose header this version cannot read: not used\n";
  }
  return out;
}

}  // namespace tropical::cli
