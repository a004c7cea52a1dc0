#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tropical::storage::remote {

/// Where a Redis server listens: a TCP host and port, or a unix socket path, and the database number.
struct RedisEndpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;  ///< which transport
  std::string host;        ///< kTcp: a host name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 0;  ///< kTcp: 1..65535
  std::string path;        ///< kUnix: an absolute socket path
  int db = 0;              ///< the database SELECTed after connecting (0: none sent)

  /// The endpoint written back as a URL (for messages); parse_redis_url of it gives an equal endpoint.
  std::string url() const;
  /// Field-wise equality.
  bool operator==(const RedisEndpoint&) const = default;
};

/// Parses `redis://HOST:PORT[/DB]` (HOST a name, a dotted IPv4 address or `[IPv6]`; PORT 1..65535)
/// or `unix:///absolute/path.sock[?db=N]`, DB and N decimal 0..2147483647, nothing else: no user,
/// password, other query or fragment. Returns nullopt and sets *error (if given) to a one-line
/// reason for anything else; never throws.
std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error = nullptr);

}  // namespace tropical::storage::remote
