#include "tropical/storage/lock_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/detail/os_file_functions.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <thread>
#include <tuple>

#include "tropical/storage/atomic_file.hpp"

namespace tropical::storage {
namespace {

using Clock = std::chrono::steady_clock;

// Longest sleep between two attempts: how late a waiter may notice a released lock.
constexpr auto kMaxBackoff = std::chrono::milliseconds(20);

// The pid holding a conflicting lock on fd, or 0.
pid_t lock_holder(int fd) {
  struct flock query {};
  query.l_type = F_WRLCK;
  query.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &query) != 0 || query.l_type == F_UNLCK) return 0;
  return query.l_pid;
}

}  // namespace

std::mutex& process_lock_mutex(dev_t dev, ino_t ino, std::size_t index) {
  static std::mutex table_mutex;
  // Never destroyed: a thread may still be resolving a kernel while the process exits.
  static auto& table = *new std::map<std::tuple<dev_t, ino_t, std::size_t>, std::unique_ptr<std::mutex>>;
  std::lock_guard lock(table_mutex);
  auto& mutex = table[{dev, ino, index}];
  if (!mutex) mutex = std::make_unique<std::mutex>();
  return *mutex;
}

// Polled rather than std::timed_mutex::try_lock_until: that calls
// pthread_mutex_clocklock, which ThreadSanitizer (GCC 12) does not intercept,
// so every later unlock would be reported as an unlock of an unlocked mutex.
bool lock_until(std::mutex& mutex, std::chrono::steady_clock::time_point deadline) {
  auto backoff = std::chrono::microseconds(20);
  while (!mutex.try_lock()) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(2));
  }
  return true;
}

Fd open_lock_file(int dir_fd, const std::string& name, Failure* failure, bool* bad_file, mode_t mode) {
  *bad_file = false;
  // O_NONBLOCK: opening a FIFO planted under the name must not wait for a writer.
  constexpr int kFlags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  Fd fd(::openat(dir_fd, name.c_str(), kFlags));
  if (!fd.valid() && errno == ENOENT) {
    // Created whole, so that nobody ever sees a lock file without its magic.
    AtomicFile file(dir_fd, name);
    std::optional<Failure> made = file.create(mode);
    if (!made) made = file.write(kLockFileMagic.data(), kLockFileMagic.size());
    if (!made) made = file.sync();
    if (!made) made = file.commit_if_absent();
    if (made && made->error != EEXIST) {
      *failure = *made;
      return Fd();
    }
    fd.reset(::openat(dir_fd, name.c_str(), kFlags));
  }
  if (!fd.valid()) {
    *failure = Failure{"opening lock file " + name, errno};
    *bad_file = errno != ENOENT;
    return Fd();
  }
  *bad_file = true;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    *failure = Failure{"checking lock file " + name, errno};
    return Fd();
  }
  char magic[kLockFileMagic.size()];
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_size != static_cast<off_t>(sizeof magic) ||
      read_at(fd.get(), magic, sizeof magic, 0) != 0 ||
      std::string_view(magic, sizeof magic) != kLockFileMagic) {
    *failure = Failure{"lock file " + name + " is not a lock file of this user", EPERM};
    return Fd();
  }
  *bad_file = false;
  return fd;
}

// boost::interprocess::file_lock is the right primitive (fcntl record locks,
// dropped by the kernel when the holder dies, unlike a named_mutex) but is
// wrapped, not used as a class: its constructor opens the file by name
// without O_CLOEXEC or O_NOFOLLOW (following a planted symlink, blocking on a
// FIFO, racing our checks), lock() throws on EINTR and on the EDEADLK the
// kernel reports when threads of two processes wait on each other's stripes
// (it sees processes, not threads), and timed_lock() spins. So the file is
// opened and checked here, and locked with the non-blocking call file_lock's
// try_lock() makes, polled with a bounded backoff: no F_SETLKW, so neither
// EINTR nor EDEADLK, and every wait ends by its deadline.
LockResult FileLock::lock(std::mutex& mutex, int dir_fd, const std::string& name,
                          Clock::time_point deadline) {
  unlock();
  holder_ = 0;
  bad_file_ = false;
  std::unique_lock<std::mutex> mutex_lock;
  if (lock_until(mutex, deadline)) mutex_lock = std::unique_lock(mutex, std::adopt_lock);
  if (!mutex_lock.owns_lock()) {
    holder_ = ::getpid();
    return LockResult::kTimedOut;
  }
  // Lock files are never removed, but one replaced while this process waited
  // is a file nobody else will lock: the lock is then taken on the new one.
  for (int attempt = 0; attempt < 16; ++attempt) {
    Fd fd = open_lock_file(dir_fd, name, &failure_, &bad_file_);
    if (!fd.valid()) return LockResult::kUnusable;
    auto backoff = std::chrono::milliseconds(1);
    for (;;) {
      bool acquired = false;
      if (!boost::interprocess::ipcdetail::try_acquire_file_lock(fd.get(), acquired)) {
        if (errno == EINTR) continue;
        failure_ = Failure{"locking " + name, errno};
        return LockResult::kUnusable;
      }
      if (acquired) break;
      const auto now = Clock::now();
      if (now >= deadline) {
        holder_ = lock_holder(fd.get());
        return LockResult::kTimedOut;
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
    struct stat locked {};
    struct stat named {};
    if (::fstat(fd.get(), &locked) == 0 &&
        ::fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_dev == locked.st_dev &&
        named.st_ino == locked.st_ino) {
      fd_ = std::move(fd);
      mutex_lock_ = std::move(mutex_lock);
      return LockResult::kLocked;
    }
  }
  failure_ = Failure{"lock file " + name + " keeps being replaced", EAGAIN};
  return LockResult::kUnusable;
}

// Closing the descriptor releases the fcntl lock; only then may another
// thread of this process open the file (closing any descriptor of a file
// drops every fcntl lock the process holds on it).
void FileLock::unlock() noexcept {
  if (!mutex_lock_.owns_lock()) return;
  fd_.reset();
  mutex_lock_.unlock();
}

}  // namespace tropical::storage
