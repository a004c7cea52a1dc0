// The entry files of the primary cache directory matched against the catalog and this process's keys: what
// list, stats and clear show of every NVRTC build's entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tropical/storage/key.hpp"
#include "tropical/jit/tiers.hpp"

namespace tropical::cli {

/// One entry file of this user in the primary directory, as its header describes it.
struct CacheEntry {
  std::string file;                 ///< "<64 hex digits>.entry"
  std::uint64_t bytes = 0;          ///< its size
  bool readable = false;            ///< its header names a key (false: kernel, arch and nvrtc are empty)
  std::string kernel;               ///< the key's kernel name (the quick fragment's name for a quick entry)
  int arch = 0;                     ///< the key's sm_XY as 10 * major + minor
  std::string nvrtc;                ///< the key's NVRTC identity
  std::optional<std::uint32_t> id;  ///< the catalog kernel it is an entry of, if any
  jit::Tier tier = jit::Tier::kTuned;
  /// kNone: this process loads it; kKernel: not an entry of this catalog's kernels (or unreadable); else how
  /// its key differs from the one this process would look up.
  storage::KeyMismatch mismatch = storage::KeyMismatch::kKernel;

  /// True if this process would load it (same kernel, arch, NVRTC identity, format, source and options).
  bool usable() const noexcept { return mismatch == storage::KeyMismatch::kNone; }
};

/// The kernel names the cache keys of catalog kernel id carry, with their tier: its tuned fragment's and,
/// where it has one, its quick fragment's.
std::vector<std::pair<std::string, jit::Tier>> fragment_names(std::uint32_t id);

/// Every entry file of this user in the primary directory (empty when it is disabled or unusable), catalog
/// entries first in (id, arch, tier) order, usable before unusable, then the others by file name. Reads
/// headers only: no statistics, LRU time or NVRTC.
std::vector<CacheEntry> cache_entries();

/// "tuned" or "quick".
std::string_view tier_name(jit::Tier tier) noexcept;

/// The JSON word of a mismatch: null for kNone, else "kernel", "arch", "nvrtc", "format", "source",
/// "options" (quoted).
std::string_view mismatch_json(storage::KeyMismatch mismatch) noexcept;

/// What a user reads for a mismatch: "usable", "other NVRTC", "other format", "other source", "other
/// options", "not in this catalog".
std::string_view mismatch_text(storage::KeyMismatch mismatch) noexcept;

/// Lines that say which entries this process cannot use, grouped by cause (one per other NVRTC identity,
/// with its archs), each starting with indent; "" if every entry is usable.
std::string unusable_summary(const std::vector<CacheEntry>& entries, std::string_view indent);

}  // namespace tropical::cli
