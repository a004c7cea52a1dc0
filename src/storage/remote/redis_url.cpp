#include "tropical/storage/remote/redis_url.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <limits>

namespace tropical::storage::remote {
namespace {

constexpr std::string_view kTcpScheme = "redis://";
constexpr std::string_view kUnixScheme = "unix://";

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// A whole decimal number in [min, max] with no sign, no spaces, no leading '+'.
template <typename T>
bool parse_decimal(std::string_view text, T min, T max, T* out) {
  if (text.empty() || text.size() > 10) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  if (value < static_cast<long long>(min) || value > static_cast<long long>(max)) return false;
  *out = static_cast<T>(value);
  return true;
}

// Letters, digits, '-' and '.', as host names are written (RFC 1123), at most 253 characters.
bool valid_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-') return false;
  for (const char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::optional<RedisEndpoint> parse_tcp(std::string_view rest, std::string* error) {
  RedisEndpoint endpoint;
  endpoint.kind = RedisEndpoint::Kind::kTcp;
  std::string_view authority = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!parse_decimal(db, 0, std::numeric_limits<int>::max(), &endpoint.db)) {
      fail(error, "the database after '/' must be a number 0..2147483647");
      return std::nullopt;
    }
  }
  if (authority.find('@') != std::string_view::npos) {
    fail(error, "user names and passwords are not accepted in the URL");
    return std::nullopt;
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || close + 1 >= authority.size() || authority[close + 1] != ':') {
      fail(error, "an IPv6 address must be written [ADDRESS]:PORT");
      return std::nullopt;
    }
    endpoint.host = std::string(authority.substr(1, close - 1));
    in6_addr address{};
    if (inet_pton(AF_INET6, endpoint.host.c_str(), &address) != 1) {
      fail(error, "'" + endpoint.host + "' is not an IPv6 address");
      return std::nullopt;
    }
    port = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    if (colon == std::string_view::npos) {
      fail(error, "the port is missing (redis://HOST:PORT)");
      return std::nullopt;
    }
    endpoint.host = std::string(authority.substr(0, colon));
    if (!valid_host_name(endpoint.host)) {
      fail(error, "'" + endpoint.host + "' is not a host name or IPv4 address");
      return std::nullopt;
    }
    port = authority.substr(colon + 1);
  }
  if (!parse_decimal<std::uint16_t>(port, 1, 65535, &endpoint.port)) {
    fail(error, "the port must be a number 1..65535");
    return std::nullopt;
  }
  return endpoint;
}

std::optional<RedisEndpoint> parse_unix(std::string_view rest, std::string* error) {
  RedisEndpoint endpoint;
  endpoint.kind = RedisEndpoint::Kind::kUnix;
  std::string_view path = rest;
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    path = rest.substr(0, question);
    const std::string_view query = rest.substr(question + 1);
    if (query.substr(0, 3) != "db=" ||
        !parse_decimal(query.substr(3), 0, std::numeric_limits<int>::max(), &endpoint.db)) {
      fail(error, "the only query accepted is ?db=N with N a number 0..2147483647");
      return std::nullopt;
    }
  }
  if (path.empty() || path.front() != '/') {
    fail(error, "the socket path must be absolute (unix:///path/to/redis.sock)");
    return std::nullopt;
  }
  if (path.find('#') != std::string_view::npos || path.find('\0') != std::string_view::npos) {
    fail(error, "the socket path must not contain '#' or NUL");
    return std::nullopt;
  }
  // sockaddr_un::sun_path holds 108 bytes, the terminating NUL included.
  if (path.size() >= 108) {
    fail(error, "the socket path is longer than 107 bytes");
    return std::nullopt;
  }
  endpoint.path = std::string(path);
  return endpoint;
}

}  // namespace

std::string RedisEndpoint::url() const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string out;
  if (kind == Kind::kUnix) {
    out.append(kUnixScheme).append(path);
    if (db != 0) out.append("?db=").append(std::to_string(db));
    return out;
  }
  out.append(kTcpScheme);
  const bool v6 = host.find(':') != std::string::npos;
  if (v6) out.append("[");
  out.append(host);
  if (v6) out.append("]");
  out.append(":").append(std::to_string(port));
  if (db != 0) out.append("/").append(std::to_string(db));
  return out;
}

std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error) {
  if (url.substr(0, kTcpScheme.size()) == kTcpScheme) return parse_tcp(url.substr(kTcpScheme.size()), error);
  if (url.substr(0, kUnixScheme.size()) == kUnixScheme) return parse_unix(url.substr(kUnixScheme.size()), error);
  fail(error, "the URL must start with redis:// or unix://");
  return std::nullopt;
}

}  // namespace tropical::storage::remote
