#include "tropical/storage/config_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <thread>

#include "tropical/storage/atomic_file.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/trusted_file.hpp"

namespace tropical::storage {
namespace {

// Sorted. The fleet store's keys are remote::config_key_of() of its settings (a test checks that they agree).
constexpr std::array<std::string_view, 12> kKnownKeys = {
    "layers",          "max_size",           "remote",         "remote_connect_timeout", "remote_cooldown",
    "remote_lease",    "remote_signing_key", "remote_timeout", "remote_trusted_keys",    "remote_ttl",
    "remote_unsigned", "remote_wait"};

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

bool is_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

void warn_file(const std::string& source, const std::string& what) {
  warn_once(Problem::kBadSetting, source + ": " + what,
            "tropical: warning: " + printable(source) + ": " + printable(what) + "\n");
}

}  // namespace

bool is_known_config_key(std::string_view key) noexcept {
  return std::find(kKnownKeys.begin(), kKnownKeys.end(), key) != kKnownKeys.end();
}

std::span<const std::string_view> known_config_keys() noexcept { return kKnownKeys; }

ConfigFile ConfigFile::parse(std::string_view text, const std::string& source) {
  ConfigFile file;
  std::size_t number = 0;
  // A few lines' warnings, then one count: a file of 500 bad lines is not 500 warnings.
  constexpr std::size_t kShown = 3;
  std::size_t bad = 0;
  const auto complain = [&](const std::string& what) {
    if (++bad <= kShown) warn_file(source, what);
  };
  const auto drop = [&](const std::string& what) {
    ++file.dropped_;
    complain(what);
  };
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t eq = line.find('=');
    const std::string_view key = eq == std::string_view::npos ? line : trim(line.substr(0, eq));
    if (eq == std::string_view::npos || !is_key(key)) {
      drop("line " + std::to_string(number) + " is not 'key = value'; ignored");
      continue;
    }
    const std::string_view value = trim(line.substr(eq + 1));
    // `tropical config` never writes one: a control character in a value is a hand edit gone wrong (or an
    // escape sequence meant for a terminal that echoes it), not a setting.
    if (std::any_of(value.begin(), value.end(), is_control)) {
      drop("line " + std::to_string(number) + ": the value of '" + std::string(key) +
           "' holds control characters; ignored");
      continue;
    }
    if (!is_known_config_key(key)) complain("unknown key '" + std::string(key) + "' kept and ignored");
    file.values_[std::string(key)] = std::string(value);
  }
  if (bad > kShown) warn_file(source, "... and " + std::to_string(bad - kShown) + " more lines like these");
  return file;
}

namespace {

// Settings steer what is loaded (layers, the remote, whose keys are trusted): only a file its owner alone
// controls counts (in a team directory the group may write its owner's file: it can replace it anyway).
TrustedRead read_config(const std::filesystem::path& path) {
  TrustRule rule;
  rule.max_bytes = kMaxConfigFileBytes;
  rule.group_may_write_own = true;
  return read_trusted_file(path, rule);
}

}  // namespace

ConfigFile ConfigFile::load(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kConfigFileName;
  const TrustedRead read = read_config(path);
  if (!read.bytes) {
    if (!read.missing) warn_file(path.string(), read.reason + "; ignored");
    return {};
  }
  return parse(*read.bytes, path.string());
}

std::optional<std::string> ConfigFile::get(std::string_view key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void ConfigFile::set(const std::string& key, std::optional<std::string> value) {
  if (value) {
    values_[key] = std::move(*value);
  } else {
    values_.erase(key);
  }
}

std::string ConfigFile::text() const {
  std::string out = "# tropical cache settings (tropical config KEY VALUE); the environment overrides them\n";
  for (const auto& [key, value] : values_) out += key + " = " + value + "\n";
  return out;
}

std::optional<Failure> ConfigFile::save(const std::filesystem::path& dir) const {
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return Failure{"opening " + dir.string(), errno};
  const std::string bytes = text();
  AtomicFile file(dir_fd.get(), std::string(kConfigFileName));
  std::optional<Failure> failure = file.create(0644);
  if (!failure) failure = file.write(bytes.data(), bytes.size());
  if (!failure) failure = file.sync();
  if (!failure) failure = file.commit();
  if (!failure && ::fsync(dir_fd.get()) != 0) failure = Failure{"syncing " + dir.string(), errno};
  return failure;
}

std::optional<Failure> ConfigFile::update(const std::filesystem::path& dir, const std::string& key,
                                          std::optional<std::string> value, std::chrono::milliseconds wait) {
  const std::filesystem::path lock_path = dir / kConfigLockName;
  // Read-write where we may (NFS emulates flock by fcntl locks, whose exclusive kind needs a descriptor
  // open for writing); a team member who cannot write another's lock file locks it read-only, as flock
  // allows on a local file system. Group read-write (0660 before the umask): one lock for a team directory.
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0660));
  if (!lock.valid() && errno == EACCES) {
    lock = Fd(::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  }
  if (!lock.valid()) return Failure{"opening " + lock_path.string(), errno};
  // Polled, not a blocking flock: the wait stays bounded even if a holder is stopped.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return Failure{"locking " + lock_path.string(), errno};
    if (std::chrono::steady_clock::now() >= deadline) return Failure{"locking " + lock_path.string(), EWOULDBLOCK};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Read, modify and write under the lock: an update made meanwhile by another process is kept.
  const std::filesystem::path path = dir / kConfigFileName;
  const TrustedRead read = read_config(path);
  if (!read.bytes && !read.missing) {
    // Replacing a file that load() refuses would lose its settings (and it may not be ours to remove).
    return Failure{path.string() + " is refused (" + printable(read.reason) +
                   "); fix or remove it, then set the value again"};
  }
  ConfigFile file = read.bytes ? parse(*read.bytes, path.string()) : ConfigFile{};
  if (file.dropped_ > 0) {
    // Rewriting would delete the lines parse() skipped (warned about above): the user's to fix.
    return Failure{path.string() + " has " + std::to_string(file.dropped_) +
                   (file.dropped_ == 1 ? " line that is not a setting (see the warning); fix or remove it"
                                       : " lines that are not settings (see the warnings); fix or remove them") +
                   ", then set the value again"};
  }
  file.set(key, std::move(value));
  return file.save(dir);  // the lock goes with the descriptor
}

std::optional<std::string> conf_value(const std::filesystem::path& primary_dir, std::string_view key) {
  return ConfigFile::load(primary_dir).get(key);
}

}  // namespace tropical::storage
