#include "tropical/storage/remote/redis_connection.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "redis_reply.hpp"

namespace tropical::storage::remote {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Milliseconds left until deadline, rounded up, for poll(); 0 once it has passed.
int remaining_ms(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = duration_cast<milliseconds>(left + milliseconds(1) - Clock::duration(1)).count();
  return static_cast<int>(std::min<long long>(ms, 1 << 30));
}

// Waits for `events` on fd until deadline; kOk when ready (or when poll reports an error
// condition, which the following send/recv turns into a status).
IoStatus wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const int ms = remaining_ms(deadline);
    if (ms == 0) return IoStatus::kTimeout;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, ms);
    if (n > 0) return IoStatus::kOk;
    if (n == 0) continue;  // recomputes the time left; returns kTimeout once it is 0
    if (errno != EINTR) return IoStatus::kClosed;
  }
}

struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_UNSPEC;
};

// getaddrinfo has no timeout (a slow DNS server can block it for many seconds), so a name
// is resolved on a detached thread and waited for only until the deadline. The shared state
// outlives whichever of the two finishes last.
struct Resolution {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int rc = 0;
  std::vector<Address> addresses;
};

void resolve_into(const std::shared_ptr<Resolution>& state, const std::string& host, const std::string& port,
                  int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &list);
  std::vector<Address> addresses;
  for (addrinfo* a = list; rc == 0 && a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Address address;
    std::memcpy(&address.storage, a->ai_addr, a->ai_addrlen);
    address.length = a->ai_addrlen;
    address.family = a->ai_family;
    addresses.push_back(address);
  }
  if (list != nullptr) freeaddrinfo(list);
  std::lock_guard lock(state->mutex);
  state->rc = rc;
  state->addresses = std::move(addresses);
  state->done = true;
  state->done_cv.notify_all();
}

bool resolve(const RedisEndpoint& endpoint, Clock::time_point deadline, std::vector<Address>* out,
             IoStatus* status, std::string* detail) {
  auto state = std::make_shared<Resolution>();
  const std::string port = std::to_string(endpoint.port);
  // A numeric address needs no lookup: resolve it here, without a thread.
  resolve_into(state, endpoint.host, port, AI_NUMERICHOST | AI_NUMERICSERV);
  if (state->rc != 0) {
    state = std::make_shared<Resolution>();
    try {
      std::thread([state, host = endpoint.host, port] { resolve_into(state, host, port, AI_NUMERICSERV); })
          .detach();
    } catch (const std::system_error&) {
      *status = IoStatus::kConnectFailed;
      *detail = "no thread to resolve " + endpoint.host;
      return false;
    }
    std::unique_lock lock(state->mutex);
    if (!state->done_cv.wait_until(lock, deadline, [&] { return state->done; })) {
      *status = IoStatus::kTimeout;
      *detail = "resolving " + endpoint.host + " took longer than the connect timeout";
      return false;
    }
  }
  std::lock_guard lock(state->mutex);
  if (state->rc != 0 || state->addresses.empty()) {
    *status = IoStatus::kConnectFailed;
    *detail = "cannot resolve " + endpoint.host + ": " + gai_strerror(state->rc);
    return false;
  }
  *out = state->addresses;
  return true;
}

