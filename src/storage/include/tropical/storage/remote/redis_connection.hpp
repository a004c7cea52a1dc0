#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/storage/remote/redis_url.hpp"

namespace tropical::storage::remote {

/// The clock every remote deadline is measured on.
using Clock = std::chrono::steady_clock;

/// One reply of the Redis protocol (RESP2), owned.
struct RedisReply {
  enum class Type { kString, kStatus, kError, kInteger, kNil, kArray };
  Type type = Type::kNil;             ///< which of the RESP2 reply kinds
  std::string text;                   ///< kString, kStatus, kError: the bytes
  long long integer = 0;              ///< kInteger: the value
  std::vector<RedisReply> elements;   ///< kArray: the elements
};

/// How one connection attempt or command ended.
enum class IoStatus {
  kOk,             ///< connected, or one whole reply read
  kTimeout,        ///< the deadline passed first
  kConnectFailed,  ///< name resolution or connect() failed (refused, no such socket, ...)
  kClosed,         ///< the peer closed or reset the connection, or a send/receive failed
  kProtocol,       ///< the bytes received are not the Redis protocol, or too many of them
};

/// A short name of status for messages ("timeout", "connection closed", ...).
std::string_view to_string(IoStatus status) noexcept;

/// One connection to a Redis server; every call returns by its deadline (name resolution
/// included), never raises SIGPIPE, and never throws. Not thread-safe: one user at a time.
/// After any status but kOk from command() the connection is unusable and must be dropped.
class RedisConnection {
 public:
  /// Connects to endpoint by `deadline` (a TCP host name is resolved on a helper thread that
  /// may outlive a timed-out call). Returns nullptr, with *status and *detail set, on failure.
  static std::unique_ptr<RedisConnection> open(const RedisEndpoint& endpoint, Clock::time_point deadline,
                                               IoStatus* status, std::string* detail);
  /// Closes the socket.
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  /// Sends one command (binary-safe arguments) and reads its reply by `deadline`; a reply
  /// larger than kMaxReplyBytes is kProtocol. A bulk string reply (a value) is received straight into
  /// reply->text, sized from its header: no other copy of it is made. On kOk *reply holds the reply (kError included).
  IoStatus command(std::span<const std::string_view> args, Clock::time_point deadline, RedisReply* reply,
                   std::string* detail);

  /// Upper bound on the bytes of one reply (a garbage server cannot exhaust memory): an entry of at most 64 MiB
  /// (kMaxEntryBytes) and its signature trailer. A bulk value announced larger is refused at its header; an
  /// array of more than 1024 elements at its header too.
  static constexpr std::size_t kMaxReplyBytes = (std::size_t{64} << 20) + (std::size_t{64} << 10);

 private:
  explicit RedisConnection(int fd);
  IoStatus send_all(std::string_view bytes, Clock::time_point deadline, std::string* detail);
  IoStatus read_reply(Clock::time_point deadline, RedisReply* reply, std::string* detail);
  IoStatus receive(char* into, std::size_t max, std::size_t* got, Clock::time_point deadline, std::string* detail);
  IoStatus read_bulk(std::size_t length, std::string_view received, Clock::time_point deadline, RedisReply* reply,
                     std::string* detail);

  int fd_;
  struct Reader;
  std::unique_ptr<Reader> reader_;
};

}  // namespace tropical::storage::remote
