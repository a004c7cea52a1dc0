#pragma once

// The local store's directory policy and housekeeping (not installed).

#include <sys/stat.h>
#include <time.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/storage/io.hpp"
#include "tropical/storage/key.hpp"

namespace tropical::storage::local {

/// Suffix of entry files: "<64 hex digits>.entry".
inline constexpr std::string_view kEntrySuffix = ".entry";

/// True for "<64 lower-case hex digits>.entry".
bool is_entry_name(std::string_view name) noexcept;

/// An open cache directory and whether it may be written.
struct Directory {
  Fd fd;                               ///< the directory; invalid if unusable
  std::optional<Failure> unusable;     ///< why it cannot be used at all
  std::optional<std::string> refused;  ///< why it must not be written (group/other-writable), or none
  bool team = false;                   ///< a setgid group directory (2770) of a group this user is in
  gid_t group = 0;                     ///< the directory's group
  std::string network;                 ///< the network file system it is on ("nfs", "cifs", ...), or ""
};

/// True if uid's primary group is gid or its user is listed as a member of gid (cached; thread-safe).
bool uid_in_group(uid_t uid, gid_t gid);

/// The network file system the open file fd is on ("nfs", "smb", "cifs", "fuse", ...), or "" if local.
std::string network_file_system(int fd);

/// Creates dir (and missing parents, 0700 whatever the umask) if needed, opens it and applies the policy:
/// a setgid, group-writable, not world-writable directory of a group this user is in is a team directory;
/// any other directory of another user is unusable; one writable by others, or by its group without the
/// setgid bit, is refused for writing. no_follow: dir itself must not be a symbolic link (the fallback under
/// a shared $TMPDIR, where another user may plant one: ELOOP makes it unusable).
Directory open_directory(const std::filesystem::path& dir, bool no_follow = false);

/// Why an entry file with status st must not be read, or nullopt: it must be a regular file of this user,
/// mode 0600 (or 0640 in a team directory, where an entry of a member of group is accepted too).
std::optional<std::string> refuse_entry(const struct stat& st, bool team, gid_t group);

/// The statistics file's name: per user in a team directory, per host on a network file system (counters
/// are read-modify-written under an fcntl lock, which hosts sharing a file system need not honour alike).
std::string stats_file_name(bool team, const std::string& network);

/// An entry file of this user: its name, size and modification time.
struct EntryFile {
  std::string name;
  std::uint64_t size = 0;
  timespec mtime{};
};

/// The entry files of this user (regular, our uid) in the directory open on dir_fd.
std::vector<EntryFile> list_entries(int dir_fd);

/// What one eviction pass removed.
struct Evicted {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::vector<std::string> names;  ///< the entry files it unlinked
};

/// Removes the least recently used (oldest mtime) entry files of this user until they total at most
/// max_bytes, never the one named keep. Safe for readers: one that has an entry open keeps its bytes.
Evicted evict_least_recently_used(int dir_fd, std::uint64_t max_bytes, const std::string& keep);

/// Removes our own temporary files (is_temp_name) older than an hour; never touches any other name.
void remove_stale_temps(int dir_fd);

/// remove_stale_temps() and evict_least_recently_used() in one pass over the directory (after a store).
Evicted tidy(int dir_fd, std::uint64_t max_bytes, const std::string& keep);

/// Unlinks name if it is a regular file of this user; true if it did.
bool remove_own_file(int dir_fd, const std::string& name);

/// The key that the header of entry file name (in the directory open on dir_fd) names, and the format
/// version it was written with in *version; nullopt if the file is not a regular file of this user or does not
/// start like an entry this library reads. Reads header and key only: nothing is verified or touched.
std::optional<CacheKey> read_stored_key(int dir_fd, const std::string& name, std::uint32_t* version);

/// For the decision log after a miss: "entry for another NVRTC identity (...)" or the like if the directory
/// holds an entry of this kernel and arch made with another compiler, source, options or format; "" if none.
std::string explain_absence(int dir_fd, const CacheKey& key);

}  // namespace tropical::storage::local
