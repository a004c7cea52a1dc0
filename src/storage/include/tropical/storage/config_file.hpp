#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tropical/storage/io.hpp"

// <primary dir>/tropical.conf: the settings that belong to the cache rather than to one process.
//
// Format: one `key = value` per line; blank lines and lines starting with '#' are ignored; spaces around the
// key and the value are dropped. Keys are lower-case words; an unknown key is kept (a newer version or
// another store may know it) and reported once per process. The environment overrides every key.

namespace tropical::storage {

/// The file's name in the primary directory.
inline constexpr std::string_view kConfigFileName = "tropical.conf";

/// The lock file beside it that serialises `tropical config` updates (ConfigFile::update).
inline constexpr std::string_view kConfigLockName = "tropical.conf.lock";

/// Largest configuration file read: 64 KiB (a bigger one is refused unread).
inline constexpr std::uint64_t kMaxConfigFileBytes = 64 << 10;

/// True for a key this version understands (for `tropical config` and the warning): max_size (a size, see
/// parse_size), layers (a colon list of absolute directories), and the fleet store's `remote` and `remote_*`
/// (remote_config.hpp: each TROPICAL_REMOTE_* variable's value).
bool is_known_config_key(std::string_view key) noexcept;

/// Every key is_known_config_key() accepts, sorted.
std::span<const std::string_view> known_config_keys() noexcept;

/// The parsed contents of one tropical.conf.
class ConfigFile {
 public:
  /// Reads <dir>/tropical.conf: missing is empty; a file that is not a regular file, is writable by group or
  /// others, is not owned by this user or root, or is too large is ignored with one warning; never throws
  /// for what the file holds.
  static ConfigFile load(const std::filesystem::path& dir);
  /// Parses text (the file's contents); malformed lines and values holding control characters are skipped
  /// with a warning naming source (three, then one count).
  static ConfigFile parse(std::string_view text, const std::string& source = "tropical.conf");

  /// The value of key, or nullopt if the file does not set it.
  std::optional<std::string> get(std::string_view key) const;
  /// Sets (or with nullopt, removes) key.
  void set(const std::string& key, std::optional<std::string> value);
  /// Every key and its value, sorted by key (unknown keys included).
  const std::map<std::string, std::string, std::less<>>& values() const noexcept { return values_; }
  /// The file's text for these values: one `key = value` line each, after a comment line.
  std::string text() const;
  /// Writes text() to <dir>/tropical.conf atomically (temporary file, fsync, rename), mode 0644; returns what
  /// failed, if anything. Creates nothing but the file.
  std::optional<Failure> save(const std::filesystem::path& dir) const;
  /// Sets (or with nullopt, removes) key in <dir>/tropical.conf as one read-modify-write under an exclusive
  /// flock of <dir>/tropical.conf.lock (waiting at most `wait`), so that concurrent updates of different keys
  /// all survive; returns what failed, if anything (a lock not had in time: EWOULDBLOCK). A file that load()
  /// refuses (a FIFO, a link, writable by others, ...), or that holds lines parse() skips, is left as it is
  /// and the update fails: nothing is lost.
  static std::optional<Failure> update(const std::filesystem::path& dir, const std::string& key,
                                       std::optional<std::string> value,
                                       std::chrono::milliseconds wait = std::chrono::seconds(10));

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::size_t dropped_ = 0;  // lines parse() skipped (not key = value, control characters)
};

/// The value of key in <primary_dir>/tropical.conf (see ConfigFile::load), or nullopt; for stores that read
/// their own settings (the environment should be checked first by the caller).
std::optional<std::string> conf_value(const std::filesystem::path& primary_dir, std::string_view key);

}  // namespace tropical::storage
