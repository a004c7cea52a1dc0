#include "tropical/jit/storage/remote/remote_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <vector>

namespace tropical::jit::remote {
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

// Reads a duration setting into *out if present and within [min, max]; otherwise one warning
// and *out keeps its default.
void read_duration(const SettingLookup& get, std::string_view name, milliseconds min, milliseconds max,
                   milliseconds* out, const WarningSink& warn) {
  const auto text = get(name);
  if (!text || text->empty()) return;
  const auto value = parse_duration(*text);
  if (value && *value >= min && *value <= max) {
    *out = *value;
    return;
  }
  warn("tropical: warning: " + std::string(name) + "='" + *text + "' is not a duration between " +
       std::to_string(min.count()) + " ms and " + std::to_string(max.count()) + " ms; using " +
       std::to_string(out->count()) + " ms\n");
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

std::optional<RemoteOptions> remote_options(const SettingLookup& get, std::uint32_t format, const WarningSink& warn) {
  const auto url = get("TROPICAL_REMOTE_CACHE");
  if (!url || url->empty()) return std::nullopt;
  std::string error;
  const auto endpoint = parse_redis_url(*url, &error);
  if (!endpoint) {
    warn("tropical: warning: TROPICAL_REMOTE_CACHE='" + *url + "' is not a Redis URL (" + error +
         "); remote cache off\n");
    return std::nullopt;
  }
  RemoteOptions options;
  options.client.endpoint = *endpoint;
  options.format = format;
  read_duration(get, "TROPICAL_REMOTE_CONNECT_TIMEOUT", milliseconds(1), milliseconds(10'000),
                &options.client.connect_timeout, warn);
  read_duration(get, "TROPICAL_REMOTE_TIMEOUT", milliseconds(1), milliseconds(60'000),
                &options.client.operation_timeout, warn);
  read_duration(get, "TROPICAL_REMOTE_COOLDOWN", milliseconds(0), milliseconds(86'400'000), &options.client.cooldown,
                warn);
  read_duration(get, "TROPICAL_REMOTE_TTL", milliseconds(1000), milliseconds(86'400'000LL * 3650), &options.ttl, warn);
  read_duration(get, "TROPICAL_REMOTE_LEASE", milliseconds(100), milliseconds(600'000), &options.lease, warn);
  read_duration(get, "TROPICAL_REMOTE_WAIT", milliseconds(0), milliseconds(600'000), &options.wait, warn);

  if (const auto value = get("TROPICAL_REMOTE_UNSIGNED")) options.allow_unsigned = truthy(*value);
  if (const auto path = get("TROPICAL_REMOTE_SIGNING_KEY"); path && !path->empty()) {
    if (auto key = SigningKey::load(*path, &error)) {
      options.signer = std::make_shared<const SigningKey>(std::move(*key));
      options.trusted.add(options.signer->public_key());
    } else {
      warn("tropical: warning: TROPICAL_REMOTE_SIGNING_KEY: " + error + "; this node will not publish\n");
    }
  }
  if (const auto paths = get("TROPICAL_REMOTE_TRUSTED_KEYS"); paths && !paths->empty()) {
    std::vector<std::string> errors;
    TrustedKeys listed = TrustedKeys::load_list(*paths, &errors);
    for (const auto& e : errors) warn("tropical: warning: TROPICAL_REMOTE_TRUSTED_KEYS: " + e + "; key not trusted\n");
    options.trusted.add_all(listed);  // keeps the signer's own key trusted
  }
  if (!options.may_read() && !options.may_write()) {
    warn("tropical: warning: TROPICAL_REMOTE_CACHE is set but neither TROPICAL_REMOTE_TRUSTED_KEYS, "
         "TROPICAL_REMOTE_SIGNING_KEY nor TROPICAL_REMOTE_UNSIGNED=1 is usable; remote cache off\n");
    return std::nullopt;
  }
  return options;
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

}  // namespace tropical::jit::remote
