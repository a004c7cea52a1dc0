#pragma once

// The local store's directory policy and housekeeping (not installed).

#include <time.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/jit/storage/io.hpp"
#include "tropical/jit/storage/key.hpp"

namespace tropical::jit::local {

/// Suffix of entry files: "<64 hex digits>.entry".
inline constexpr std::string_view kEntrySuffix = ".entry";

/// True for "<64 lower-case hex digits>.entry".
bool is_entry_name(std::string_view name) noexcept;

/// An open cache directory and whether it may be written.
struct Directory {
  Fd fd;                               ///< the directory; invalid if unusable
  std::optional<Failure> unusable;     ///< why it cannot be used at all
  std::optional<std::string> refused;  ///< why it must not be written (group/other-writable), or none
};

/// Creates dir (and missing parents, 0700 whatever the umask) if needed, opens it and applies the policy:
/// another user's directory is unusable; one writable by others, or by its group without the setgid bit,
/// is refused for writing.
Directory open_directory(const std::filesystem::path& dir);

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
};

/// Removes the least recently used (oldest mtime) entry files of this user until they total at most
/// max_bytes, never the one named keep. Safe for readers: one that has an entry open keeps its bytes.
Evicted evict_least_recently_used(int dir_fd, std::uint64_t max_bytes, const std::string& keep);

/// Removes our own temporary files (is_temp_name) older than an hour; never touches any other name.
void remove_stale_temps(int dir_fd);

/// Unlinks name if it is a regular file of this user; true if it did.
bool remove_own_file(int dir_fd, const std::string& name);

/// For the decision log after a miss: "entry for another NVRTC identity (...)" or the like if the directory
/// holds an entry of this kernel and arch made with another compiler, source, options or format; "" if none.
std::string explain_absence(int dir_fd, const CacheKey& key);

}  // namespace tropical::jit::local
