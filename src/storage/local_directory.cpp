#include "local_directory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>

#include "tropical/storage/atomic_file.hpp"
#include "tropical/storage/entry.hpp"

namespace tropical::storage::local {
namespace {

constexpr auto kStaleTempAge = std::chrono::hours(1);

// Creates dir and its missing parents, each 0700 whatever the umask. Returns 0 or an errno.
int make_private_directories(const std::filesystem::path& dir) {
  std::filesystem::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (part == "/" || part.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      if (::chmod(prefix.c_str(), 0700) != 0) return errno;
    } else if (errno != EEXIST) {
      return errno;
    }
  }
  return 0;
}

// Calls visit(name, stat) for every directory entry that is a regular file of this user.
template <class Visit>
void for_each_own_file(int dir_fd, Visit visit) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return;
  }
  const uid_t me = ::geteuid();
  while (const dirent* item = ::readdir(listing)) {
    struct stat st {};
    if (::fstatat(fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == me) {
      visit(std::string_view(item->d_name), st);
    }
  }
  ::closedir(listing);
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

bool is_entry_name(std::string_view name) noexcept {
  if (name.size() != 64 + kEntrySuffix.size() || !name.ends_with(kEntrySuffix)) return false;
  return std::all_of(name.begin(), name.begin() + 64,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Directory open_directory(const std::filesystem::path& dir, bool no_follow) {
  Directory out;
  const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0);
  // Opened first: an existing directory (every run but the first) costs no mkdir per path component.
  out.fd.reset(::open(dir.c_str(), flags));
  if (!out.fd.valid() && errno == ELOOP) {
    out.unusable = Failure{"opening the directory (a symbolic link, not followed)", ELOOP};
    return out;
  }
  if (!out.fd.valid()) {
    if (const int error = make_private_directories(dir); error != 0) {
      out.unusable = Failure{"creating the directory", error};
      return out;
    }
    out.fd.reset(::open(dir.c_str(), flags));
  }
  struct stat st {};
  if (!out.fd.valid()) {
    out.unusable = Failure{"opening the directory", errno};
  } else if (::fstat(out.fd.get(), &st) != 0) {
    out.unusable = Failure{"checking the directory", errno};
  } else if ((st.st_mode & S_ISGID) != 0 && (st.st_mode & S_IWGRP) != 0 && (st.st_mode & S_IWOTH) == 0 &&
             (st.st_uid == ::geteuid() || uid_in_group(::geteuid(), st.st_gid))) {
    out.team = true;
    out.group = st.st_gid;
  } else if (st.st_uid != ::geteuid()) {
    out.unusable = Failure{"the directory belongs to another user", EPERM};
  } else if ((st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && (st.st_mode & S_ISGID) == 0)) {
    // Anyone who can write the directory can plant or replace entries and lock
    // files; a team directory is the setgid group one its owner set up on purpose.
    out.refused = "the directory is writable by " +
                  std::string((st.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " +
                  mode_text(st.st_mode) + ") and is not a setgid team directory";
  }
  if (out.unusable) {
    out.fd.reset();
  } else {
    out.network = network_file_system(out.fd.get());
  }
  return out;
}

std::optional<std::string> refuse_entry(const struct stat& st, bool team, gid_t group) {
  const bool own = st.st_uid == ::geteuid();
  if (!own && !(team && uid_in_group(st.st_uid, group)))
    return "entry owned by uid " + std::to_string(st.st_uid) + (team ? ", not a member of the team" : "");
  const mode_t mode = st.st_mode & 07777;
  if (mode != 0600 && !(team && mode == 0640))
    return "entry with mode " + mode_text(mode) + (team ? " (want 0600 or 0640)" : " (want 0600)");
  return std::nullopt;
}

std::string stats_file_name(bool team, const std::string& network) {
  // append(), not operator+: GCC 12 -O3 reports a false -Wrestrict for "." + string.
  std::string name = "tropical";
  if (team) name.append(1, '.').append(std::to_string(::geteuid()));
  if (!network.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') {
      for (char* c = host; *c != '\0'; ++c) {
        if (*c == '/') *c = '_';
      }
      name.append(1, '.').append(host);
    }
  }
  return name + ".stats";
}

bool uid_in_group(uid_t uid, gid_t gid) {
  static std::mutex mutex;
  static std::map<std::pair<uid_t, gid_t>, bool> known;
  std::lock_guard lock(mutex);
  if (const auto it = known.find({uid, gid}); it != known.end()) return it->second;
  bool member = false;
  std::vector<char> buffer(1 << 16);
  passwd user{};
  passwd* found_user = nullptr;
  if (::getpwuid_r(uid, &user, buffer.data(), buffer.size(), &found_user) == 0 && found_user != nullptr) {
    member = user.pw_gid == gid;
    const std::string name = user.pw_name;
    std::vector<char> group_buffer(1 << 16);
    group entry{};
    group* found = nullptr;
    if (!member && ::getgrgid_r(gid, &entry, group_buffer.data(), group_buffer.size(), &found) == 0 &&
        found != nullptr) {
      for (char** m = entry.gr_mem; m != nullptr && *m != nullptr && !member; ++m) member = name == *m;
    }
  }
  known[{uid, gid}] = member;
  return member;
}

std::string network_file_system(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return "";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x6969:
      return "nfs";
    case 0x517B:
      return "smb";
    case 0xFE534D42:
      return "smb2";
    case 0xFF534D42:
      return "cifs";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "ceph";
    case 0x5346414F:
      return "afs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    default:
      return "";
  }
}

std::vector<EntryFile> list_entries(int dir_fd) {
  std::vector<EntryFile> entries;
  for_each_own_file(dir_fd, [&](std::string_view name, const struct stat& st) {
    if (is_entry_name(name))
      entries.push_back({std::string(name), static_cast<std::uint64_t>(st.st_size), st.st_mtim});
  });
  return entries;
}

namespace {

// Removes the least recently used of entries (the directory's entry files) until they total at most max_bytes.
Evicted evict_entries(int dir_fd, std::vector<EntryFile> entries, std::uint64_t max_bytes, const std::string& keep) {
  std::uint64_t total = 0;
  for (const auto& entry : entries) total += entry.size;
  Evicted evicted;
  if (total <= max_bytes) return evicted;
  const auto older = [](const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
  };
  std::sort(entries.begin(), entries.end(), [&](const EntryFile& a, const EntryFile& b) {
    return older(a.mtime, b.mtime) || (!older(b.mtime, a.mtime) && a.name < b.name);
  });
  for (const auto& entry : entries) {
    if (total <= max_bytes) break;
    if (entry.name == keep) continue;
    // Another process may be evicting too; whoever unlinks the file counts it.
    if (::unlinkat(dir_fd, entry.name.c_str(), 0) == 0) {
      ++evicted.entries;
      evicted.bytes += entry.size;
      evicted.names.push_back(entry.name);
    }
    total -= entry.size;
  }
  return evicted;
}

bool is_stale_temp(std::string_view name, const struct stat& st) {
  const auto stale_before = std::chrono::system_clock::now() - kStaleTempAge;
  return is_temp_name(name) && std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec) < stale_before;
}

}  // namespace

Evicted evict_least_recently_used(int dir_fd, std::uint64_t max_bytes, const std::string& keep) {
  return evict_entries(dir_fd, list_entries(dir_fd), max_bytes, keep);
}

void remove_stale_temps(int dir_fd) {
  std::vector<std::string> stale;
  for_each_own_file(dir_fd, [&](std::string_view name, const struct stat& st) {
    if (is_stale_temp(name, st)) stale.emplace_back(name);
  });
  for (const auto& name : stale) ::unlinkat(dir_fd, name.c_str(), 0);
}

Evicted tidy(int dir_fd, std::uint64_t max_bytes, const std::string& keep) {
  std::vector<EntryFile> entries;
  std::vector<std::string> stale;
  for_each_own_file(dir_fd, [&](std::string_view name, const struct stat& st) {
    if (is_entry_name(name)) {
      entries.push_back({std::string(name), static_cast<std::uint64_t>(st.st_size), st.st_mtim});
    } else if (is_stale_temp(name, st)) {
      stale.emplace_back(name);
    }
  });
  for (const auto& name : stale) ::unlinkat(dir_fd, name.c_str(), 0);
  return evict_entries(dir_fd, std::move(entries), max_bytes, keep);
}

bool remove_own_file(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
         st.st_uid == ::geteuid() && ::unlinkat(dir_fd, name.c_str(), 0) == 0;
}

std::optional<CacheKey> read_stored_key(int dir_fd, const std::string& name, std::uint32_t* version) {
  // O_NONBLOCK: a FIFO put in the entry's place between the listing and this open must not block.
  Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  const auto bytes = read_entry_key(fd.get(), static_cast<std::uint64_t>(st.st_size));
  return bytes ? CacheKey::parse(*bytes, version) : std::nullopt;
}

std::string explain_absence(int dir_fd, const CacheKey& key) {
  std::string found;
  for (const auto& entry : list_entries(dir_fd)) {
    std::uint32_t version = 0;
    const auto stored = read_stored_key(dir_fd, entry.name, &version);
    if (!stored) continue;
    // The most telling difference wins: another compiler explains a miss better than another format.
    switch (key_mismatch(*stored, version, key)) {
      case KeyMismatch::kNone:  // the same key under another name: says nothing about this miss
      case KeyMismatch::kKernel:
      case KeyMismatch::kArch:
        break;
      case KeyMismatch::kCompiler:
        return "entry for another NVRTC identity (" + entry.name.substr(0, 12) + "…: " + stored->compiler +
               "; this process: " + key.compiler + ")";
      case KeyMismatch::kFormat:
        if (found.empty())
          found = "entry for another format (version " + std::to_string(version) + ", this process " +
                  std::to_string(kCacheFormatVersion) + ")";
        break;
      case KeyMismatch::kSource:
        if (found.empty())
          found = "entry for another source of this kernel (" + stored->source_digest.substr(0, 12) + "…)";
        break;
      case KeyMismatch::kOptions:
        if (found.empty()) found = "entry compiled with other options";
        break;
    }
  }
  return found;
}

}  // namespace tropical::storage::local