// A non-blocking socket connected to address by deadline, or -1.
int connect_to(const Address& address, Clock::time_point deadline, IoStatus* status, std::string* detail) {
  const int fd = socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *status = IoStatus::kConnectFailed;
    *detail = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length);
  if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) {
    *status = wait_for(fd, POLLOUT, deadline);
    if (*status != IoStatus::kOk) {
      *detail = "connect took longer than the connect timeout";
      close(fd);
      return -1;
    }
    int error = 0;
    socklen_t length = sizeof error;
    rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (rc == 0 && error != 0) {
      errno = error;
      rc = -1;
    }
  }
  if (rc != 0) {
    *status = IoStatus::kConnectFailed;
    *detail = std::string("connect: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (address.family != AF_UNIX) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

}  // namespace

std::string_view to_string(IoStatus status) noexcept {
  switch (status) {
    case IoStatus::kOk: return "ok";
    case IoStatus::kTimeout: return "timeout";
    case IoStatus::kConnectFailed: return "connect failed";
    case IoStatus::kClosed: return "connection closed";
    case IoStatus::kProtocol: return "protocol error";
  }
  return "unknown";
}

// hiredis parses the protocol; the socket is ours, so that every wait has a deadline and
// sends use MSG_NOSIGNAL (hiredis's own write() would raise SIGPIPE on a closed peer).
struct RedisConnection::Reader {
  redisReader* reader = redisReaderCreateWithFunctions(reply_functions());
  ~Reader() {
    if (reader != nullptr) redisReaderFree(reader);
  }
};

RedisConnection::RedisConnection(int fd) : fd_(fd), reader_(std::make_unique<Reader>()) {}

RedisConnection::~RedisConnection() { close(fd_); }

std::unique_ptr<RedisConnection> RedisConnection::open(const RedisEndpoint& endpoint, Clock::time_point deadline,
                                                       IoStatus* status, std::string* detail) {
  std::vector<Address> addresses;
  if (endpoint.kind == RedisEndpoint::Kind::kUnix) {
    Address address;
    auto* un = reinterpret_cast<sockaddr_un*>(&address.storage);
    un->sun_family = AF_UNIX;
    if (endpoint.path.size() >= sizeof un->sun_path) {
      *status = IoStatus::kConnectFailed;
      *detail = "socket path too long";
      return nullptr;
    }
    std::memcpy(un->sun_path, endpoint.path.c_str(), endpoint.path.size() + 1);
    address.length = sizeof(sockaddr_un);
    address.family = AF_UNIX;
    addresses.push_back(address);
  } else if (!resolve(endpoint, deadline, &addresses, status, detail)) {
    return nullptr;
  }
  for (const Address& address : addresses) {
    const int fd = connect_to(address, deadline, status, detail);
    if (fd < 0) {
      if (*status == IoStatus::kTimeout) return nullptr;
      continue;
    }
    std::unique_ptr<RedisConnection> connection(new RedisConnection(fd));
    if (connection->reader_->reader == nullptr) {
      *status = IoStatus::kConnectFailed;
      *detail = "out of memory";
      return nullptr;
    }
    *status = IoStatus::kOk;
    return connection;
  }
  return nullptr;
}

IoStatus RedisConnection::send_all(std::string_view bytes, Clock::time_point deadline, std::string* detail) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (const IoStatus s = wait_for(fd_, POLLOUT, deadline); s != IoStatus::kOk) {
        *detail = "sending took longer than the operation timeout";
        return s;
      }
      continue;
    }
    *detail = std::string("send: ") + std::strerror(errno);
    return IoStatus::kClosed;
  }
  return IoStatus::kOk;
}

IoStatus RedisConnection::receive(char* into, std::size_t max, std::size_t* got, Clock::time_point deadline,
                                  std::string* detail) {
  for (;;) {
    const ssize_t n = recv(fd_, into, max, 0);
    if (n > 0) {
      *got = static_cast<std::size_t>(n);
      return IoStatus::kOk;
    }
    if (n == 0) {
      *detail = "the server closed the connection";
      return IoStatus::kClosed;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *detail = std::string("recv: ") + std::strerror(errno);
      return IoStatus::kClosed;
    }
    if (const IoStatus s = wait_for(fd_, POLLIN, deadline); s != IoStatus::kOk) {
      *detail = "no reply within the operation timeout";
      return s;
    }
  }
}

