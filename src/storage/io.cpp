#include "tropical/storage/io.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace tropical::storage {
namespace {

// A file size limit (ulimit -f, systemd LimitFSIZE=) makes the kernel send
// SIGXFSZ, whose default action kills the process, to the thread whose write
// crossed it. Blocking it in this thread alone turns that into EFBIG from
// write() and leaves the caller's disposition and other threads alone. The
// signal is still generated and left pending on this thread, so it is taken
// off again (sigtimedwait, no wait) before the old mask comes back, unless the
// caller had it blocked or pending already: then it is the caller's.
// (Checking RLIMIT_FSIZE first would not do: another process can lower the
// limit with prlimit between the check and the write.)
class FileSizeSignalBlocked {
 public:
  FileSizeSignalBlocked() noexcept {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz_, &old_);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    ours_ = !sigismember(&old_, SIGXFSZ) && !sigismember(&pending, SIGXFSZ);
  }
  ~FileSizeSignalBlocked() {
    if (ours_) {
      sigset_t pending;
      sigemptyset(&pending);
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
        const timespec no_wait{};
        while (sigtimedwait(&xfsz_, nullptr, &no_wait) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  FileSizeSignalBlocked(const FileSizeSignalBlocked&) = delete;
  FileSizeSignalBlocked& operator=(const FileSizeSignalBlocked&) = delete;

 private:
  sigset_t xfsz_;
  sigset_t old_;
  bool ours_ = false;
};

}  // namespace

void Fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int Fd::close() noexcept {
  const int fd = std::exchange(fd_, -1);
  return fd >= 0 && ::close(fd) != 0 ? errno : 0;
}

std::string Failure::reason() const { return error == 0 ? what : what + ": " + error_text(error); }

std::string error_text(int error) { return std::error_code(error, std::generic_category()).message(); }

int write_all(int fd, const void* data, std::size_t size) noexcept {
  const int saved_errno = errno;
  FileSizeSignalBlocked guard;
  const auto* p = static_cast<const unsigned char*>(data);
  int result = 0;
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      result = errno;
      break;
    }
    if (n == 0) {
      result = EIO;
      break;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  errno = saved_errno;
  return result;
}

int write_all_at(int fd, const void* data, std::size_t size, std::uint64_t offset) noexcept {
  const int saved_errno = errno;
  FileSizeSignalBlocked guard;
  const auto* p = static_cast<const unsigned char*>(data);
  int result = 0;
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      result = errno;
      break;
    }
    if (n == 0) {
      result = EIO;
      break;
    }
    p += n;
    offset += static_cast<std::uint64_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  errno = saved_errno;
  return result;
}

int read_at(int fd, void* data, std::size_t size, std::uint64_t offset) noexcept {
  auto* p = static_cast<unsigned char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace tropical::storage
