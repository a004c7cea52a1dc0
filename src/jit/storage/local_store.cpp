#include "tropical/jit/storage/local_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <stdexcept>

#include "local_directory.hpp"
#include "tropical/jit/storage/atomic_file.hpp"
#include "tropical/jit/storage/lock_file.hpp"
#include "tropical/jit/storage/log.hpp"
#include "tropical/jit/storage/tiers.hpp"

namespace tropical::jit {
namespace {

using Clock = std::chrono::steady_clock;

// 256 lock stripes, chosen by the first byte of the key digest.
constexpr std::size_t kStripes = 256;
// Longest wait for the statistics file's lock: counts not published in time wait for the next operation.
constexpr std::chrono::milliseconds kStatsWait{100};

std::size_t stripe_index(std::string_view hex_digest) {
  const auto nibble = [](char c) { return static_cast<std::size_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  return nibble(hex_digest[0]) * 16 + nibble(hex_digest[1]);
}

std::string lock_name(std::size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "tropical-%02zx.lock", index);
  return name;
}

// Errors that say the directory as a whole cannot take writes; anything else
// (a full disk, a file size limit, one odd entry) may pass and is retried on the next store.
bool is_hard(int error) {
  return error == EACCES || error == EPERM || error == EROFS || error == ENOTDIR || error == ENOENT ||
         error == ELOOP;
}

// A stripe lock held as a single flight.
struct StripeFlight final : Flight {
  FileLock lock;
};

}  // namespace

struct LocalStore::Impl {
  CacheConfig config;
  std::string name;
  Fd dir;    // the cache directory; invalid when it could not be used at all
  Fd locks;  // <dir>/locks
  dev_t locks_dev = 0;
  ino_t locks_ino = 0;
  std::atomic<bool> writable{false};
  std::array<std::atomic<std::mutex*>, kStripes> stripe_mutexes{};
  // The holder last seen keeping a stripe past the bound: not waited for again.
  std::array<std::atomic<pid_t>, kStripes> stuck{};
  StoreCounters counters;

  bool team = false;  // a setgid group directory: entries 0640, read from members of its group
  gid_t group = 0;
  std::string network;  // the network file system under the directory, or ""

  explicit Impl(CacheConfig c) : config(std::move(c)), name("local " + config.dir.string()) {
    if (!config.enabled) return;
    const std::optional<Trouble> trouble = open();
    if (!trouble) return;
    // A directory that cannot take entries (a read-only file system, an unwritable parent) gives way to a
    // private one, so that a container's first run is not every run's.
    if (trouble->fallback && config.fallback_dir && *config.fallback_dir != config.dir) {
      const std::filesystem::path original = config.dir;
      reset_directory(*config.fallback_dir);
      const std::optional<Trouble> second = open(true);
      const std::string first = "disk cache " + (original.empty() ? "(none)" : original.string()) + " " +
                                trouble->message;
      if (!second) {
        fell_back_from = original;
        warn_once(Problem::kFallback, original.string(),
                  "tropical: warning: " + first + "; using " + config.dir.string() + " instead\n");
        return;
      }
      reset_directory(config.dir);
      warn_once(Problem::kFallback, original.string(),
                "tropical: warning: " + first + ", and " + config.dir.string() + " " + second->message +
                    "; continuing with compiled images in memory only\n");
      return;
    }
    warn(trouble->problem, trouble->message);
  }

  // Why the directory cannot be used as the primary; fallback: whether another directory should be tried.
  struct Trouble {
    Problem problem;
    std::string message;
    bool fallback;
  };

  void reset_directory(const std::filesystem::path& to) {
    dir.reset();
    locks.reset();
    writable = false;
    config.dir = to;
    name = "local " + to.string();
  }

  // Opens config.dir; private: refuse anything but a 0700 directory of this user (the fallback).
  std::optional<Trouble> open(bool private_only = false) {
    if (config.dir.empty()) {
      return Trouble{Problem::kUnusable, "unusable (no directory: set TROPICAL_CACHE_DIR or HOME)", true};
    }
    local::Directory opened = local::open_directory(config.dir);
    if (opened.unusable) {
      return Trouble{Problem::kUnusable, "unusable (" + opened.unusable->reason() + "); continuing without it",
                     true};
    }
    struct stat st {};
    if (private_only && (::fstat(opened.fd.get(), &st) != 0 || (st.st_mode & 077) != 0 || opened.team)) {
      return Trouble{Problem::kUnusable, "is not a private 0700 directory of this user", true};
    }
    dir = std::move(opened.fd);
    team = opened.team;
    group = opened.group;
    network = opened.network;
    if (opened.refused) {
      return Trouble{Problem::kReadOnly,
                     "cannot store entries (" + *opened.refused +
                         "); entries already there are still read and verified",
                     false};
    }
    if (auto failure = open_locks()) {
      // Entries may still be read (a read-only cache), but nothing can be stored.
      return Trouble{Problem::kReadOnly,
                     "cannot store entries (" + failure->reason() + "); continuing with the entries already there",
                     is_hard(failure->error)};
    }
    writable = true;
    if (auto failure = counters.open(dir.get(), kStatsWait, 0600, local::stats_file_name(team, network))) {
      count(kErrors);
      warn(Problem::kNoMachineStats, "has no machine-wide statistics (" + failure->reason() + ")");
    }
    return std::nullopt;
  }

