#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "tropical/storage/config.hpp"
#include "tropical/storage/remote/remote_config.hpp"
#include "tropical/storage/remote/remote_store.hpp"
#include "tropical/storage/store.hpp"

namespace tropical::storage::remote {

/// The fleet store as one of the cache's stores (placed last, after the primary and the layers): a lookup is a
/// verified remote entry decoded and checked like a file entry, a store publishes the entry, and the single
/// flight is the cross-machine lease, which the walk takes while it holds the primary's lock (one waiter per
/// machine). Thread-safe; never throws but bad_alloc; every call returns within the remote's bounds.
class FleetStore final : public Store {
 public:
  /// A store over a RemoteStore made from options; warn receives warnings (stderr if empty).
  explicit FleetStore(RemoteOptions options, WarningSink warn = {});

  /// "remote <url>".
  const std::string& name() const noexcept override { return name_; }
  /// The entry under key.digest, signature-checked by the RemoteStore and then decoded with every check of a
  /// file entry (checksums, full key); a refused or undecodable value is kRefused/kCorrupt/kOtherKey, a
  /// failing or cooling-down remote kUnavailable.
  Lookup lookup(const StoreKey& key, ImageParts parts) override;
  /// True if this node may publish (a signing key, or unsigned use allowed).
  bool can_store() const noexcept override { return store_.options().may_write(); }
  /// Publishes the whole image's entry; false if not published (warned once by the RemoteStore).
  bool store(const StoreKey& key, const CompiledImage& image, StoreReason reason) override;
  /// RemoteStore::begin: kLeader holding the lease, kLeader with nothing held when another node's entry
  /// arrived (the walk looks again), else kTimedOut (compile here, publish nothing).
  FlightResult single_flight(const StoreKey& key) override;
  /// Remote misses are counted by the RemoteStore.
  void count_miss(bool bad) override { (void)bad; }
  /// Compiles are counted by the primary.
  void count_compile(std::uint64_t compile_ns) override { (void)compile_ns; }

  /// The remote store (counters, options).
  RemoteStore& remote() noexcept { return store_; }
  /// Values that passed the signature check but failed decoding (a trusted producer's damaged entry).
  std::uint64_t undecodable() const noexcept { return undecodable_.load(std::memory_order_relaxed); }

 private:
  RemoteStore store_;
  std::string name_;
  WarningSink warn_;
  std::atomic<std::uint64_t> undecodable_{0};
  std::atomic<bool> warned_undecodable_{false};
};

/// The fleet store for config from the settings read through get (remote_options(); origin names them in
/// warnings), or nullptr when it is off (no TROPICAL_REMOTE_CACHE, unusable settings, or the disk cache
/// disabled). Never throws but bad_alloc.
std::unique_ptr<FleetStore> make_fleet_store(const CacheConfig& config, const SettingLookup& get,
                                             const SettingOrigin& origin = {});

/// The fleet store for config from the environment, then from the `remote*` keys of config.file (the
/// primary's tropical.conf) that the environment does not set (environment_then_file()); nullptr when off.
std::unique_ptr<FleetStore> make_fleet_store(const CacheConfig& config);

}  // namespace tropical::storage::remote
