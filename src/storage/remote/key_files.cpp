#include "tropical/storage/remote/key_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tropical/storage/remote/ed25519.hpp"

namespace tropical::storage::remote {
namespace {

// Creates path exclusively with mode, writes text, fsyncs; false with *error on failure
// (a partly written file is removed: this call created it).
bool write_new_file(const std::filesystem::path& path, std::string_view text, mode_t mode, std::string* error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = path.string() + ": " + std::strerror(errno) + (errno == EEXIST ? " (never overwritten)" : "");
    return false;
  }
  // The umask may have narrowed the mode; a public key is meant to be readable, a private
  // key never more than 0600, so set it exactly.
  bool ok = fchmod(fd, mode) == 0;
  while (ok && !text.empty()) {
    const ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  ok = ok && fsync(fd) == 0;
  const int saved = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    *error = path.string() + ": " + std::strerror(saved != 0 ? saved : errno);
    unlink(path.c_str());
  }
  return ok;
}

}  // namespace

std::optional<KeyPairFiles> write_key_pair(const std::filesystem::path& dir, std::string* error) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = dir.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir.string() + ": not a directory";
    return std::nullopt;
  }
  // Others who can write the directory (without the sticky bit) can replace the files in it: the key files
  // would then be whatever they wrote. Readers refuse such key files' modes, not their directory's.
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *error = dir.string() + ": writable by " + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
             " (mode " + mode + "), who could replace the keys; use a private directory";
    return std::nullopt;
  }
  const auto key = SigningKey::generate();
  if (!key) {
    *error = "OpenSSL could not generate an ed25519 key";
    return std::nullopt;
  }
  const std::string private_pem = key->pem();
  const std::string public_pem = key->public_key().pem();
  if (private_pem.empty() || public_pem.empty()) {
    *error = "OpenSSL could not write the key as PEM";
    return std::nullopt;
  }
  KeyPairFiles files{dir / kPrivateKeyFile, dir / kPublicKeyFile};
  // Refuse before writing anything if either name is taken, so no half pair is left behind.
  for (const auto& path : {files.private_key, files.public_key}) {
    struct stat existing{};
    if (lstat(path.c_str(), &existing) == 0) {
      *error = path.string() + ": already exists (never overwritten)";
      return std::nullopt;
    }
  }
  if (!write_new_file(files.private_key, private_pem, 0600, error)) return std::nullopt;
  if (!write_new_file(files.public_key, public_pem, 0644, error)) {
    unlink(files.private_key.c_str());
    return std::nullopt;
  }
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return files;
}

}  // namespace tropical::storage::remote
