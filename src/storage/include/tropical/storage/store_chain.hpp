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

/// The image for key from the first store that has it (copied up into the writable stores above it), else
/// compiled by compile() and stored in every writable store. The first writable store's single flight is taken
/// before compiling (then, under it, those of the writable stores below it: the fleet's lease; a store whose
/// flight this caller does not lead is not written), and the stores are asked again under it, so that while it works one caller machine-wide
/// compiles a key at a time and the others wait (bounded) and read; a caller that cannot take it (no writable
/// store, a bad lock file, a holder past the bound) compiles on its own and stores nothing. Sets *compiled to
/// whether this call compiled. A hit has the given parts (PTX empty with kCubin); a compile returns the whole
/// image. Exceptions from compile() propagate and nothing is stored; compile() must not call back into the
/// stores. Writes one line per decision to stderr at log level kInfo and above.
/// A hit of a lower store is copied up by promotions (in the background) when given, else on this thread.
CompiledImage walk_stores(std::span<Store* const> stores, LogLevel log, const CacheKey& key,
                          const std::function<CompiledImage()>& compile, bool* compiled = nullptr,
                          ImageParts parts = ImageParts::kCubin, Promotions* promotions = nullptr);

/// The image for key from the first store that has it (copied up into the writable stores above it, like
/// walk_stores), else nullopt: never compiles, never takes or waits for a single flight, and counts no miss
/// (the walk that follows a nullopt counts it). Logs misses at kDebug, hits at kInfo.
std::optional<CompiledImage> find_in_stores(std::span<Store* const> stores, LogLevel log, const CacheKey& key,
                                            ImageParts parts = ImageParts::kCubin,
                                            Promotions* promotions = nullptr);

/// The persistent stores below the registry's in-memory images, in lookup order: the local directory (the
/// primary, read-write), then the read-only layers (config.layers, the configured primary if it fell back,
/// the install's prebuilt layer), then the fleet store when TROPICAL_REMOTE_CACHE (or `remote` in
/// tropical.conf) configures one; they are appended here by the configuration, never by the registry.
/// Only the primary is opened at construction: the other stores are made (and a refused layer or a bad
/// fleet setting warned about) on the first lookup the primary cannot answer, or by list(). Hits of the
/// lower stores are copied into the primary in the background (promotion.hpp). Thread-safe.
class StoreChain {
 public:
  /// The stores config describes (no layers when the cache is disabled).
  explicit StoreChain(const CacheConfig& config);
  /// primary first, then the others in lookup order (for tests and embedders).
  StoreChain(std::unique_ptr<LocalStore> primary, std::vector<std::unique_ptr<Store>> others, LogLevel log);
  StoreChain(const StoreChain&) = delete;
  StoreChain& operator=(const StoreChain&) = delete;

  /// walk_stores over every store (after a look at the primary alone while the others are not made).
  CompiledImage get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                               bool* compiled = nullptr, ImageParts parts = ImageParts::kCubin);
  /// find_in_stores over every store: is key's image stored anywhere, without compiling.
  std::optional<CompiledImage> find(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// The primary's image for key, if it holds one: no other store is asked (or made), and a miss is
  /// neither counted nor logged (a walk that follows does both).
  std::optional<CompiledImage> find_in_primary(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// Waits until the copies of lower hits queued so far are written, at most bound; false if it passed.
  bool finish_promotions(std::chrono::milliseconds bound = std::chrono::seconds(30));
  /// The local directory (what `tropical stats`, `clear` and `info` act on).
  LocalStore& primary() noexcept { return *primary_; }
  /// Every store, in lookup order (the primary first); makes the stores below the primary if not yet made.
  std::span<Store* const> list();
  /// The decision log level.
  LogLevel log() const noexcept { return log_; }

 private:
  void make_others();
  std::optional<CompiledImage> primary_hit(const CacheKey& key, ImageParts parts);

  std::optional<CacheConfig> config_;  // what the other stores are made from
  std::mutex making_;
  std::atomic<bool> made_{false};
  std::unique_ptr<LocalStore> primary_;
  std::vector<std::unique_ptr<Store>> others_;
  std::vector<Store*> order_;
  LogLevel log_;
  Promotions promotions_;  // last: destroyed first, writing what is queued while the stores still exist
};

}  // namespace tropical::storage
