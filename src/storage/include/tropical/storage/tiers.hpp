#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "tropical/storage/config.hpp"
#include "tropical/storage/local_store.hpp"
#include "tropical/storage/promotion.hpp"
#include "tropical/storage/store.hpp"

namespace tropical::storage {

/// The image for key from the first tier that has it (copied up into the writable tiers above it), else
/// compiled by compile() and stored in every writable tier. The first writable tier's single flight is taken
/// before compiling (then, under it, those of the writable tiers below it: the fleet's lease; a tier whose
/// flight this caller does not lead is not written), and the tiers are asked again under it, so that while it works one caller machine-wide
/// compiles a key at a time and the others wait (bounded) and read; a caller that cannot take it (no writable
/// tier, a bad lock file, a holder past the bound) compiles on its own and stores nothing. Sets *compiled to
/// whether this call compiled. A hit has the given parts (PTX empty with kCubin); a compile returns the whole
/// image. Exceptions from compile() propagate and nothing is stored; compile() must not call back into the
/// tiers. Writes one line per decision to stderr at log level kInfo and above.
/// A hit of a lower tier is copied up by promotions (in the background) when given, else on this thread.
CompiledImage walk_tiers(std::span<Store* const> tiers, LogLevel log, const CacheKey& key,
                         const std::function<CompiledImage()>& compile, bool* compiled = nullptr,
                         ImageParts parts = ImageParts::kCubin, Promotions* promotions = nullptr);

/// The image for key from the first tier that has it (copied up into the writable tiers above it, like
/// walk_tiers), else nullopt: never compiles, never takes or waits for a single flight, and counts no miss
/// (the walk that follows a nullopt counts it). Logs misses at kDebug, hits at kInfo.
std::optional<CompiledImage> find_in_tiers(std::span<Store* const> tiers, LogLevel log, const CacheKey& key,
                                           ImageParts parts = ImageParts::kCubin,
                                           Promotions* promotions = nullptr);

/// The persistent tiers below the registry's in-memory images, in lookup order: the local directory (the
/// primary, read-write), then the read-only layers (config.layers, the configured primary if it fell back,
/// the install's prebuilt layer), then the fleet tier when TROPICAL_REMOTE_CACHE (or `remote` in
/// tropical.conf) configures one; they are appended here by the configuration, never by the registry.
/// Only the primary is opened at construction: the other tiers are made (and a refused layer or a bad
/// fleet setting warned about) on the first lookup the primary cannot answer, or by list(). Hits of the
/// lower tiers are copied into the primary in the background (promotion.hpp). Thread-safe.
class Tiers {
 public:
  /// The tiers config describes (no layers when the cache is disabled).
  explicit Tiers(const CacheConfig& config);
  /// primary first, then the others in lookup order (for tests and embedders).
  Tiers(std::unique_ptr<LocalStore> primary, std::vector<std::unique_ptr<Store>> others, LogLevel log);
  Tiers(const Tiers&) = delete;
  Tiers& operator=(const Tiers&) = delete;

  /// walk_tiers over every tier (after a look at the primary alone while the others are not made).
  CompiledImage get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                               bool* compiled = nullptr, ImageParts parts = ImageParts::kCubin);
  /// find_in_tiers over every tier: is key's image stored anywhere, without compiling.
  std::optional<CompiledImage> find(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// The primary's image for key, if it holds one: no other tier is asked (or made), and a miss is
  /// neither counted nor logged (a walk that follows does both).
  std::optional<CompiledImage> find_in_primary(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// Waits until the copies of lower hits queued so far are written, at most bound; false if it passed.
  bool finish_promotions(std::chrono::milliseconds bound = std::chrono::seconds(30));
  /// The local directory (what `tropical stats`, `clear` and `info` act on).
  LocalStore& primary() noexcept { return *primary_; }
  /// Every tier, in lookup order (the primary first); makes the tiers below the primary if not yet made.
  std::span<Store* const> list();
  /// The decision log level.
  LogLevel log() const noexcept { return log_; }

 private:
  void make_others();
  std::optional<CompiledImage> primary_hit(const CacheKey& key, ImageParts parts);

  std::optional<CacheConfig> config_;  // what the other tiers are made from
  std::mutex making_;
  std::atomic<bool> made_{false};
  std::unique_ptr<LocalStore> primary_;
  std::vector<std::unique_ptr<Store>> others_;
  std::vector<Store*> order_;
  LogLevel log_;
  Promotions promotions_;  // last: destroyed first, writing what is queued while the tiers still exist
};

}  // namespace tropical::storage
