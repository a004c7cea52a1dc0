#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tropical/storage/io.hpp"

namespace tropical::storage {

/// Prefix of every temporary file the storage creates; no other tool uses it, so stale-file cleanup can
/// never take someone else's file (mktemp's "tmp.*" included).
inline constexpr std::string_view kTempPrefix = ".tropical-tmp.";

/// True if name is one of our temporary files: kTempPrefix then "<pid>.<tid>.<n>", all decimal.
bool is_temp_name(std::string_view name) noexcept;

/// A file that becomes visible under its final name only whole: written under a temporary name in the
/// same directory, synced, then renamed (or linked) into place. The destructor removes a temporary file
/// that was never committed. Not thread-safe; the directory descriptor must outlive the object.
class AtomicFile {
 public:
  /// A file to be created in the directory open on dir_fd, to become final_name.
  AtomicFile(int dir_fd, std::string final_name);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Creates the temporary file with exactly the given mode (whatever the umask), O_EXCL, O_NOFOLLOW.
  std::optional<Failure> create(mode_t mode = 0600);
  /// Appends data; a file size limit gives a Failure with EFBIG, never a signal.
  std::optional<Failure> write(const void* data, std::size_t size);
  /// fsync and close: the data is on disk before the name can point at it.
  std::optional<Failure> sync();
  /// Close without fsync: for a copy whose loss in a crash costs only another copy (a promoted layer entry,
  /// verified on every read, so a torn file is a miss, never a wrong image).
  std::optional<Failure> close();
  /// Atomically replaces whatever has the final name (an old, bad or foreign entry).
  std::optional<Failure> commit();
  /// Puts the file under the final name only if nothing has that name (link, then the temporary name is
  /// removed); EEXIST if something does, which is left as it is.
  std::optional<Failure> commit_if_absent();

  /// The temporary file's name ("" before create).
  const std::string& temp_name() const noexcept { return temp_name_; }

 private:
  int dir_;
  std::string final_name_;
  std::string temp_name_;
  Fd fd_;
  bool committed_ = false;
};

}  // namespace tropical::storage
