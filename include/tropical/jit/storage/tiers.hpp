#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tropical/jit/storage/config.hpp"
#include "tropical/jit/storage/local_store.hpp"
#include "tropical/jit/storage/store.hpp"

namespace tropical::jit {

/// The image for key from the first tier that has it (copied up into the writable tiers above it), else
/// compiled by compile() and stored in every writable tier. The first writable tier's single flight is taken
/// before compiling (then, under it, those of the writable tiers below it: the fleet's lease; a tier whose
/// flight this caller does not lead is not written), and the tiers are asked again under it, so that while it
/// works one caller machine-wide compiles a key at a time and the others wait (bounded) and read; a caller
/// that cannot take it (no writable tier, a bad lock file, a holder past the bound) compiles on its own and
/// stores nothing. Sets *compiled to whether this call compiled. A hit has the given parts (PTX empty with
/// kCubin); a compile returns the whole image. Exceptions from compile() propagate and nothing is stored;
/// compile() must not call back into the tiers. Writes one line per decision to stderr at log level kInfo and
/// above.
CompiledImage walk_tiers(std::span<Store* const> tiers, LogLevel log, const CacheKey& key,
                         const std::function<CompiledImage()>& compile, bool* compiled = nullptr,
                         ImageParts parts = ImageParts::kCubin);

/// The image for key from the first tier that has it (copied up into the writable tiers above it, like
/// walk_tiers), else nullopt: never compiles, never takes or waits for a single flight, and counts no miss
/// (the walk that follows a nullopt counts it). Logs misses at kDebug, hits at kInfo.
std::optional<CompiledImage> find_in_tiers(std::span<Store* const> tiers, LogLevel log, const CacheKey& key,
                                           ImageParts parts = ImageParts::kCubin);

/// The persistent tiers below the registry's in-memory images, in lookup order: the local directory (the
/// primary, read-write), then the read-only layers (config.layers, the configured primary if it fell back,
/// the install's prebuilt layer), then the fleet tier when TROPICAL_REMOTE_CACHE (or `remote` in
/// tropical.conf) configures one; they are appended here by the configuration, never by the registry.
/// Thread-safe.
class Tiers {
 public:
  /// The tiers config describes (no layers when the cache is disabled).
  explicit Tiers(const CacheConfig& config);
  /// primary first, then the others in lookup order (for tests and embedders).
  Tiers(std::unique_ptr<LocalStore> primary, std::vector<std::unique_ptr<Store>> others, LogLevel log);
  Tiers(const Tiers&) = delete;
  Tiers& operator=(const Tiers&) = delete;

  /// walk_tiers over every tier.
  CompiledImage get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                               bool* compiled = nullptr, ImageParts parts = ImageParts::kCubin);
  /// find_in_tiers over every tier: is key's image stored anywhere, without compiling.
  std::optional<CompiledImage> find(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// The local directory (what `tropical stats`, `clear` and `info` act on).
  LocalStore& primary() noexcept { return *primary_; }
  /// Every tier, in lookup order (the primary first).
  std::span<Store* const> list() const noexcept { return order_; }
  /// The decision log level.
  LogLevel log() const noexcept { return log_; }

 private:
  std::unique_ptr<LocalStore> primary_;
  std::vector<std::unique_ptr<Store>> others_;
  std::vector<Store*> order_;
  LogLevel log_;
};

}  // namespace tropical::jit
