#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

// POSIX building blocks of the storage modules: an owned descriptor, whole
// reads and writes, and the description of a failed operation.

namespace tropical::storage {

/// An owned file descriptor, closed on destruction; movable, not copyable.
class Fd {
 public:
  Fd() = default;
  /// Takes ownership of fd (may be -1).
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { reset(); }
  /// The descriptor, or -1.
  int get() const noexcept { return fd_; }
  /// True if a descriptor is held.
  bool valid() const noexcept { return fd_ >= 0; }
  /// Closes the held descriptor (ignoring errors) and takes fd.
  void reset(int fd = -1) noexcept;
  /// Closes the descriptor and returns the errno close() gave (a delayed write error on some file systems),
  /// or 0.
  int close() noexcept;

 private:
  int fd_ = -1;
};

/// A failed file operation: what was attempted and the errno it gave.
struct Failure {
  std::string what;  ///< e.g. "writing a temporary file"
  int error = 0;     ///< errno value
  /// "what: strerror(error)"; what alone when error is 0 (a reason no errno names).
  std::string reason() const;
};

/// strerror-like text for an errno value; thread-safe.
std::string error_text(int error);

/// Writes all of data to fd at its offset, retrying EINTR. SIGXFSZ is blocked in the calling thread for the
/// duration (and a SIGXFSZ the write raised is consumed), so a file size limit gives EFBIG instead of killing
/// the process; other threads' masks and the signal's disposition are untouched. Returns 0 or an errno.
int write_all(int fd, const void* data, std::size_t size) noexcept;

/// pwrite of all of data at offset, with the same SIGXFSZ guarantee as write_all. Returns 0 or an errno.
int write_all_at(int fd, const void* data, std::size_t size, std::uint64_t offset) noexcept;

/// Reads exactly size bytes at offset. Returns 0, an errno, or EIO if the file ends first.
int read_at(int fd, void* data, std::size_t size, std::uint64_t offset) noexcept;

/// Nanoseconds from start to now on the steady clock.
std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) noexcept;

}  // namespace tropical::storage
