// `tropical config` (the cache's settings file) and the per-store part of `tropical stats`.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/storage/config_file.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/remote/remote_config.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

namespace {

/// The environment variable that overrides key, or nullptr.
const char* variable_of(const std::string& key) {
  if (key == "max_size") return "TROPICAL_CACHE_MAX_SIZE";
  if (key == "layers") return "TROPICAL_CACHE_LAYERS";
  for (const std::string_view name : storage::remote::kRemoteSettingNames)
    if (storage::remote::config_key_of(name) == key) return name.data();  // the names are string literals
  return nullptr;
}

/// True if path has a ".." component (a configured path names its target directly).
bool climbs(std::string_view path) {
  while (!path.empty()) {
    const std::size_t end = std::min(path.find('/'), path.size());
    if (path.substr(0, end) == "..") return true;
    path.remove_prefix(std::min(end + 1, path.size()));
  }
  return false;
}

/// Throws UsageError unless value is valid for key.
void check_value(const std::string& key, const std::string& value) {
  // One line per key in the file: a line break (or any control character) in a value would add settings.
  if (std::any_of(value.begin(), value.end(), storage::is_control))
    throw UsageError{key + " = '" + storage::printable(value) + "': control characters are not allowed in a value"};
  if (key.starts_with("remote")) {
    if (const auto problem = storage::remote::setting_problem(variable_of(key), value))
      throw UsageError{key + " = '" + value + "': " + *problem};
    return;
  }
  if (key == "max_size" && !storage::parse_size(value))
    throw UsageError{"max_size wants a size such as 10G, 512M or 1073741824, not '" + value + "'"};
  if (key == "layers") {
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t end = std::min(rest.find(':'), rest.size());
      if (end != 0 && (rest.front() != '/' || climbs(rest.substr(0, end))))
        throw UsageError{"layers wants absolute directories (no '..') separated by ':', not '" + value + "'"};
      rest.remove_prefix(std::min(end + 1, rest.size()));
    }
  }
}

std::string note_override(const std::string& key) {
  const char* variable = variable_of(key);
  const char* value = variable != nullptr ? std::getenv(variable) : nullptr;
  return value != nullptr ? std::string("  (overridden by ") + variable + "=" + value + ")" : "";
}

