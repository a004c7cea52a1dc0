#include "tropical/storage/remote/remote_config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "tropical/storage/log.hpp"

namespace tropical::storage::remote {
namespace {

using std::chrono::milliseconds;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool truthy(std::string_view text) {
  const std::string value = lower(text);
  return value == "1" || value == "true" || value == "yes" || value == "on";
}

bool falsy(std::string_view text) {
  const std::string value = lower(text);
  return value == "0" || value == "false" || value == "no" || value == "off";
}

// The bounds of each duration setting.
struct DurationBounds {
  std::string_view name;
  milliseconds min;
  milliseconds max;
};
constexpr std::array<DurationBounds, 6> kDurations = {{
    {"TROPICAL_REMOTE_CONNECT_TIMEOUT", milliseconds(1), milliseconds(10'000)},
    {"TROPICAL_REMOTE_TIMEOUT", milliseconds(1), milliseconds(60'000)},
    {"TROPICAL_REMOTE_COOLDOWN", milliseconds(0), milliseconds(86'400'000)},
    {"TROPICAL_REMOTE_TTL", milliseconds(1000), milliseconds(86'400'000LL * 3650)},
    {"TROPICAL_REMOTE_LEASE", milliseconds(100), milliseconds(600'000)},
    {"TROPICAL_REMOTE_WAIT", milliseconds(0), milliseconds(600'000)},
}};

const DurationBounds* bounds_of(std::string_view name) {
  for (const auto& bounds : kDurations)
    if (bounds.name == name) return &bounds;
  return nullptr;
}

std::string bounds_text(const DurationBounds& b) {
  return "a duration between " + std::to_string(b.min.count()) + " ms and " + std::to_string(b.max.count()) +
         " ms";
}

bool is_key_path_setting(std::string_view name) {
  return name == "TROPICAL_REMOTE_SIGNING_KEY" || name == "TROPICAL_REMOTE_TRUSTED_KEYS";
}

// The items of a colon list that are not absolute paths.
std::vector<std::string> relative_items(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(':'), list.size());
    if (end != 0 && list.front() != '/') out.emplace_back(list.substr(0, end));
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return out;
}

// The absolute paths of a colon list, joined again.
std::string absolute_items(std::string_view list) {
  std::string kept;
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(':'), list.size());
    if (end != 0 && list.front() == '/') {
      if (!kept.empty()) kept += ':';
      kept += list.substr(0, end);
    }
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return kept;
}

// Reads a duration setting into *out if present and within its bounds; otherwise one warning
// and *out keeps its default.
void read_duration(const SettingLookup& get, const SettingOrigin& origin, std::string_view name,
                   milliseconds* out, const WarningSink& warn) {
  const auto text = get(name);
  if (!text || text->empty()) return;
  const DurationBounds& bounds = *bounds_of(name);
  const auto value = parse_duration(*text);
  if (value && *value >= bounds.min && *value <= bounds.max) {
    *out = *value;
    return;
  }
  warn("tropical: warning: " + printable(origin(name)) + "='" + printable(*text) + "' is not " +
       bounds_text(bounds) + "; using " + std::to_string(out->count()) + " ms\n");
}

}  // namespace

std::optional<milliseconds> parse_duration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  long long number = 0;
  std::from_chars(text.data(), text.data() + digits, number);
  const std::string unit = lower(text.substr(digits));
  long long scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else if (unit == "d") scale = 86'400'000;
  else return std::nullopt;
  return milliseconds(number * scale);  // at most 10^12 * 8.64e7 < 2^63
}

std::string config_key_of(std::string_view name) {
  if (std::find(kRemoteSettingNames.begin(), kRemoteSettingNames.end(), name) == kRemoteSettingNames.end())
    return {};
  if (name == "TROPICAL_REMOTE_CACHE") return "remote";
  return "remote_" + lower(name.substr(std::string_view("TROPICAL_REMOTE_").size()));
}

std::optional<RemoteOptions> remote_options(const SettingLookup& get, std::uint32_t format,
                                            const WarningSink& warn, const SettingOrigin& origin_or_empty) {
  const SettingOrigin origin =
      origin_or_empty ? origin_or_empty : [](std::string_view name) { return std::string(name); };
  const auto url = get("TROPICAL_REMOTE_CACHE");
  if (!url || url->empty()) return std::nullopt;
  std::string error;
  const auto endpoint = parse_redis_url(*url, &error);
  if (!endpoint) {
    warn("tropical: warning: " + printable(origin("TROPICAL_REMOTE_CACHE")) + "='" + printable(*url) +
         "' is not a Redis URL (" + printable(error) + "); remote cache off\n");
    return std::nullopt;
  }
  RemoteOptions options;
  options.client.endpoint = *endpoint;
  options.format = format;
  read_duration(get, origin, "TROPICAL_REMOTE_CONNECT_TIMEOUT", &options.client.connect_timeout, warn);
  read_duration(get, origin, "TROPICAL_REMOTE_TIMEOUT", &options.client.operation_timeout, warn);
  read_duration(get, origin, "TROPICAL_REMOTE_COOLDOWN", &options.client.cooldown, warn);
  read_duration(get, origin, "TROPICAL_REMOTE_TTL", &options.ttl, warn);
  read_duration(get, origin, "TROPICAL_REMOTE_LEASE", &options.lease, warn);
  read_duration(get, origin, "TROPICAL_REMOTE_WAIT", &options.wait, warn);
  // Per process, not per kernel: a fleet whose leases never end in entries costs a run this much in all.
  options.wait_total = 3 * options.wait;

  if (const auto value = get("TROPICAL_REMOTE_UNSIGNED")) options.allow_unsigned = truthy(*value);
  if (const auto path = get("TROPICAL_REMOTE_SIGNING_KEY"); path && !path->empty()) {
    if (auto key = SigningKey::load(*path, &error)) {
      options.signer = std::make_shared<const SigningKey>(std::move(*key));
      options.trusted.add(options.signer->public_key());
    } else {
      warn("tropical: warning: " + printable(origin("TROPICAL_REMOTE_SIGNING_KEY")) + ": " + printable(error) +
           "; this node will not publish\n");
    }
  }
  if (const auto paths = get("TROPICAL_REMOTE_TRUSTED_KEYS"); paths && !paths->empty()) {
    std::vector<std::string> errors;
    TrustedKeys listed = TrustedKeys::load_list(*paths, &errors);
    for (const auto& e : errors)
      warn("tropical: warning: " + printable(origin("TROPICAL_REMOTE_TRUSTED_KEYS")) + ": " + printable(e) +
           "; key not trusted\n");
    options.trusted.add_all(listed);  // keeps the signer's own key trusted
  }
  if (!options.may_read() && !options.may_write()) {
    warn("tropical: warning: " + printable(origin("TROPICAL_REMOTE_CACHE")) +
         " is set but neither TROPICAL_REMOTE_TRUSTED_KEYS, TROPICAL_REMOTE_SIGNING_KEY nor "
         "TROPICAL_REMOTE_UNSIGNED=1 (remote_trusted_keys, remote_signing_key, remote_unsigned in "
         "tropical.conf) is usable; remote cache off\n");
    return std::nullopt;
  }
  return options;
}

std::optional<std::string> setting_problem(std::string_view name, std::string_view value) {
  // A value is one line of tropical.conf: a line break in it would set another key (remote_unsigned = 1).
  if (std::any_of(value.begin(), value.end(), is_control))
    return "control characters are not allowed in a value";
  if (name == "TROPICAL_REMOTE_CACHE") {
    std::string error;
    if (!value.empty() && !parse_redis_url(value, &error)) return "not a Redis URL (" + error + ")";
    return std::nullopt;
  }
  if (const DurationBounds* bounds = bounds_of(name)) {
    const auto duration = parse_duration(value);
    if (!duration || *duration < bounds->min || *duration > bounds->max)
      return "not " + bounds_text(*bounds) + " (a whole number with ms, s, m, h or d)";
    return std::nullopt;
  }
  if (name == "TROPICAL_REMOTE_UNSIGNED") {
    if (!truthy(value) && !falsy(value)) return "not one of 1, true, yes, on, 0, false, no, off";
    return std::nullopt;
  }
  if (is_key_path_setting(name)) {
    if (const auto relative = relative_items(value); !relative.empty())
      return "'" + relative.front() + "' is not an absolute path";
    if (value.find("/../") != std::string_view::npos || value.ends_with("/..") ||
        value.find("/..:") != std::string_view::npos)
      return "a key file path names the file itself, without '..'";
    return std::nullopt;
  }
  return "not a remote setting";
}

SettingSources environment_then_file(const ConfigFile& file, std::string file_name, WarningSink warn) {
  if (!warn) warn = stderr_warnings();
  // Copies of the file's remote keys: the functions may outlive file.
  std::map<std::string, std::string, std::less<>> values;
  for (const std::string_view name : kRemoteSettingNames) {
    auto value = file.get(config_key_of(name));
    if (!value) continue;
    // Relative to what? Not to the working directory of whichever program reads the cache.
    if (is_key_path_setting(name) && std::getenv(std::string(name).c_str()) == nullptr) {
      const auto relative = relative_items(*value);
      for (const auto& item : relative)
        warn("tropical: warning: " + printable(file_name) + ": " + config_key_of(name) + ": '" +
             printable(item) + "' is not an absolute path; left out\n");
      if (!relative.empty()) value = absolute_items(*value);
    }
    values.emplace(std::string(name), std::move(*value));
  }
  auto shared = std::make_shared<const std::map<std::string, std::string, std::less<>>>(std::move(values));
  SettingSources sources;
  sources.get = [shared](std::string_view name) -> std::optional<std::string> {
    if (const char* set = std::getenv(std::string(name).c_str())) return std::string(set);
    const auto it = shared->find(name);
    if (it == shared->end()) return std::nullopt;
    return it->second;
  };
  sources.origin = [shared, file_name = std::move(file_name)](std::string_view name) -> std::string {
    if (std::getenv(std::string(name).c_str()) != nullptr || !shared->contains(name))
      return std::string(name);
    return file_name + ": " + config_key_of(name);
  };
  return sources;
}

std::optional<RemoteOptions> remote_options_from_env(std::uint32_t format, const WarningSink& warn) {
  return remote_options(
      [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      },
      format, warn ? warn : stderr_warnings());
}

}  // namespace tropical::storage::remote