  std::filesystem::path fell_back_from;  // the configured directory, when the fallback is used

  ~Impl() { publish(); }

  void warn(Problem problem, const std::string& message) const {
    warn_once(problem, config.dir.string(),
              "tropical: warning: disk cache " + config.dir.string() + " " + message + "\n");
  }

  void warn_read_only(const Failure& failure) const {
    warn(Problem::kReadOnly,
         "cannot store entries (" + failure.reason() + "); continuing with the entries already there");
  }

  std::optional<Failure> open_locks() {
    // In a team directory each user has a lock directory: lock files stay of their user.
    const std::string locks_name = team ? "locks." + std::to_string(::geteuid()) : "locks";
    if (::mkdirat(dir.get(), locks_name.c_str(), 0700) != 0 && errno != EEXIST) {
      return Failure{"creating the lock directory", errno};
    }
    locks.reset(::openat(dir.get(), locks_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!locks.valid()) return Failure{"opening the lock directory", errno};
    struct stat st {};
    if (::fstat(locks.get(), &st) != 0) return Failure{"checking the lock directory", errno};
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return Failure{"the lock directory belongs to another user or is writable by others", EPERM};
    }
    locks_dev = st.st_dev;
    locks_ino = st.st_ino;
    return std::nullopt;
  }

  void count(Counter counter, std::uint64_t n = 1) noexcept { counters.count(counter, n); }

  void publish() {
    if (auto failure = counters.publish()) {
      warn(Problem::kNoMachineStats, "has no machine-wide statistics (" + failure->reason() + ")");
    }
  }

  // Counts the failure, warns once, and stops writing if the directory cannot take writes.
  void report(const Failure& failure) {
    count(kErrors);
    if (is_hard(failure.error)) {
      writable = false;
      warn_read_only(failure);
    } else {
      warn(Problem::kStoreFailed,
           "cannot store an entry (" + failure.reason() + "); continuing, compiled images stay in memory");
    }
  }

  void hook(WriteStage stage) const {
    if (config.test_hook) config.test_hook(stage);
  }

  std::mutex& stripe_mutex(std::size_t index) {
    std::mutex* mutex = stripe_mutexes[index].load(std::memory_order_acquire);
    if (mutex == nullptr) {
      mutex = &process_lock_mutex(locks_dev, locks_ino, index);
      stripe_mutexes[index].store(mutex, std::memory_order_release);
    }
    return *mutex;
  }

  Lookup refused(std::string why) const { return Lookup{std::nullopt, Miss::kRefused, std::move(why)}; }