/// A duration as the settings spell it: the largest unit that divides it (30d, 1s, 250ms).
std::string duration_text(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count();
  for (const auto& [unit, size] : {std::pair{"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}}) {
    if (ms != 0 && ms % size == 0) return std::to_string(ms / size) + unit;
  }
  return std::to_string(ms) + "ms";
}

/// A size as the settings spell it: the largest power of 1024 that divides it (1G, 512M, 100).
std::string size_text(std::uint64_t bytes) {
  for (const auto& [unit, shift] : {std::pair{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}}) {
    if (bytes != 0 && bytes % (std::uint64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + unit;
  }
  return std::to_string(bytes);
}

/// What `key` is when neither tropical.conf nor the environment sets it (the library's own defaults).
std::string default_of(const std::string& key) {
  const storage::remote::RemoteOptions remote;
  if (key == "max_size") return size_text(storage::kDefaultCacheMaxBytes);
  if (key == "remote") return "off";
  if (key == "remote_connect_timeout") return duration_text(remote.client.connect_timeout);
  if (key == "remote_timeout") return duration_text(remote.client.operation_timeout);
  if (key == "remote_cooldown") return duration_text(remote.client.cooldown);
  if (key == "remote_ttl") return duration_text(remote.ttl);
  if (key == "remote_lease") return duration_text(remote.lease);
  if (key == "remote_wait") return duration_text(remote.wait);
  if (key == "remote_unsigned") return "0";
  return "none";  // layers, key files
}

}  // namespace

int cmd_config(int argc, char** argv) {
  const Args args("config", argc, argv, {}, {"--unset"}, 2);
  if (args.help()) {
    print(
        "usage: tropical config [KEY [VALUE]]\n"
        "       tropical config --unset KEY\n\n"
        "Shows or sets the settings stored with the cache, in <cache dir>/tropical.conf:\n"
        "  max_size  the size limit of the cache (e.g. 10G); env TROPICAL_CACHE_MAX_SIZE\n"
        "  layers    read-only cache layers, DIR[:DIR...]; env TROPICAL_CACHE_LAYERS\n"
        "  remote    the fleet cache, redis://HOST:PORT[/DB] or unix:///PATH[?db=N];\n"
        "            env TROPICAL_REMOTE_CACHE\n"
        "  remote_trusted_keys, remote_signing_key (absolute paths), remote_unsigned,\n"
        "  remote_ttl, remote_connect_timeout, remote_timeout, remote_cooldown,\n"
        "  remote_lease, remote_wait\n"
        "            the fleet cache's other settings; env TROPICAL_REMOTE_TRUSTED_KEYS, ...\n"
        "Without arguments prints every setting of the file, then the keys it does not set\n"
        "as comments with their defaults; with KEY, its value, or if the file does not set\n"
        "it the value in effect and its source (\"1G (default)\", \"2G (TROPICAL_CACHE_MAX_SIZE)\");\n"
        "with KEY VALUE, sets it (the file is replaced atomically). The environment\n"
        "overrides the file. Unknown keys already in the file are kept.\n");
    return kExitOk;
  }
  const std::vector<std::string>& words = args.words();
  const bool unset = args.has("--unset");
  if (unset && words.size() != 1) throw UsageError{"config --unset wants one key"};
  if (!words.empty() && !storage::is_known_config_key(words[0])) {
    std::string known;
    for (const std::string_view key : storage::known_config_keys())
      known += (known.empty() ? "" : ", ") + std::string(key);
    throw UsageError{"unknown key '" + words[0] + "' (known: " + known + ")"};
  }
  // The configured directory, not a fallback: the settings belong to it.
  const std::filesystem::path dir = storage::CacheConfig::from_env().dir;
  if (dir.empty()) throw UsageError{"no cache directory (set --cache-dir, TROPICAL_CACHE_DIR or HOME)"};
  storage::ConfigFile file = storage::ConfigFile::load(dir);
  if (words.empty()) {
    std::string text = "# " + (dir / storage::kConfigFileName).string() + "\n";
    for (const auto& [key, value] : file.values()) text += key + " = " + value + note_override(key) + "\n";
    // The keys the file does not set, as comments: what they are without it.
    for (const std::string_view known : storage::known_config_keys()) {
      const std::string key(known);
      if (!file.get(key)) text += "# " + key + " = " + default_of(key) + " (default)" + note_override(key) + "\n";
    }
    print(text);
    return kExitOk;
  }
  const std::string& key = words[0];
  if (words.size() == 1 && !unset) {
    const auto value = file.get(key);
    if (value) {
      print(*value + "\n");
      return kExitOk;
    }
    // Not in the file: the value in effect and where it comes from.
    const char* variable = variable_of(key);
    const char* from_env = variable != nullptr ? std::getenv(variable) : nullptr;
    print(from_env != nullptr ? std::string(from_env) + " (" + variable + ")\n" : default_of(key) + " (default)\n");
    return kExitOk;
  }
  if (!unset) check_value(key, words[1]);
  (void)info();  // creates the directory (0700) if it is missing
  // Read, set and write under the file's lock: concurrent `tropical config` runs lose no update.
  if (const auto failure =
          storage::ConfigFile::update(dir, key, unset ? std::nullopt : std::optional<std::string>(words[1]))) {
    const std::string file = (dir / storage::kConfigFileName).string();
    std::fprintf(stderr, "tropical: cannot write %s: %s\n", storage::terminal_safe(file).c_str(),
                 storage::terminal_safe(failure->reason()).c_str());
    return kExitFailed;
  }
  print((unset ? "unset " + key : key + " = " + words[1]) + " in " + (dir / storage::kConfigFileName).string() +
        note_override(key) + "\n");
  return kExitOk;
}

std::string stores_report(bool json) {
  std::string out = json ? "[" : "stores (in lookup order):\n";
  bool first = true;
  for (storage::Store* store : registry().stores().list()) {
    const storage::StoreInfo t = store->describe();
    if (json) {
      out += std::string(first ? "" : ", ") + "{\"kind\": " + json_quote(t.kind) +
             ", \"location\": " + json_quote(t.location) + ", \"usable\": " + (t.usable ? "true" : "false") +
             ", \"writable\": " + (t.writable ? "true" : "false") + ", \"status\": " + json_quote(t.status) +
             ", \"entries\": " + std::to_string(t.entries) + ", \"bytes\": " + std::to_string(t.bytes) +
             ", \"hits\": " + std::to_string(t.hits) + ", \"misses\": " + std::to_string(t.misses) + "}";
    } else {
      char line[160];
      std::snprintf(line, sizeof line, "    %" PRIu64 " entries, %" PRIu64 " bytes, %" PRIu64 " hits\n",
                    t.entries, t.bytes, t.hits);
      out += "  " + t.kind + " " + t.location + ": " + t.status + "\n" + line;
    }
    first = false;
  }
  return out + (json ? "]" : "");
}

}  // namespace tropical::cli
