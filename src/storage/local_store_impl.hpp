#pragma once

// The local store's state, shared by local_store.cpp (lookups, stores, single flight) and
// local_store_open.cpp (opening the directory, the fallback, the lock directory). Not installed.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>

#include "local_directory.hpp"
#include "tropical/storage/atomic_file.hpp"
#include "tropical/storage/local_store.hpp"
#include "tropical/storage/lock_file.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/store_chain.hpp"

namespace tropical::storage {
namespace local_store {

using Clock = std::chrono::steady_clock;

// 256 lock stripes, chosen by the first byte of the key digest.
constexpr std::size_t kStripes = 256;
// Longest wait for the statistics file's lock: counts not published in time wait for the next operation.
constexpr std::chrono::milliseconds kStatsWait{100};

inline std::size_t stripe_index(std::string_view hex_digest) {
  const auto nibble = [](char c) { return static_cast<std::size_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  return nibble(hex_digest[0]) * 16 + nibble(hex_digest[1]);
}

inline std::string lock_name(std::size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "tropical-%02zx.lock", index);
  return name;
}

// Errors that say the directory as a whole cannot take writes; anything else
// (a full disk, a file size limit, one odd entry) may pass and is retried on the next store.
inline bool is_hard(int error) {
  return error == EACCES || error == EPERM || error == EROFS || error == ENOTDIR || error == ENOENT ||
         error == ELOOP;
}

// A stripe lock held as a single flight.
struct StripeFlight final : Flight {
  FileLock lock;
};

}  // namespace local_store

using namespace local_store;

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

  /// Opens config.dir (else the fallback directory, else nothing), warning once about what failed.
  explicit Impl(CacheConfig c);

  // Why the directory cannot be used as the primary; fallback: whether another directory should be tried.
  struct Trouble {
    Problem problem;
    std::string message;
    bool fallback;
  };
  void reset_directory(const std::filesystem::path& to);
  // Opens config.dir; private_only: refuse anything but a 0700 directory of this user (the fallback).
  std::optional<Trouble> open(bool private_only = false);

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

  std::optional<Failure> open_locks();

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
    if (entry.status != EntryStatus::kOk) return entry_miss(entry.status, size);
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
    // A promoted entry is a copy of one a layer keeps: not worth an fsync (milliseconds on some disks) on
    // the first use of a kernel; a crash can at worst leave a torn file, which verification turns into a miss.
    const bool durable = reason != StoreReason::kPromoted;
    if (!failure) failure = durable ? file.sync() : file.close();
    if (!failure) hook(WriteStage::kSynced);
    if (!failure) failure = file.commit();
    if (failure) {
      // Not ours to remove (the library deletes only what it made): say what stands in the entry's place.
      if (failure->error == EISDIR) {
        failure->what = "storing " + key.digest + std::string(local::kEntrySuffix) +
                        ": a directory someone made stands under its name (remove it to store this kernel)";
      }
      report(*failure);
      publish();
      return false;
    }
    count(kBytesWritten, bytes.size());
    forget_evicted(key.digest + std::string(local::kEntrySuffix));
    // The rename is durable only once the directory is synced. But the entry is
    // stored from the rename on, whole and loadable: a failed sync only risks
    // losing it to a crash, which costs a compile. So it is counted, not reported.
    if (durable && ::fsync(dir.get()) != 0) count(kErrors);
    hook(WriteStage::kRenamed);
    publish();
    return true;
  }

  // The entry files this object's evictions removed and that it has not stored again since, the latest
  // kRememberedEvictions of them: how `tropical warm` tells "the cache is too small" (its own stores pushed
  // them out) from "someone else removed them" (a tropical clear, another process's eviction).
  static constexpr std::size_t kRememberedEvictions = 4096;
  mutable std::mutex evicted_mutex;
  std::set<std::string, std::less<>> evicted_names;
  std::deque<std::string> evicted_order;

  void remember_evicted(std::vector<std::string> names) {
    const std::lock_guard lock(evicted_mutex);
    for (auto& file : names) {
      if (!evicted_names.insert(file).second) continue;
      evicted_order.push_back(std::move(file));
      if (evicted_order.size() > kRememberedEvictions) {
        evicted_names.erase(evicted_order.front());
        evicted_order.pop_front();
      }
    }
  }

  void forget_evicted(const std::string& file) {
    const std::lock_guard lock(evicted_mutex);
    if (evicted_names.erase(file) != 0) std::erase(evicted_order, file);
  }

  bool was_evicted(const std::string& file) const {
    const std::lock_guard lock(evicted_mutex);
    return evicted_names.count(file) != 0;
  }

  void evict(const std::string& keep) {
    local::Evicted evicted = local::tidy(dir.get(), config.max_bytes, keep);
    if (evicted.entries == 0) return;
    remember_evicted(std::move(evicted.names));
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

}  // namespace tropical::storage
