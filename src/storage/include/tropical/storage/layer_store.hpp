#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tropical/storage/log.hpp"
#include "tropical/storage/store.hpp"

namespace tropical::storage {

/// A read-only layer: a directory of entries made elsewhere (a container image, the install's prebuilt cache,
/// a warm run as root), searched after the primary and never written, evicted or cleaned.
///
/// Trust: the directory must be owned by root or this user and not writable by its group or others;
/// otherwise it is refused (one warning) and serves nothing. An entry is read only if it is a regular file
/// owned by root or this user and not writable by group or others, and is still verified (checksums and
/// the full key), so a damaged or planted entry is a miss. Thread-safe; never throws for what the
/// directory holds.
class LayerStore final : public Store {
 public:
  /// Opens dir; a missing or refused layer is warned about once unless quiet (the install's prebuilt layer,
  /// the primary that fell back: `tropical stats` still says why).
  LayerStore(std::filesystem::path dir, LogLevel log, bool quiet = false);
  ~LayerStore() override;
  LayerStore(const LayerStore&) = delete;
  LayerStore& operator=(const LayerStore&) = delete;

  /// "layer <dir>".
  const std::string& name() const noexcept override;
  /// See Store::lookup.
  Lookup lookup(const StoreKey& key, ImageParts parts) override;
  /// True: a hit's copy into the primary is read again by the copier, off the caller's path.
  bool rereadable() const noexcept override { return true; }
  /// The whole entry, verified as lookup() does, not counted.
  Lookup reread(const StoreKey& key) override;
  /// Always false: a layer is never written.
  bool can_store() const noexcept override { return false; }
  /// Stores nothing; returns false.
  bool store(const StoreKey& key, const CompiledImage& image, StoreReason reason) override;
  /// Counts a miss for this process.
  void count_miss(bool bad) override;
  /// Counts nothing: a compile is never stored here.
  void count_compile(std::uint64_t compile_ns) override { (void)compile_ns; }
  /// Path, trusted or refused and why, entries and bytes present, this process's hits and misses.
  StoreInfo describe() const override;
  /// True if the directory is open and trusted.
  bool trusted() const noexcept;
  /// The layer's directory.
  const std::filesystem::path& dir() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The install's prebuilt layer, <datadir>/tropical/cache, found relative to the loaded library (so that a
/// moved prefix still finds it); empty if the library's location is unknown.
std::filesystem::path prebuilt_layer_dir();

}  // namespace tropical::storage
