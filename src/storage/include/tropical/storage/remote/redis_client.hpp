#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/storage/remote/redis_connection.hpp"
#include "tropical/storage/remote/redis_url.hpp"

namespace tropical::storage::remote {

/// Receives each warning line (ending in '\n'); called with no lock of the caller held.
using WarningSink = std::function<void(const std::string& line)>;

/// A sink that writes to stderr.
WarningSink stderr_warnings();

/// Where a client connects and how long it waits.
struct ClientOptions {
  RedisEndpoint endpoint;                                ///< the server
  std::chrono::milliseconds connect_timeout{250};       ///< bound on resolving + connecting
  std::chrono::milliseconds operation_timeout{1000};    ///< bound on one command's send + reply
  std::chrono::milliseconds cooldown{60000};            ///< after a failure, calls are skipped this long
};

/// How a call ended, as its caller sees it.
enum class CallStatus {
  kOk,       ///< a reply arrived (a Redis error reply included)
  kSkipped,  ///< not sent: the client is cooling down after a failure
  kFailed,   ///< connect, timeout, I/O or protocol failure; the cool-down has started
};

/// One call's outcome and time.
struct CallResult {
  CallStatus status = CallStatus::kSkipped;  ///< see CallStatus
  IoStatus io = IoStatus::kOk;               ///< kFailed: the cause
  RedisReply reply;                          ///< kOk: the reply
  std::chrono::nanoseconds elapsed{0};       ///< wall time of the call (0 when skipped)
};

/// A thread-safe Redis client: a pool of connections, one per concurrent call. Every call
/// returns within connect_timeout + operation_timeout and never throws; after a failure
/// the client skips calls for `cooldown` and warns once per cause for its lifetime.
class RedisClient {
 public:
  /// A client of options.endpoint; connects on the first call.
  RedisClient(ClientOptions options, WarningSink warn);
  /// Closes the pooled connections.
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  /// Sends one command (binary-safe arguments) and waits for its reply within the bounds above.
  CallResult call(std::span<const std::string_view> args);
  /// call() with the arguments listed.
  CallResult call(std::initializer_list<std::string_view> args) {
    return call(std::span<const std::string_view>(args.begin(), args.size()));
  }

  /// True while calls are being skipped after a failure.
  bool cooling_down() const noexcept;
  /// Ends a cool-down now (tests, and a CLI that wants to retry at once).
  void reset_cooldown() noexcept;
  /// The options this client was made with.
  const ClientOptions& options() const noexcept { return options_; }

 private:
  std::unique_ptr<RedisConnection> take(Clock::time_point deadline, bool* reused, IoStatus* status,
                                        std::string* detail);
  void give_back(std::unique_ptr<RedisConnection> connection);
  void fail(IoStatus status, const std::string& detail);

  ClientOptions options_;
  WarningSink warn_;
  std::atomic<Clock::rep> skip_until_{0};
  std::mutex mutex_;
  std::vector<std::unique_ptr<RedisConnection>> idle_;
  std::set<IoStatus> warned_;
};

}  // namespace tropical::storage::remote
