#include "tropical/storage/trusted_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "tropical/storage/io.hpp"

namespace tropical::storage {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

// Why st does not pass rule, or "".
std::string refusal(const struct stat& st, const TrustRule& rule) {
  if (!S_ISREG(st.st_mode)) return kind_of(st.st_mode) + ", not a regular file";
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", neither this user (uid " + std::to_string(me) +
           ") nor root";
  const std::string mode = "mode " + octal_mode(st.st_mode);
  if ((st.st_mode & S_IWOTH) != 0) return mode + ": writable by others";
  if ((st.st_mode & S_IWGRP) != 0 && !(rule.group_may_write_own && st.st_uid == me))
    return mode + ": writable by its group";
  if (rule.secret && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    return mode + ": a private key readable by others (chmod 600 it)";
  if (static_cast<std::uint64_t>(st.st_size) > rule.max_bytes)
    return "larger than " + std::to_string(rule.max_bytes) + " bytes";
  return {};
}

}  // namespace

std::string octal_mode(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777u);
  return text;
}

TrustedRead read_trusted_file(const std::filesystem::path& path, const TrustRule& rule) {
  TrustedRead out;
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer; O_NOFOLLOW: the name itself is checked,
  // not whatever a link planted under it points to.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    out.missing = error == ENOENT || error == ENOTDIR;
    out.reason = error == ELOOP ? "a symbolic link (not followed)" : "cannot be opened (" + error_text(error) + ")";
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    out.reason = "cannot be examined (" + error_text(errno) + ")";
    return out;
  }
  if (out.reason = refusal(st, rule); !out.reason.empty()) return out;
  // A bounded read: the file may have grown since fstat; one byte past the cap says so.
  std::string bytes(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.reason = "cannot be read (" + error_text(errno) + ")";
      return out;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
    if (got > rule.max_bytes) {
      out.reason = "larger than " + std::to_string(rule.max_bytes) + " bytes";
      return out;
    }
    if (got == bytes.size()) bytes.resize(std::min<std::uint64_t>(bytes.size() * 2, rule.max_bytes + 1));
  }
  bytes.resize(got);
  out.bytes = std::move(bytes);
  return out;
}

}  // namespace tropical::storage
