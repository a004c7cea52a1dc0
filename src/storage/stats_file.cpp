#include "tropical/storage/stats_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/detail/os_file_functions.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "tropical/storage/atomic_file.hpp"
#include "tropical/storage/lock_file.hpp"

namespace tropical::storage {
namespace {

using Clock = std::chrono::steady_clock;

// Layout, little-endian: magic[8] | u32 layout version | u32 counter count | u64 counter[count].
constexpr char kMagic[8] = {'T', 'R', 'O', 'P', 'S', 'T', 'A', 'T'};
constexpr std::uint32_t kLayout = 1;
constexpr std::size_t kHeaderSize = 16;
constexpr std::size_t kRecordSize = kHeaderSize + 8 * kCounterCount;
// The statistics file's process mutex, apart from the lock stripes' indices.
constexpr std::size_t kMutexIndex = std::numeric_limits<std::size_t>::max();

using Record = std::array<unsigned char, kRecordSize>;

Record encode(const CounterValues& values) {
  Record r{};
  std::memcpy(r.data(), kMagic, sizeof kMagic);
  for (int i = 0; i < 4; ++i) r[8 + i] = static_cast<unsigned char>(kLayout >> (8 * i));
  for (int i = 0; i < 4; ++i) r[12 + i] = static_cast<unsigned char>(std::uint32_t{kCounterCount} >> (8 * i));
  for (std::size_t c = 0; c < kCounterCount; ++c) {
    for (int i = 0; i < 8; ++i) r[kHeaderSize + 8 * c + i] = static_cast<unsigned char>(values[c] >> (8 * i));
  }
  return r;
}

std::optional<CounterValues> decode(const Record& r) {
  if (std::memcmp(encode({}).data(), r.data(), kHeaderSize) != 0) return std::nullopt;
  CounterValues values{};
  for (std::size_t c = 0; c < kCounterCount; ++c) {
    for (int i = 0; i < 8; ++i) values[c] |= std::uint64_t{r[kHeaderSize + 8 * c + i]} << (8 * i);
  }
  return values;
}

}  // namespace

CacheStats to_stats(const CounterValues& v) noexcept {
  return CacheStats{v[kHits],         v[kMisses],    v[kCompiles],  v[kEvictions], v[kErrors],
                    v[kBytesWritten], v[kBytesRead], v[kCompileNs], v[kLoadNs]};
}

StatsFile::~StatsFile() { close_file(); }

std::optional<Failure> StatsFile::open(int dir_fd, std::chrono::milliseconds max_wait, mode_t mode,
                                       std::string name) {
  dir_ = dir_fd;
  name_ = std::move(name);
  max_wait_ = max_wait;
  failure_.reset();
  if (auto failure = open_existing(); !failure || failure->error != ENOENT) return failure;
  // Created whole (magic and zeros, then linked into place), so that no
  // process ever sees a statistics file without its header.
  AtomicFile file(dir_fd, name_);
  const Record zeros = encode({});
  std::optional<Failure> made = file.create(mode);
  if (!made) made = file.write(zeros.data(), zeros.size());
  if (!made) made = file.sync();
  if (!made) made = file.commit_if_absent();
  if (made && made->error != EEXIST) return made;
  return open_existing();
}

std::optional<Failure> StatsFile::open_existing() {
  Fd fd(::openat(dir_, name_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return Failure{"opening the statistics file", errno};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Failure{"checking the statistics file", errno};
  Record record{};
  // Why it is not ours, in words (an errno would read "Protocol error"); error 0: the reason says it all.
  const std::string file = "the statistics file " + name_;
  if (!S_ISREG(st.st_mode))
    return Failure{file + (S_ISFIFO(st.st_mode) ? " is a FIFO" : " is not a regular file") + "; left alone", 0};
  if (st.st_uid != ::geteuid())
    return Failure{file + " belongs to uid " + std::to_string(st.st_uid) + "; left alone", 0};
  if (st.st_size != static_cast<off_t>(kRecordSize))
    return Failure{file + (st.st_size == 0 ? " is empty" : " is " + std::to_string(st.st_size) + " bytes, not " +
                                                               std::to_string(kRecordSize)) + "; left alone", 0};
  if (read_at(fd.get(), record.data(), record.size(), 0) != 0 || !decode(record))
    return Failure{file + " is not of this layout; left alone", 0};
  fd_ = std::move(fd);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return std::nullopt;
}

// Closing any descriptor of a file drops every fcntl lock this process holds
// on it, so no descriptor of the statistics file is closed while another
// thread of the process may hold the lock through its own.
void StatsFile::close_file() noexcept {
  if (!fd_.valid()) return;
  std::lock_guard lock(process_lock_mutex(dev_, ino_, kMutexIndex));
  fd_.reset();
}

bool StatsFile::add(const CounterValues& deltas) { return update(Update::kAdd, &deltas, nullptr); }

std::optional<CounterValues> StatsFile::read() {
  CounterValues values{};
  if (!update(Update::kRead, nullptr, &values)) return std::nullopt;
  return values;
}

bool StatsFile::zero() { return update(Update::kZero, nullptr, nullptr); }

// The lock is advisory: a truncation by someone who does not take it can come
// between update()'s read and its write, which would then extend the file
// again (a hole where the header was, the counters after it). Checked after
// the write: a file that no longer reads as ours is left as the truncation
// made it, that is, cut back to empty if its header is the hole we made.
bool StatsFile::still_whole() {
  Record record{};
  if (read_at(fd_.get(), record.data(), record.size(), 0) == 0 && decode(record)) return true;
  struct stat st {};
  const bool hole = ::fstat(fd_.get(), &st) == 0 && st.st_size == static_cast<off_t>(kRecordSize) &&
                    read_at(fd_.get(), record.data(), kHeaderSize, 0) == 0 &&
                    std::all_of(record.begin(), record.begin() + kHeaderSize, [](unsigned char b) { return b == 0; });
  if (hole) (void)::ftruncate(fd_.get(), 0);
  return false;
}

bool StatsFile::update(Update how, const CounterValues* deltas, CounterValues* out) {
  if (!fd_.valid()) return false;
  // Replaced by someone: count into the file that has the name now, if it is
  // one of ours. Removed (the whole directory, say): keep the file we have open.
  struct stat named {};
  if (::fstatat(dir_, name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
      (named.st_dev != dev_ || named.st_ino != ino_)) {
    close_file();
    if (auto failure = open_existing()) {
      failure_ = failure;
      return false;
    }
  }
  const auto deadline = Clock::now() + max_wait_;
  std::mutex& mutex = process_lock_mutex(dev_, ino_, kMutexIndex);
  if (!lock_until(mutex, deadline)) return false;
  std::unique_lock mutex_lock(mutex, std::adopt_lock);
  // Polled, never F_SETLKW: a holder stopped with SIGSTOP costs a waiter at most max_wait.
  auto backoff = std::chrono::microseconds(50);
  for (;;) {
    bool acquired = false;
    if (!boost::interprocess::ipcdetail::try_acquire_file_lock(fd_.get(), acquired) && errno != EINTR) {
      failure_ = Failure{"locking the statistics file", errno};
      mutex_lock.unlock();
      close_file();
      return false;
    }
    if (acquired) break;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(5));
  }
  Record record{};
  std::optional<CounterValues> values;
  if (read_at(fd_.get(), record.data(), record.size(), 0) == 0) values = decode(record);
  bool done = false;
  if (!values) {
    // Truncated or overwritten by someone: never rewritten, statistics stop.
    failure_ = Failure{"the statistics file was truncated or overwritten", 0};
  } else {
    if (how == Update::kAdd) {
      for (std::size_t c = 0; c < kCounterCount; ++c) (*values)[c] += (*deltas)[c];
    } else if (how == Update::kZero) {
      values->fill(0);
    }
    if (how == Update::kRead) {
      *out = *values;
      done = true;
    } else {
      const Record updated = encode(*values);
      const int error =
          write_all_at(fd_.get(), updated.data() + kHeaderSize, kRecordSize - kHeaderSize, kHeaderSize);
      done = error == 0;
      if (!done) failure_ = Failure{"writing the statistics file", error};
      if (done && !still_whole()) {
        done = false;
        failure_ = Failure{"the statistics file was truncated or overwritten", 0};
      }
    }
  }
  boost::interprocess::ipcdetail::release_file_lock(fd_.get());
  if (failure_) {
    mutex_lock.unlock();
    close_file();
  }
  return done;
}

std::optional<Failure> StoreCounters::open(int dir_fd, std::chrono::milliseconds max_wait, mode_t mode,
                                           std::string name) {
  std::lock_guard lock(mutex_);
  auto failure = file_.open(dir_fd, max_wait, mode, std::move(name));
  machine_wide_ = !failure;
  return failure;
}

void StoreCounters::count(Counter counter, std::uint64_t n) noexcept {
  process_[counter].fetch_add(n, std::memory_order_relaxed);
  if (machine_wide_.load(std::memory_order_relaxed))
    pending_[counter].fetch_add(n, std::memory_order_relaxed);
}

std::optional<Failure> StoreCounters::publish() {
  if (!machine_wide_.load()) return std::nullopt;
  std::lock_guard lock(mutex_);
  CounterValues deltas{};
  bool any = false;
  for (std::size_t c = 0; c < kCounterCount; ++c) {
    deltas[c] = pending_[c].exchange(0, std::memory_order_relaxed);
    any = any || deltas[c] != 0;
  }
  if (!any || file_.add(deltas)) return std::nullopt;
  if (file_.valid()) {
    for (std::size_t c = 0; c < kCounterCount; ++c)
      pending_[c].fetch_add(deltas[c], std::memory_order_relaxed);
    return std::nullopt;
  }
  if (!machine_wide_.exchange(false)) return std::nullopt;
  process_[kErrors].fetch_add(1, std::memory_order_relaxed);
  return file_.failure().value_or(Failure{"updating the statistics file", EIO});
}

CounterValues StoreCounters::process() const noexcept {
  CounterValues v{};
  for (std::size_t c = 0; c < kCounterCount; ++c) v[c] = process_[c].load(std::memory_order_relaxed);
  return v;
}

CounterValues StoreCounters::machine() {
  publish();
  if (!machine_wide_.load()) return {};
  std::lock_guard lock(mutex_);
  return file_.read().value_or(CounterValues{});
}

void StoreCounters::zero() {
  for (auto& counter : process_) counter.store(0, std::memory_order_relaxed);
  for (auto& counter : pending_) counter.store(0, std::memory_order_relaxed);
  if (!machine_wide_.load()) return;
  std::lock_guard lock(mutex_);
  file_.zero();
}

}  // namespace tropical::storage
