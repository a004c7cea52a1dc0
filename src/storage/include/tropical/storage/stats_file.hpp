#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "tropical/storage/io.hpp"

namespace tropical::storage {

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

/// Index of each CacheStats field in a CounterValues array, in field order.
enum Counter : std::size_t {
  kHits,
  kMisses,
  kCompiles,
  kEvictions,
  kErrors,
  kBytesWritten,
  kBytesRead,
  kCompileNs,
  kLoadNs,
  kCounterCount,
};

/// One value per Counter.
using CounterValues = std::array<std::uint64_t, kCounterCount>;

/// values as a CacheStats.
CacheStats to_stats(const CounterValues& values) noexcept;

/// The machine-wide counters of one cache directory, in a small file with a magic header, updated by
/// read-modify-write under an fcntl lock (bounded wait) and never mapped: a shared mapping of a file that
/// any process of the user can truncate would turn a truncation into SIGBUS in every process that has it
/// mapped, and no check before the access can close that race. A truncated, replaced or foreign file is
/// never rewritten: machine statistics stop (read zeros) and the caller warns. Not thread-safe; the
/// directory descriptor must outlive the object.
class StatsFile {
 public:
  /// The file's name in its directory (the 4 KiB mapped "stats" of earlier versions is left alone).
  static constexpr const char* kName = "tropical.stats";

  StatsFile() = default;
  ~StatsFile();
  StatsFile(const StatsFile&) = delete;
  StatsFile& operator=(const StatsFile&) = delete;

  /// Opens name (kName unless a per-user or per-host name is wanted) in the directory open on dir_fd,
  /// creating it whole if absent (mode as given); waits for the
  /// lock at most max_wait in later calls. Returns what failed (then the object stays unusable).
  std::optional<Failure> open(int dir_fd, std::chrono::milliseconds max_wait, mode_t mode = 0600,
                              std::string name = kName);
  /// True while the file is usable.
  bool valid() const noexcept { return fd_.valid(); }
  /// Adds deltas; false if the lock could not be taken in time (nothing added: retry later) or the file
  /// became unusable (failure() says why).
  bool add(const CounterValues& deltas);
  /// The counters, or nullopt if the lock could not be taken in time or the file is unusable.
  std::optional<CounterValues> read();
  /// Sets every counter to zero; false as for add().
  bool zero();
  /// Why the file is unusable, once valid() is false after a successful open.
  const std::optional<Failure>& failure() const noexcept { return failure_; }

 private:
  enum class Update { kAdd, kRead, kZero };
  bool update(Update how, const CounterValues* deltas, CounterValues* out);
  /// After a write under the lock: true if the file still reads as ours; else
  /// it was truncated or overwritten meanwhile, and an extension that our write
  /// made past a truncation is cut back (the file is left empty, as truncated).
  bool still_whole();
  std::optional<Failure> open_existing();
  void close_file() noexcept;

  int dir_ = -1;
  std::string name_ = kName;
  Fd fd_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::chrono::milliseconds max_wait_{0};
  std::optional<Failure> failure_;
};

/// One store's counters: this process's, in lock-free atomics, and the machine-wide ones in its StatsFile, to
/// which the counts are published after each operation; counts that cannot be published in time (the file's
/// lock busy) wait for the next publish(). Thread-safe.
class StoreCounters {
 public:
  /// Opens the statistics file (see StatsFile::open); without it, only process counters are kept.
  std::optional<Failure> open(int dir_fd, std::chrono::milliseconds max_wait, mode_t mode = 0600,
                              std::string name = StatsFile::kName);
  /// Adds n to counter, for the process and (at the next publish) the machine.
  void count(Counter counter, std::uint64_t n = 1) noexcept;
  /// Adds what was counted since the last publish to the file. Returns why machine-wide counting stopped,
  /// the one time it stops (the file truncated, replaced by a foreign one, unwritable), else nullopt.
  std::optional<Failure> publish();
  /// This process's counters.
  CounterValues process() const noexcept;
  /// The machine-wide counters after a publish, or zeros without a usable file.
  CounterValues machine();
  /// Sets the process counters, the unpublished counts and the file's counters to zero.
  void zero();

 private:
  std::array<std::atomic<std::uint64_t>, kCounterCount> process_{};
  std::array<std::atomic<std::uint64_t>, kCounterCount> pending_{};
  std::atomic<bool> machine_wide_{false};
  std::mutex mutex_;
  StatsFile file_;  // guarded by mutex_
};

}  // namespace tropical::storage
