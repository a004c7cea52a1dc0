#include "tropical/storage/config.hpp"

#include "tropical/storage/config_file.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

namespace tropical::storage {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// The leading decimal digits of text as a number, and how many there were (0 if none or on overflow).
std::pair<std::uint64_t, std::size_t> leading_number(std::string_view text) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return {0, 0};
    value = value * 10 + digit;
  }
  return {value, i};
}

bool is_false_word(std::string_view text) {
  const std::string word = lower(text);
  return word.empty() || word == "0" || word == "false" || word == "no" || word == "off";
}

std::string_view env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string_view(value) : std::string_view();
}

std::filesystem::path home_directory() {
  if (const auto home = env("HOME"); !home.empty()) return std::filesystem::path(home);
  const long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] != '\0') {
    return std::filesystem::path(found->pw_dir);
  }
  return {};
}

// Every product builds the process-wide registry from this configuration, and
// a cache problem must never fail the caller: warn once and keep the default.
void warn_bad_setting(const char* variable, std::string_view value, const std::string& expected,
                      const std::string& default_text) {
  warn_once(Problem::kBadSetting, std::string(variable) + "=" + std::string(value),
            std::string("tropical: warning: ") + variable + "='" + printable(value) + "' is not " + expected +
                "; using the default " + default_text + "\n");
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) noexcept {
  const auto [value, digits] = leading_number(text);
  if (digits == 0) return std::nullopt;
  const std::string suffix = lower(text.substr(digits));
  if (suffix.empty()) return value;
  const std::size_t unit = std::string_view("kmgt").find(suffix.front());
  const std::string_view rest = std::string_view(suffix).substr(1);
  if (unit == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) return std::nullopt;
  const int shift = 10 * static_cast<int>(unit + 1);
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept {
  const auto [value, digits] = leading_number(text);
  if (digits == 0) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  constexpr std::uint64_t kDayMs = 24ull * 3600 * 1000;
  std::uint64_t ms = 0;
  if (unit == "ms") {
    ms = value;
  } else if (unit.empty() || unit == "s") {
    if (value > kDayMs / 1000) return std::nullopt;
    ms = value * 1000;
  } else {
    return std::nullopt;
  }
  if (ms > kDayMs) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::vector<std::filesystem::path> parse_layers(std::string_view text, std::string_view source) {
  std::vector<std::filesystem::path> layers;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(':'), text.size());
    const std::string_view item = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (item.empty()) continue;
    if (item.front() != '/') {
      warn_once(Problem::kBadSetting, std::string(source) + " " + std::string(item),
                "tropical: warning: " + printable(source) + ": layer '" + printable(item) +
                    "' is not an absolute path; skipped\n");
      continue;
    }
    layers.emplace_back(item);
  }
  return layers;
}

CacheConfig CacheConfig::from_env() {
  CacheConfig config;
  if (const auto dir = env("TROPICAL_CACHE_DIR"); !dir.empty()) {
    std::error_code ignored;
    config.dir = std::filesystem::absolute(std::filesystem::path(dir), ignored);
    if (config.dir.empty()) config.dir = std::filesystem::path(dir);
  } else if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    // The XDG base directory spec says to ignore a relative XDG_CACHE_HOME.
    config.dir = std::filesystem::path(xdg) / "tropical";
  } else if (const auto home = home_directory(); !home.empty()) {
    config.dir = home / ".cache" / "tropical";
  }
  // The file is read after the directory is known, and only for what the environment leaves unset.
  if (!config.dir.empty()) config.file = ConfigFile::load(config.dir);
  const ConfigFile& file = config.file;
  const std::string file_name = (config.dir / kConfigFileName).string();
  if (const auto size = file.get("max_size"); size && env("TROPICAL_CACHE_MAX_SIZE").empty()) {
    if (const auto bytes = parse_size(*size)) {
      config.max_bytes = *bytes;
    } else {
      warn_once(Problem::kBadSetting, file_name + " max_size",
                "tropical: warning: " + printable(file_name) + ": max_size '" + printable(*size) +
                    "' is not a size; using the default 1G\n");
    }
  }
  if (const char* layers = std::getenv("TROPICAL_CACHE_LAYERS"); layers != nullptr) {
    config.layers = parse_layers(layers, "TROPICAL_CACHE_LAYERS");
  } else if (const auto listed = file.get("layers")) {
    config.layers = parse_layers(*listed, file_name);
  }
  const auto tmp = env("TMPDIR");
  config.fallback_dir = std::filesystem::path(!tmp.empty() && tmp.front() == '/' ? tmp : "/tmp") /
                        ("tropical-" + std::to_string(::geteuid()));
  if (const auto size = env("TROPICAL_CACHE_MAX_SIZE"); !size.empty()) {
    static_assert(kDefaultCacheMaxBytes == 1ull << 30, "the warning names the default");
    if (const auto bytes = parse_size(size)) {
      config.max_bytes = *bytes;
    } else {
      warn_bad_setting("TROPICAL_CACHE_MAX_SIZE", size,
                       "a size (bytes, or with K/M/G/T, KB/MB/GB/TB, KiB/MiB/GiB/TiB, all powers of 1024)",
                       "1G");
    }
  }
  if (const auto timeout = env("TROPICAL_LOCK_TIMEOUT"); !timeout.empty()) {
    static_assert(kDefaultLockTimeout == std::chrono::seconds(30), "the warning names the default");
    if (const auto duration = parse_duration(timeout)) {
      config.lock_timeout = *duration;
    } else {
      warn_bad_setting("TROPICAL_LOCK_TIMEOUT", timeout,
                       "a duration (seconds, or with s or ms, at most a day)", "30s");
    }
  }
  config.enabled = is_false_word(env("TROPICAL_CACHE_DISABLE"));
  config.log = log_level_from_env();
  return config;
}

}  // namespace tropical::storage
