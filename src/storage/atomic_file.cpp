#include "tropical/storage/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

namespace tropical::storage {

bool is_temp_name(std::string_view name) noexcept {
  if (!name.starts_with(kTempPrefix)) return false;
  name.remove_prefix(kTempPrefix.size());
  int fields = 0;
  for (;;) {
    const std::size_t end = std::min(name.find('.'), name.size());
    if (end == 0 || end > 20 ||
        !std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(end),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    ++fields;
    if (end == name.size()) return fields == 3;
    name.remove_prefix(end + 1);
  }
}

AtomicFile::AtomicFile(int dir_fd, std::string final_name)
    : dir_(dir_fd), final_name_(std::move(final_name)) {}

AtomicFile::~AtomicFile() {
  if (!temp_name_.empty() && !committed_) {
    fd_.reset();
    ::unlinkat(dir_, temp_name_.c_str(), 0);
  }
}

std::optional<Failure> AtomicFile::create(mode_t mode) {
  static std::atomic<std::uint64_t> counter{0};
  // pid + thread + counter is unique among live writers; O_EXCL guards against
  // a leftover of a dead process whose pid was reused.
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::string name = std::string(kTempPrefix) + std::to_string(::getpid()) + "." +
                       std::to_string(::gettid()) + "." +
                       std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    const int fd = ::openat(dir_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return Failure{"creating a temporary file", errno};
    fd_.reset(fd);
    temp_name_ = std::move(name);
    // The umask may have taken bits off the mode.
    if (::fchmod(fd, mode) != 0) return Failure{"setting the mode of a temporary file", errno};
    return std::nullopt;
  }
  return Failure{"creating a temporary file", EEXIST};
}

std::optional<Failure> AtomicFile::write(const void* data, std::size_t size) {
  if (const int error = write_all(fd_.get(), data, size); error != 0) {
    return Failure{"writing a temporary file", error};
  }
  return std::nullopt;
}

// The data must be on disk before the rename makes it visible: otherwise a
// power loss can leave a renamed file whose blocks were never written.
std::optional<Failure> AtomicFile::sync() {
  if (::fsync(fd_.get()) != 0) return Failure{"syncing a temporary file", errno};
  if (const int error = fd_.close(); error != 0) return Failure{"closing a temporary file", error};
  return std::nullopt;
}

std::optional<Failure> AtomicFile::close() {
  if (const int error = fd_.close(); error != 0) return Failure{"closing a temporary file", error};
  return std::nullopt;
}

std::optional<Failure> AtomicFile::commit() {
  if (::renameat(dir_, temp_name_.c_str(), dir_, final_name_.c_str()) != 0) {
    return Failure{"renaming a file into place", errno};
  }
  committed_ = true;
  return std::nullopt;
}

std::optional<Failure> AtomicFile::commit_if_absent() {
  // linkat never replaces an existing name; the destructor then removes the temporary name.
  if (::linkat(dir_, temp_name_.c_str(), dir_, final_name_.c_str(), 0) != 0) {
    return Failure{"linking a file into place", errno};
  }
  return std::nullopt;
}

}  // namespace tropical::storage
