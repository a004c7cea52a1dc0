#include "tropical/jit/storage/config_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "tropical/jit/storage/atomic_file.hpp"
#include "tropical/jit/storage/log.hpp"

namespace tropical::jit {
namespace {

// Sorted. The remote tier's keys are remote::config_key_of() of its settings (a test checks that they agree).
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
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t eq = line.find('=');
    const std::string_view key = eq == std::string_view::npos ? line : trim(line.substr(0, eq));
    if (eq == std::string_view::npos || !is_key(key)) {
      warn_file(source, "line " + std::to_string(number) + " is not 'key = value'; ignored");
      continue;
    }
    if (!is_known_config_key(key)) {
      warn_file(source, "unknown key '" + std::string(key) + "' kept and ignored");
    }
    file.values_[std::string(key)] = std::string(trim(line.substr(eq + 1)));
  }
  return file;
}

ConfigFile ConfigFile::load(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kConfigFileName;
  const std::string source = path.string();
  // O_NONBLOCK: a FIFO planted under the name must not block the reader.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    if (errno != ENOENT && errno != ENOTDIR) warn_file(source, "not read (" + error_text(errno) + ")");
    return {};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    warn_file(source, "not a regular file; ignored");
    return {};
  }
  // Settings steer what is loaded (layers): only a file its owner alone controls counts.
  if ((st.st_uid != ::geteuid() && st.st_uid != 0) || (st.st_mode & S_IWOTH) != 0 ||
      ((st.st_mode & S_IWGRP) != 0 && st.st_uid != ::geteuid())) {
    warn_file(source, "owned by uid " + std::to_string(st.st_uid) + " with mode writable by others; ignored");
    return {};
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxConfigFileBytes) {
    warn_file(source, "larger than " + std::to_string(kMaxConfigFileBytes) + " bytes; ignored");
    return {};
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  if (const int error = read_at(fd.get(), text.data(), text.size(), 0); error != 0) {
    warn_file(source, "not read (" + error_text(error) + ")");
    return {};
  }
  return parse(text, source);
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

std::optional<std::string> conf_value(const std::filesystem::path& primary_dir, std::string_view key) {
  return ConfigFile::load(primary_dir).get(key);
}

}  // namespace tropical::jit
