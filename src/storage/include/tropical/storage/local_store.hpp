#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tropical/storage/config.hpp"
#include "tropical/storage/key.hpp"
#include "tropical/storage/stats_file.hpp"
#include "tropical/storage/store.hpp"

namespace tropical::storage {

/// What is in the cache directory now.
struct CacheInfo {
  std::filesystem::path dir;    ///< the configured directory
  bool enabled = false;         ///< false if disabled or degraded to memory only
  std::uint64_t entries = 0;    ///< entry files of this user present
  std::uint64_t bytes = 0;      ///< their total size
  std::uint64_t max_bytes = 0;  ///< the eviction limit
};

/// One entry file of this user in the cache directory, as its header describes it.
struct StoredEntry {
  std::string file;             ///< its name in the directory, "<64 hex digits>.entry"
  std::uint64_t bytes = 0;      ///< its size
  std::optional<CacheKey> key;  ///< the key its header names; nullopt if it does not start like our entries
  std::uint32_t format = 0;     ///< the format version the key was written with (0 without a key)
};

/// The primary store: a directory of entries shared by every process of the user on the machine.
///
/// Directory policy: created 0700 if missing; an existing directory of another user is not used, unless it is
/// a team directory (setgid, group-writable, not world-writable, of a group this user is in): there entries
/// are written 0640 and those of the group's members are read (whoever can write the directory can plant
/// code); one writable by others, or by its group without the setgid bit, is read (every entry verified) but
/// never written, with one warning. A directory that cannot be created or written falls back to
/// config.fallback_dir (private, 0700, checked owner) if set, then to memory only, with one warning. On a
/// network file system the statistics file is per host. Entries are 0600 files of this user, written through
/// a temporary file (kTempPrefix), fsync and rename; the library removes only entries of this user, and only
/// temporary files of its own name pattern older than an hour. Size limit: least recently used entries go
/// first.
///
/// Single flight: one lock file per stripe of 256 (locks/tropical-XX.lock, magic header), an fcntl lock after
/// a process mutex; a waiter gives up after config.lock_timeout, compiles on its own without storing, and
/// says once which process held the lock. A bad lock file (FIFO, symlink, foreign) degrades only its stripe.
///
/// All members are thread-safe; none throws on disk problems: an unusable directory degrades to compiling
/// without storing, with at most one warning on stderr per kind of problem per directory per process.
class LocalStore final : public Store {
 public:
  /// Opens (creating it 0700 if needed) config.dir unless disabled; never throws on disk problems.
  explicit LocalStore(CacheConfig config);
  /// Publishes counts not yet in the statistics file (bounded wait) and closes the directory.
  ~LocalStore() override;
  LocalStore(const LocalStore&) = delete;
  LocalStore& operator=(const LocalStore&) = delete;

  /// "local <dir>".
  const std::string& name() const noexcept override;
  /// See Store::lookup; refuses a symlink, FIFO, file of another user or mode, and a file over
  /// kMaxEntryBytes (by its size, unread).
  Lookup lookup(const StoreKey& key, ImageParts parts) override;
  /// True if entries may be written (enabled(): not disabled, not degraded, not refused).
  bool can_store() const noexcept override;
  /// See Store::store; a failure is counted as an error and warned about once per kind.
  bool store(const StoreKey& key, const CompiledImage& image, StoreReason reason) override;
  /// Evicts least recently used entries above the size limit (never key's) and removes our stale temporaries.
  void after_store(const StoreKey& key) override;
  /// The key's lock stripe, waiting at most config.lock_timeout (no wait again for a holder already seen
  /// stuck).
  FlightResult single_flight(const StoreKey& key) override;
  /// See Store::count_miss.
  void count_miss(bool bad) override;
  /// See Store::count_compile.
  void count_compile(std::uint64_t compile_ns) override;

  /// The entry for key, verified (PTX too with kCubinAndPtx, else left empty and unread), or nullopt; never
  /// blocks on a writer; a bad entry counts as an error and a miss.
  std::optional<CompiledImage> load(const CacheKey& key, ImageParts parts = ImageParts::kCubin);
  /// The image for key from this directory alone, else compiled by compile() while holding the key's
  /// single flight (after looking again) and stored; see StoreChain::get_or_compile, which this is for a list of
  /// one store. Exceptions from compile() propagate and nothing is stored.
  CompiledImage get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                               bool* compiled = nullptr, ImageParts parts = ImageParts::kCubin);

  /// Machine-wide counters (the directory's statistics file); zeros when disabled or unusable.
  CacheStats machine_stats() const;
  /// This process's counters, as counted through this object (one per process in normal use).
  CacheStats process_stats() const;
  /// Sets the machine-wide counters and this object's process counters to zero.
  void zero_stats();
  /// Removes the entry for key if it is a file of this user; true if one was removed.
  bool remove(const CacheKey& key);
  /// True if this object's size-limit eviction removed the entry for key and it has not stored it again
  /// since (the latest 4096 evicted entries are remembered): an entry missing for any other reason was
  /// removed by someone else (tropical clear, another process's eviction) or never stored.
  bool evicted(const CacheKey& key) const;
  /// Every entry file of this user (any NVRTC build, format or source) with the key its header names; reads
  /// headers and keys only: nothing is verified, counted or touched (no LRU time). Empty when unusable.
  std::vector<StoredEntry> entries() const;
  /// Removes the entry files of this user whose header names a key for which pick(key) is true, whatever
  /// NVRTC build, format or source made them; a file whose header is not one we read is kept. Returns how
  /// many were removed.
  std::uint64_t remove_if(const std::function<bool(const CacheKey&)>& pick);
  /// Removes every entry of this user and our stale temporary files (never lock or statistics files, never
  /// another tool's files). Returns the number of entries removed.
  std::uint64_t clear();
  /// Directory, state and size.
  CacheInfo info() const;
  /// True if entries are read and written (not disabled, not degraded, not refused; a directory that can no
  /// longer store still serves the entries it finds).
  bool enabled() const noexcept;
  /// The file that holds (or would hold) the entry for key.
  std::filesystem::path entry_path(const CacheKey& key) const;
  /// The configuration this store was opened with (dir is the fallback directory when one is used).
  const CacheConfig& config() const noexcept;
  /// The configured directory when it could not store and the fallback is used instead, else empty.
  const std::filesystem::path& fell_back_from() const noexcept;
  /// See Store::describe: read-write, read-only or unusable and why; this user's entries; machine-wide hits.
  StoreInfo describe() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tropical::storage
