#include "tropical/storage/remote/redis_client.hpp"

#include <cstdio>

#include "tropical/storage/log.hpp"

namespace tropical::storage::remote {
namespace {

// Idle connections kept for reuse; more concurrent callers get fresh ones, closed after use.
constexpr std::size_t kMaxIdle = 16;

}  // namespace

WarningSink stderr_warnings() {
  return [](const std::string& line) { std::fputs(terminal_safe(line).c_str(), stderr); };
}

RedisClient::RedisClient(ClientOptions options, WarningSink warn)
    : options_(std::move(options)), warn_(warn ? std::move(warn) : stderr_warnings()) {}

RedisClient::~RedisClient() = default;

bool RedisClient::cooling_down() const noexcept {
  return Clock::now().time_since_epoch().count() < skip_until_.load(std::memory_order_relaxed);
}

void RedisClient::reset_cooldown() noexcept { skip_until_.store(0, std::memory_order_relaxed); }

std::unique_ptr<RedisConnection> RedisClient::take(Clock::time_point deadline, bool* reused, IoStatus* status,
                                                   std::string* detail) {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      *reused = true;
      return connection;
    }
  }
  *reused = false;
  const auto connect_deadline = std::min(deadline, Clock::now() + options_.connect_timeout);
  auto connection = RedisConnection::open(options_.endpoint, connect_deadline, status, detail);
  if (connection == nullptr || options_.endpoint.db == 0) return connection;
  const std::string db = std::to_string(options_.endpoint.db);
  const std::string_view select[] = {"SELECT", db};
  RedisReply reply;
  *status = connection->command(select, deadline, &reply, detail);
  if (*status == IoStatus::kOk && reply.type != RedisReply::Type::kStatus) {
    *status = IoStatus::kProtocol;
    *detail = "SELECT " + db + " failed: " + printable(reply.text);
  }
  return *status == IoStatus::kOk ? std::move(connection) : nullptr;
}

void RedisClient::give_back(std::unique_ptr<RedisConnection> connection) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(connection));
}

void RedisClient::fail(IoStatus status, const std::string& detail) {
  const auto until = Clock::now() + options_.cooldown;
  skip_until_.store(until.time_since_epoch().count(), std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    // Pooled connections may be just as broken: drop them, the next call reconnects.
    idle_.clear();
    if (!warned_.insert(status).second) return;
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(options_.cooldown).count() / 1000.0;
  char cooldown[32];
  std::snprintf(cooldown, sizeof cooldown, "%g", seconds);
  warn_("tropical: warning: remote cache " + options_.endpoint.url() + ": " + std::string(to_string(status)) +
        " (" + detail + "); remote skipped for " + cooldown + " s after each failure, compiling instead\n");
}

CallResult RedisClient::call(std::span<const std::string_view> args) {
  CallResult result;
  if (cooling_down()) return result;
  const auto start = Clock::now();
  // One bound for the whole call: a connect (when no pooled connection is idle) plus one command.
  const auto deadline = start + options_.connect_timeout + options_.operation_timeout;
  std::string detail;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    IoStatus status = IoStatus::kOk;
    auto connection = take(deadline, &reused, &status, &detail);
    if (connection != nullptr) {
      const auto op_deadline = std::min(deadline, Clock::now() + options_.operation_timeout);
      status = connection->command(args, op_deadline, &result.reply, &detail);
      if (status == IoStatus::kOk) {
        give_back(std::move(connection));
        result.status = CallStatus::kOk;
        result.elapsed = Clock::now() - start;
        return result;
      }
    }
    // A pooled connection the server closed while idle (a restart, an idle timeout) gets
    // one retry on a fresh connection; any other failure ends the call.
    if (!(reused && status == IoStatus::kClosed)) {
      result.status = CallStatus::kFailed;
      result.io = status;
      break;
    }
    std::lock_guard lock(mutex_);
    idle_.clear();
  }
  if (result.status != CallStatus::kFailed) {
    result.status = CallStatus::kFailed;
    result.io = IoStatus::kClosed;
  }
  fail(result.io, detail);
  result.elapsed = Clock::now() - start;
  return result;
}

}  // namespace tropical::storage::remote
