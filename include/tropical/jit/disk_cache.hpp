#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tropical/jit/nvrtc.hpp"

namespace tropical::jit {

/// Version of the on-disk entry format; part of every key.
inline constexpr std::uint32_t kCacheFormatVersion = 2;

/// Everything that determines a compiled image. Its SHA-256 names the entry;
/// the full serialized key is stored in the entry and compared on load.
struct CacheKey {
  std::string kernel_name;           ///< symbol of the kernel
  std::string source_digest;         ///< hex SHA-256 of the fragment
  std::vector<std::string> options;  ///< NVRTC options, in order
  int arch = 0;                      ///< target sm_XY as 10 * major + minor
  std::string compiler;              ///< nvrtc_identity()

  /// Canonical, unambiguous bytes of every field plus kCacheFormatVersion.
  std::string serialize() const;
  /// Hex SHA-256 of serialize(): the entry's file name.
  std::string digest() const;
};

/// What a disk hit reads and returns: the CUBIN alone (the start-up path; PTX left empty), or CUBIN and PTX.
enum class ImageParts { kCubin, kCubinAndPtx };

/// The size limit when none is configured: 1 GiB.
inline constexpr std::uint64_t kDefaultCacheMaxBytes = std::uint64_t{1} << 30;

/// Stages of writing an entry, reported to CacheConfig::test_hook (crash tests).
enum class WriteStage { kLocked, kCompiled, kTempWritten, kSynced, kRenamed };

/// Where the cache lives and how large it may grow.
struct CacheConfig {
  std::filesystem::path dir;                        ///< entries live here
  std::uint64_t max_bytes = kDefaultCacheMaxBytes;  ///< LRU eviction above this
  bool enabled = true;                              ///< false: no disk tier at all
  std::function<void(WriteStage)> test_hook;        ///< called at each write stage (tests only)

  /// $TROPICAL_CACHE_DIR, else $XDG_CACHE_HOME/tropical, else ~/.cache/tropical;
  /// TROPICAL_CACHE_MAX_SIZE: a whole number of bytes, optionally followed by K, M, G or T,
  /// alone or with B or iB (KB, KiB, ...), in any case, every one a power of 1024
  /// (1KB = 1KiB = 1024 bytes); a malformed or too large value gives one warning on
  /// stderr per value per process and the default kDefaultCacheMaxBytes;
  /// TROPICAL_CACHE_DISABLE set to anything but "", 0, false, no or off disables.
  /// Never throws for what the environment holds.
  static CacheConfig from_env();
};

/// Counters of cache activity, for the process or the whole machine.
struct CacheStats {
  std::uint64_t hits = 0;           ///< entries loaded and verified
  std::uint64_t misses = 0;         ///< lookups that found no usable entry
  std::uint64_t compiles = 0;       ///< images compiled to fill a miss
  std::uint64_t evictions = 0;      ///< entries removed by the size limit
  std::uint64_t errors = 0;         ///< corrupt/foreign entries and I/O failures
  std::uint64_t bytes_written = 0;  ///< entry bytes written
  std::uint64_t bytes_read = 0;     ///< entry bytes read on hits (no PTX bytes for a kCubin hit)
  std::uint64_t compile_ns = 0;     ///< time spent in compile callbacks
  std::uint64_t load_ns = 0;        ///< time spent reading and verifying hits
};

/// What is in the cache directory now.
struct CacheInfo {
  std::filesystem::path dir;  ///< the configured directory
  bool enabled = false;       ///< false if disabled or degraded to memory only
  std::uint64_t entries = 0;  ///< entry files present
  std::uint64_t bytes = 0;    ///< their total size
  std::uint64_t max_bytes = 0;  ///< the eviction limit
};

/// Persistent store of compiled images shared by every process of the user on
/// the machine. All members are thread-safe; none throws on disk problems:
/// an unusable directory degrades to compiling without storing, with at most
/// one warning on stderr per kind of problem per directory per process.
class DiskCache {
 public:
  /// Opens (creating it 0700 if needed) config.dir unless disabled; never throws on disk problems.
  explicit DiskCache(CacheConfig config);
  /// Releases the mapping of the statistics file and the directory descriptors. No lock
  /// outlives a call: each lock file is opened when its lock is taken and closed to release it.
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  /// The entry for key with its header, key and CUBIN verified, and its PTX too
  /// with kCubinAndPtx (with kCubin the PTX comes back empty and unread, so damage
  /// to the PTX bytes alone goes unseen), or nullopt; never blocks on a writer,
  /// and a bad entry counts as an error and a miss.
  std::optional<CompiledImage> load(const CacheKey& key, ImageParts parts = ImageParts::kCubin);

  /// The image for key: from disk with the given parts as load() returns them,
  /// or whole (PTX included) from compile() run while holding the key's
  /// cross-process lock (after looking again), then stored. While the cache can
  /// store, one caller machine-wide compiles a key at a time and the others wait
  /// and read; when it cannot (disabled, degraded, read-only, or the key's lock
  /// cannot be taken) each caller that misses compiles on its own, without waiting
  /// and without storing. Sets *compiled to whether this call compiled. Exceptions
  /// from compile() propagate and nothing is stored. compile() must not call back into this cache.
  CompiledImage get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                               bool* compiled = nullptr, ImageParts parts = ImageParts::kCubin);

  /// Machine-wide counters (kept in the cache directory); zeros when disabled.
  CacheStats machine_stats() const;
  /// This process's counters, as counted through this object (one per process in normal use).
  CacheStats process_stats() const;
  /// Removes every entry (not the lock files, not the statistics) and temporary
  /// files older than an hour. Returns the number of entries removed.
  std::uint64_t clear();
  /// Removes the entry for key, if there is one; returns whether a file was removed.
  bool remove(const CacheKey& key);
  /// Sets this process's and the machine-wide counters to zero (other processes'
  /// own process counters are untouched).
  void zero_stats();
  /// Directory, state and size.
  CacheInfo info() const;
  /// True if entries are read and written (not disabled, not degraded; a cache
  /// that can no longer store still serves the entries it finds).
  bool enabled() const noexcept;
  /// The file that holds (or would hold) the entry for key.
  std::filesystem::path entry_path(const CacheKey& key) const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace tropical::jit