  // Reads and verifies one entry through a single descriptor: an eviction
  // that unlinks the file meanwhile cannot take the bytes away.
  Lookup read(const StoreKey& key, ImageParts parts) {
    if (!dir.valid()) return Lookup{std::nullopt, Miss::kUnavailable, "disabled or unusable"};
    const auto start = Clock::now();
    const std::string file = key.digest + std::string(local::kEntrySuffix);
    // O_NONBLOCK: a FIFO planted under the entry's name must not block the reader.
    Fd fd(::openat(dir.get(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd.valid()) {
      if (errno == ENOENT) {
        if (config.log == LogLevel::kOff) return Lookup{};
        std::string why = local::explain_absence(dir.get(), key.key);
        return Lookup{std::nullopt, why.empty() ? Miss::kNoEntry : Miss::kOtherIdentity, std::move(why)};
      }
      return refused(errno == ELOOP ? "a symbolic link under the entry's name"
                                    : "opening the entry: " + error_text(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return refused("checking the entry: " + error_text(errno));
    if (!S_ISREG(st.st_mode)) return refused("not a regular file under the entry's name");
    if (auto why = local::refuse_entry(st, team, group)) return refused(std::move(*why));
    const auto size = static_cast<std::uint64_t>(st.st_size);
    EntryRead entry = read_entry(fd.get(), size, key.serialized, parts);
    switch (entry.status) {
      case EntryStatus::kOk:
        break;
      case EntryStatus::kTooLarge:
        return Lookup{std::nullopt, Miss::kTooLarge,
                      "entry of " + std::to_string(size) + " bytes, over the bound of " +
                          std::to_string(kMaxEntryBytes)};
      case EntryStatus::kCorrupt:
        return Lookup{std::nullopt, Miss::kCorrupt,
                      "corrupt entry (truncated, extended or a checksum mismatch)"};
      case EntryStatus::kOtherFormat:
        return Lookup{std::nullopt, Miss::kOtherFormat, "entry of another format version"};
      case EntryStatus::kOtherKey:
        return Lookup{std::nullopt, Miss::kOtherKey, "entry of another key under this key's name"};
    }
    // Least-recently-used means recently read: a hit refreshes the mtime that
    // eviction sorts by. A read-only cache cannot, and still serves hits.
    ::futimens(fd.get(), nullptr);
    count(kHits);
    count(kBytesRead, entry.bytes_read);
    count(kLoadNs, nanoseconds_since(start));
    publish();
    return Lookup{std::move(entry.image), Miss::kNoEntry, {}};
  }

  bool write(const StoreKey& key, const CompiledImage& image, StoreReason reason) {
    if (!dir.valid() || !writable) return false;
    if (reason == StoreReason::kCompiled) hook(WriteStage::kCompiled);
    std::vector<std::uint8_t> bytes;
    try {
      bytes = encode_entry(key.serialized, image);
    } catch (const std::length_error&) {
      report(Failure{"storing an entry larger than " + std::to_string(kMaxEntryBytes >> 20) + " MiB", EFBIG});
      publish();
      return false;
    }
    // A failure means that no entry was stored: nothing reaches the entry's name before the rename.
    AtomicFile file(dir.get(), key.digest + std::string(local::kEntrySuffix));
    std::optional<Failure> failure = file.create(team ? 0640 : 0600);
    if (!failure) failure = file.write(bytes.data(), bytes.size());
    if (!failure) hook(WriteStage::kTempWritten);
    if (!failure) failure = file.sync();
    if (!failure) hook(WriteStage::kSynced);
    if (!failure) failure = file.commit();
    if (failure) {
      report(*failure);
      publish();
      return false;
    }
    count(kBytesWritten, bytes.size());
    // The rename is durable only once the directory is synced. But the entry is
    // stored from the rename on, whole and loadable: a failed sync only risks
    // losing it to a crash, which costs a compile. So it is counted, not reported.
    if (::fsync(dir.get()) != 0) count(kErrors);
    hook(WriteStage::kRenamed);
    publish();
    return true;
  }

  void evict(const std::string& keep) {
    local::remove_stale_temps(dir.get());
    const local::Evicted evicted = local::evict_least_recently_used(dir.get(), config.max_bytes, keep);
    if (evicted.entries == 0) return;
    count(kEvictions, evicted.entries);
    publish();
    log_line(config.log, LogLevel::kInfo,
             name + ": evicted " + std::to_string(evicted.entries) + " entries (" +
                 std::to_string(evicted.bytes) + " bytes) to stay under " + std::to_string(config.max_bytes) +
                 " bytes");
  }

  FlightResult flight(const StoreKey& key) {
    if (!dir.valid() || !writable) return {FlightResult::State::kNone, nullptr, "cannot store"};
    const std::size_t index = stripe_index(key.digest);
    const std::string lock_file = lock_name(index);
    auto held = std::make_unique<StripeFlight>();
    const pid_t seen_stuck = stuck[index].load();
    const auto deadline = Clock::now() + (seen_stuck != 0 ? Clock::duration::zero() : config.lock_timeout);
    switch (held->lock.lock(stripe_mutex(index), locks.get(), lock_file, deadline)) {
      case LockResult::kLocked:
        stuck[index] = 0;
        hook(WriteStage::kLocked);
        return {FlightResult::State::kLeader, std::move(held), {}};
      case LockResult::kTimedOut: {
        const pid_t holder = held->lock.holder();
        std::string who = holder == 0            ? "another process"
                          : holder == ::getpid() ? "another thread of this process"
                                                 : "process " + std::to_string(holder);
        stuck[index] = holder != 0 ? holder : -1;
        if (seen_stuck == 0) {
          warn_once(Problem::kLockTimeout, config.dir.string() + " " + lock_file + " " + who,
                    "tropical: warning: disk cache " + config.dir.string() + ": " + who + " held lock " +
                        lock_file + " for more than " + std::to_string(config.lock_timeout.count()) +
                        " ms (stopped or stuck?); compiling without it, and without storing\n");
        }
        return {FlightResult::State::kTimedOut, nullptr, who + " holds lock " + lock_file};
      }
      case LockResult::kUnusable:
        break;
    }
    const Failure& failure = held->lock.failure();
    if (held->lock.bad_file()) {
      count(kErrors);
      warn_once(Problem::kBadLockFile, config.dir.string() + " " + lock_file,
                "tropical: warning: disk cache " + config.dir.string() + ": " + failure.reason() +
                    "; kernels of this lock stripe are compiled without storing\n");
    } else {
      report(failure);
    }
    publish();
    return {FlightResult::State::kNone, nullptr, failure.reason()};
  }
};

LocalStore::LocalStore(CacheConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

LocalStore::~LocalStore() = default;

const std::string& LocalStore::name() const noexcept { return impl_->name; }

Lookup LocalStore::lookup(const StoreKey& key, ImageParts parts) { return impl_->read(key, parts); }

bool LocalStore::can_store() const noexcept { return enabled(); }

bool LocalStore::store(const StoreKey& key, const CompiledImage& image, StoreReason reason) {
  return impl_->write(key, image, reason);
}

void LocalStore::after_store(const StoreKey& key) {
  if (impl_->dir.valid()) impl_->evict(key.digest + std::string(local::kEntrySuffix));
}

FlightResult LocalStore::single_flight(const StoreKey& key) { return impl_->flight(key); }

void LocalStore::count_miss(bool bad) {
  impl_->count(kMisses);
  if (bad) impl_->count(kErrors);
  impl_->publish();
}

void LocalStore::count_compile(std::uint64_t compile_ns) {
  impl_->count(kCompiles);
  impl_->count(kCompileNs, compile_ns);
  impl_->publish();
}

std::optional<CompiledImage> LocalStore::load(const CacheKey& key, ImageParts parts) {
  const StoreKey store_key(key);
  Lookup found = lookup(store_key, parts);
  if (!found.image) count_miss(found.bad());
  return std::move(found.image);
}

CompiledImage LocalStore::get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                                         bool* compiled, ImageParts parts) {
  Store* const tiers[] = {this};
  return walk_tiers(tiers, impl_->config.log, key, compile, compiled, parts);
}

CacheStats LocalStore::machine_stats() const {
  impl_->publish();
  return to_stats(impl_->counters.machine());
}

CacheStats LocalStore::process_stats() const { return to_stats(impl_->counters.process()); }

void LocalStore::zero_stats() { impl_->counters.zero(); }

bool LocalStore::remove(const CacheKey& key) {
  return impl_->dir.valid() &&
         local::remove_own_file(impl_->dir.get(), key.digest() + std::string(local::kEntrySuffix));
}

std::uint64_t LocalStore::clear() {
  Impl& s = *impl_;
  if (!s.dir.valid()) return 0;
  std::uint64_t removed = 0;
  for (const auto& entry : local::list_entries(s.dir.get())) {
    if (::unlinkat(s.dir.get(), entry.name.c_str(), 0) == 0) ++removed;
  }
  local::remove_stale_temps(s.dir.get());
  return removed;
}

CacheInfo LocalStore::info() const {
  const Impl& s = *impl_;
  CacheInfo info;
  info.dir = s.config.dir;
  info.enabled = enabled();
  info.max_bytes = s.config.max_bytes;
  if (s.dir.valid()) {
    for (const auto& entry : local::list_entries(s.dir.get())) {
      ++info.entries;
      info.bytes += entry.size;
    }
  }
  return info;
}

bool LocalStore::enabled() const noexcept { return impl_->dir.valid() && impl_->writable.load(); }

std::filesystem::path LocalStore::entry_path(const CacheKey& key) const {
  return impl_->config.dir / (key.digest() + std::string(local::kEntrySuffix));
}

const CacheConfig& LocalStore::config() const noexcept { return impl_->config; }

const std::filesystem::path& LocalStore::fell_back_from() const noexcept { return impl_->fell_back_from; }

TierInfo LocalStore::describe() const {
  const Impl& s = *impl_;
  const CacheInfo i = info();
  TierInfo out;
  out.kind = "local";
  out.location = s.config.dir.string();
  out.usable = s.dir.valid();
  out.writable = enabled();
  out.status = !s.config.enabled ? "disabled"
               : !out.usable     ? "unusable"
               : out.writable    ? "read-write"
                                 : "read-only";
  if (s.team) out.status += ", team directory (group " + std::to_string(s.group) + ")";
  if (!s.network.empty()) out.status += ", on " + s.network + " (statistics per host)";
  if (!s.fell_back_from.empty()) out.status += ", fallback for " + s.fell_back_from.string();
  out.entries = i.entries;
  out.bytes = i.bytes;
  const CacheStats stats = machine_stats();
  out.hits = stats.hits;
  out.misses = stats.misses;
  return out;
}

}  // namespace tropical::jit
