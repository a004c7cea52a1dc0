#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tropical/storage/config_file.hpp"
#include "tropical/storage/remote/ed25519.hpp"
#include "tropical/storage/remote/redis_client.hpp"

namespace tropical::storage::remote {

/// A step of RemoteStore::begin that a test may order other nodes' actions around.
enum class FlightStep {
  kMissed,  ///< a lookup missed; the lease (or, on a read-only node, the check for a writer's) comes next
};

/// Everything the fleet store needs: where, how long to wait, who signs, whom to trust.
struct RemoteOptions {
  ClientOptions client;                                  ///< endpoint and timeouts
  std::chrono::milliseconds ttl{std::chrono::hours(24 * 30)};  ///< entry lifetime, refreshed on every hit
  std::chrono::milliseconds lease{20000};                ///< lifetime of a compile lease (a dead holder's ends then)
  std::chrono::milliseconds wait{10000};                 ///< longest wait for another node's compile
  std::chrono::milliseconds wait_total{30000};           ///< longest wait of one store, summed over its flights
  std::chrono::milliseconds poll{20};                    ///< first poll interval while waiting (doubles to 250 ms)
  std::uint32_t format = 0;                              ///< entry format version, part of every key
  std::shared_ptr<const SigningKey> signer;              ///< set: this node signs and publishes
  TrustedKeys trusted;                                   ///< keys whose entries are accepted (signer's included)
  bool allow_unsigned = false;                           ///< TROPICAL_REMOTE_UNSIGNED: trusted network
  std::function<void(FlightStep)> test_hook;             ///< called at each step of begin (tests only)

  /// True if entries may be read: some key is trusted or unsigned use is allowed.
  bool may_read() const noexcept { return !trusted.empty() || allow_unsigned; }
  /// True if entries may be published: a signing key, or unsigned use allowed.
  bool may_write() const noexcept { return signer != nullptr || allow_unsigned; }
};

/// Returns the value of a setting by its environment name (TROPICAL_REMOTE_CACHE, ...), or nullopt.
using SettingLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// Names where a setting's value came from, for warnings ("TROPICAL_REMOTE_TTL", "/c/tropical.conf:
/// remote_ttl").
using SettingOrigin = std::function<std::string(std::string_view name)>;

/// Every remote setting by its environment name, in the order remote_options() reads them.
inline constexpr std::array<std::string_view, 10> kRemoteSettingNames = {
    "TROPICAL_REMOTE_CACHE",       "TROPICAL_REMOTE_CONNECT_TIMEOUT",
    "TROPICAL_REMOTE_TIMEOUT",     "TROPICAL_REMOTE_COOLDOWN",
    "TROPICAL_REMOTE_TTL",         "TROPICAL_REMOTE_LEASE",
    "TROPICAL_REMOTE_WAIT",        "TROPICAL_REMOTE_UNSIGNED",
    "TROPICAL_REMOTE_SIGNING_KEY", "TROPICAL_REMOTE_TRUSTED_KEYS"};

/// The tropical.conf key of a remote setting: `remote` for TROPICAL_REMOTE_CACHE, `remote_<x>` for
/// TROPICAL_REMOTE_<X> (remote_ttl, remote_trusted_keys, ...); "" for a name not in kRemoteSettingNames.
std::string config_key_of(std::string_view name);

/// The remote options from settings read through get:
///   TROPICAL_REMOTE_CACHE          redis://HOST:PORT[/DB] or unix:///path.sock[?db=N]; unset or empty: off
///   TROPICAL_REMOTE_SIGNING_KEY    PEM ed25519 private key: this node signs and publishes
///   TROPICAL_REMOTE_TRUSTED_KEYS   colon-separated PEM public keys whose entries are accepted
///   TROPICAL_REMOTE_UNSIGNED       1/true/yes/on: read and write unsigned entries (a trusted network only)
///   TROPICAL_REMOTE_TTL (30d), TROPICAL_REMOTE_CONNECT_TIMEOUT (250ms), TROPICAL_REMOTE_TIMEOUT (1s),
///   TROPICAL_REMOTE_COOLDOWN (60s), TROPICAL_REMOTE_LEASE (20s), TROPICAL_REMOTE_WAIT (10s):
///                                  a whole number with a unit ms, s, m, h or d (none: seconds).
/// nullopt (remote off) when unset, when the URL is malformed, or when this node could neither
/// read nor write; each problem is one line through warn naming the value's origin (the name itself if
/// origin is empty), and a malformed duration or key file keeps the default or is left out. `format` is
/// the entry format version. Never throws but bad_alloc.
std::optional<RemoteOptions> remote_options(const SettingLookup& get, std::uint32_t format,
                                            const WarningSink& warn, const SettingOrigin& origin = {});

/// Why value is not a valid value of the remote setting name (never a control character; a Redis URL; a
/// duration within the setting's bounds; 1/true/yes/on/0/false/no/off; absolute key file paths without '..'),
/// or nullopt if it is valid; for `tropical config`, which stores only valid values. Reads no key file.
std::optional<std::string> setting_problem(std::string_view name, std::string_view value);

/// Settings read through one lookup, and where each came from.
struct SettingSources {
  SettingLookup get;     ///< a setting's value by its environment name
  SettingOrigin origin;  ///< the variable, or "<file_name>: <key>"
};

/// The process environment, then file for each setting the environment does not set (a variable set even
/// to "" wins: `TROPICAL_REMOTE_CACHE=` turns a remote configured in the file off for one process).
/// file_name names the file in origins. A key file path in the file must be absolute: a relative one is
/// left out with one line through warn. The returned functions keep copies of file's remote keys.
SettingSources environment_then_file(const ConfigFile& file, std::string file_name, WarningSink warn);

/// remote_options() over the process environment.
std::optional<RemoteOptions> remote_options_from_env(std::uint32_t format, const WarningSink& warn);

/// Parses a duration as remote_options() does ("250ms", "30d", "60"); nullopt if malformed.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace tropical::storage::remote
