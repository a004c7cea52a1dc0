#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "tropical/storage/config_file.hpp"
#include "tropical/storage/log.hpp"

namespace tropical::storage {

/// The size limit when none is configured: 1 GiB.
inline constexpr std::uint64_t kDefaultCacheMaxBytes = std::uint64_t{1} << 30;

/// How long a process waits for another one's compile of the same lock stripe when nothing else is
/// configured: 30 s, some 20 times the longest compile of the catalog (1.3 s for a tuned kernel on an H100
/// host) and still short enough that a stopped or stuck holder costs a person one noticeable pause.
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{30'000};

/// Stages of writing an entry, reported to CacheConfig::test_hook (crash tests).
enum class WriteStage { kLocked, kCompiled, kTempWritten, kSynced, kRenamed };

/// Where the cache lives, how large it may grow, how long a waiter waits, and what it logs.
struct CacheConfig {
  std::filesystem::path dir;                                     ///< entries live here
  std::uint64_t max_bytes = kDefaultCacheMaxBytes;               ///< LRU eviction above this
  bool enabled = true;                                           ///< false: no disk store at all
  std::chrono::milliseconds lock_timeout = kDefaultLockTimeout;  ///< longest wait for another compile
  LogLevel log = LogLevel::kOff;                                 ///< decision log on stderr
  std::vector<std::filesystem::path> layers;                     ///< read-only layers after the primary
  bool prebuilt_layer = true;                                    ///< the install's layer comes last
  std::optional<std::filesystem::path> fallback_dir;             ///< primary if dir cannot store; none: none
  ConfigFile file;  ///< <dir>/tropical.conf as from_env() read it (every key, unknown ones too); else empty
  std::function<void(WriteStage)> test_hook;                     ///< called at each write stage (tests only)

  /// $TROPICAL_CACHE_DIR, else $XDG_CACHE_HOME/tropical, else ~/.cache/tropical;
  /// TROPICAL_CACHE_MAX_SIZE: a size as parse_size() reads it; TROPICAL_LOCK_TIMEOUT: a duration as
  /// parse_duration() reads it; a malformed value gives one warning on stderr per value per process and the
  /// default; TROPICAL_CACHE_DISABLE set to anything but "", 0, false, no or off disables; TROPICAL_LOG=info
  /// or debug turns the decision log on; TROPICAL_CACHE_LAYERS: a colon list of absolute directories (set,
  /// even empty, it replaces the file's `layers`). Then <dir>/tropical.conf (see config_file.hpp) supplies
  /// max_size and layers that the environment does not set. fallback_dir is $TMPDIR/tropical-<uid> (else
  /// /tmp/...). Never throws for what the environment or the file holds.
  static CacheConfig from_env();
};

/// A whole number of bytes, optionally followed by K, M, G or T, alone or with B or iB (KB, KiB, ...), in any
/// case, every one a power of 1024 (1KB = 1KiB = 1024 bytes); nullopt for anything else (signs, spaces,
/// fractions, a value over 2^64 - 1). Shared by the environment and the configuration file.
std::optional<std::uint64_t> parse_size(std::string_view text) noexcept;

/// A whole number of seconds, or of milliseconds followed by "ms", or of seconds followed by "s"; nullopt for
/// anything else or more than a day.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept;

/// The directories of a colon list (empty items skipped); a relative one is skipped with one warning naming
/// source.
std::vector<std::filesystem::path> parse_layers(std::string_view text, std::string_view source);

}  // namespace tropical::storage