// A value (a bulk string reply) of `length` bytes, of which `received` (after the header) came with the header:
// read straight into the reply's own buffer, then its closing CRLF. One command is in flight per connection,
// so nothing may follow the reply.
IoStatus RedisConnection::read_bulk(std::size_t length, std::string_view received, Clock::time_point deadline,
                                    RedisReply* reply, std::string* detail) {
  std::string text;
  try {
    text.resize(length);
  } catch (const std::bad_alloc&) {
    *detail = "out of memory for a value of " + std::to_string(length) + " bytes";
    return IoStatus::kProtocol;
  }
  std::size_t have = std::min(length, received.size());
  std::memcpy(text.data(), received.data(), have);
  received.remove_prefix(have);
  while (have < length) {
    std::size_t got = 0;
    if (const IoStatus s = receive(text.data() + have, length - have, &got, deadline, detail); s != IoStatus::kOk)
      return s;
    have += got;
  }
  char tail[2];
  std::size_t tail_have = std::min<std::size_t>(2, received.size());
  std::memcpy(tail, received.data(), tail_have);
  const bool extra = received.size() > 2;
  while (tail_have < 2) {
    std::size_t got = 0;
    if (const IoStatus s = receive(tail + tail_have, 2 - tail_have, &got, deadline, detail); s != IoStatus::kOk)
      return s;
    tail_have += got;
  }
  if (extra || tail[0] != '\r' || tail[1] != '\n') {
    *detail = "bad reply: a value not followed by CRLF alone";
    return IoStatus::kProtocol;
  }
  reply->type = RedisReply::Type::kString;
  reply->text = std::move(text);
  reply->integer = 0;
  reply->elements.clear();
  return IoStatus::kOk;
}

IoStatus RedisConnection::read_reply(Clock::time_point deadline, RedisReply* reply, std::string* detail) {
  std::vector<char> buffer(std::size_t{64} << 10);
  std::size_t total = 0;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_->reader, &raw) != REDIS_OK) {
      *detail = std::string("bad reply: ") + reader_->reader->errstr;
      return IoStatus::kProtocol;
    }
    if (raw != nullptr) {
      const std::unique_ptr<RedisReply> built(static_cast<RedisReply*>(raw));
      *reply = std::move(*built);
      return IoStatus::kOk;
    }
    std::size_t n = 0;
    if (const IoStatus s = receive(buffer.data(), buffer.size(), &n, deadline, detail); s != IoStatus::kOk) return s;
    if (total == 0) {
      // A value: refused at its header if it is larger than the cap, else read past hiredis into its own buffer.
      const std::string_view first(buffer.data(), n);
      const long long announced = announced_length(first.data(), first.size());
      if (announced > static_cast<long long>(kMaxReplyBytes)) {
        *detail = "a value of " + std::to_string(announced) + " bytes, larger than " +
                  std::to_string(kMaxReplyBytes >> 20) + " MiB";
        return IoStatus::kProtocol;
      }
      if (announced >= 0) {
        const std::size_t header = first.find("\r\n") + 2;
        return read_bulk(static_cast<std::size_t>(announced), first.substr(header), deadline, reply, detail);
      }
    }
    total += n;
    if (total > kMaxReplyBytes) {
      *detail = "reply larger than " + std::to_string(kMaxReplyBytes >> 20) + " MiB";
      return IoStatus::kProtocol;
    }
    if (redisReaderFeed(reader_->reader, buffer.data(), n) != REDIS_OK) {
      *detail = "out of memory reading a reply";
      return IoStatus::kProtocol;
    }
  }
}

IoStatus RedisConnection::command(std::span<const std::string_view> args, Clock::time_point deadline,
                                  RedisReply* reply, std::string* detail) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* formatted = nullptr;
  const int length = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lengths.data());
  if (length < 0 || formatted == nullptr) {
    *detail = "cannot format a command";
    return IoStatus::kProtocol;
  }
  const IoStatus sent = send_all(std::string_view(formatted, static_cast<std::size_t>(length)), deadline, detail);
  redisFreeCommand(formatted);
  if (sent != IoStatus::kOk) return sent;
  return read_reply(deadline, reply, detail);
}

}  // namespace tropical::storage::remote
