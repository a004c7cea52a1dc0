#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "tropical/storage/io.hpp"

namespace tropical::storage {

/// What every lock file holds; a file under a lock file's name without it is someone else's and is never
/// locked, rewritten or removed.
inline constexpr std::string_view kLockFileMagic = "TROPICAL-LOCK-1\n";

/// The process-wide mutex for (file system dev, inode, index): fcntl locks belong to the process, so the
/// threads of one process are kept apart by this mutex first; every object using one lock file in the
/// process gets the same mutex. Never destroyed. Thread-safe.
std::mutex& process_lock_mutex(dev_t dev, ino_t ino, std::size_t index);

/// Locks mutex if that can be done by deadline (polling with a bounded backoff); true if locked. Never
/// blocks past the deadline, so a thread stuck holding the mutex cannot freeze the caller.
bool lock_until(std::mutex& mutex, std::chrono::steady_clock::time_point deadline);

/// Opens the lock file name in the directory open on dir_fd, creating it whole (with kLockFileMagic, the
/// given mode) if absent; refuses (EPERM) anything but a regular file of this user holding exactly the magic,
/// and never follows a symbolic link or blocks on a FIFO. Returns the descriptor (O_CLOEXEC), or sets
/// *failure and *bad_file: true if a file under the name is at fault (a symlink, FIFO, directory, foreign or
/// unreadable file), false if the directory is (the file could not be created).
Fd open_lock_file(int dir_fd, const std::string& name, Failure* failure, bool* bad_file, mode_t mode = 0600);

/// How a bounded attempt to take a lock ended.
enum class LockResult {
  kLocked,    ///< held until unlock() or destruction
  kTimedOut,  ///< still held by someone at the deadline; holder() names them if known
  kUnusable,  ///< the lock file cannot be used (failure() says why)
};

/// An exclusive lock on one lock file across processes and across the threads of this process: the
/// process mutex first, then an fcntl write lock (released by the kernel if the holder dies, SIGKILL
/// included). Every wait ends by its deadline. Not thread-safe itself; one object per attempt.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock() { unlock(); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  /// Takes mutex, then the lock on name in the directory open on dir_fd, polling until deadline.
  LockResult lock(std::mutex& mutex, int dir_fd, const std::string& name,
                  std::chrono::steady_clock::time_point deadline);
  /// Releases both locks; the file lock first (closing its descriptor), then the mutex.
  void unlock() noexcept;
  /// True while held.
  bool locked() const noexcept { return mutex_lock_.owns_lock(); }
  /// After kTimedOut: the pid holding the file lock (this process's own pid if another of its threads held
  /// the mutex), or 0 if unknown.
  pid_t holder() const noexcept { return holder_; }
  /// After kUnusable: what failed.
  const Failure& failure() const noexcept { return failure_; }
  /// After kUnusable: true if the lock file itself is at fault (see open_lock_file), so only its stripe is.
  bool bad_file() const noexcept { return bad_file_; }

 private:
  std::unique_lock<std::mutex> mutex_lock_;
  Fd fd_;
  pid_t holder_ = 0;
  Failure failure_;
  bool bad_file_ = false;
};

}  // namespace tropical::storage
