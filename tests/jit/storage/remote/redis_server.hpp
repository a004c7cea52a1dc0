#pragma once

// A real redis-server for the fleet tests: started on a unix socket in a fresh temporary
// directory (and, if asked, on a loopback TCP port), never on any other address; stopped
// (SIGKILL: nothing is persisted) and its directory removed by the destructor.

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tropical/storage/remote/redis_connection.hpp"
#include "tropical/storage/remote/redis_url.hpp"

namespace tropical::storage::remote::testing {

/// The redis-server binary: $TROPICAL_TEST_REDIS_SERVER (set by meson), else /usr/bin/redis-server.
inline std::string redis_server_binary() {
  const char* set = std::getenv("TROPICAL_TEST_REDIS_SERVER");
  return set != nullptr && *set != '\0' ? set : "/usr/bin/redis-server";
}

/// A fresh directory under $TMPDIR (or /tmp), removed by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/tropical-remote-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A loopback TCP port that was free a moment ago (the kernel picks it).
inline int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

/// One redis-server process.
class RedisServer {
 public:
  /// Starts the server (with `extra` configuration arguments, e.g. {"--rename-command", "EVAL", ""}) and
  /// waits (up to 10 s) until it answers PING; check ready().
  explicit RedisServer(bool tcp = false, const std::vector<std::string>& extra = {}) {
    if (dir_.path().empty()) return;
    socket_ = (dir_.path() / "redis.sock").string();
    port_ = tcp ? free_loopback_port() : 0;
    std::vector<std::string> args = {redis_server_binary(), "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                     "--unixsocket", socket_, "--unixsocketperm", "700", "--save", "",
                                     "--appendonly", "no", "--dir", dir_.path().string(),
                                     "--logfile", (dir_.path() / "redis.log").string(), "--daemonize", "no"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec. The server dies with the test.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid_ < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ping()) {
        ready_ = true;
        return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// True once the server answered PING.
  bool ready() const { return ready_; }
  /// What went wrong starting it: the binary and the server's log.
  std::string explain() const {
    std::ifstream log(dir_.path() / "redis.log");
    std::stringstream text;
    text << "redis-server " << redis_server_binary() << " did not start; log:\n" << log.rdbuf();
    return text.str();
  }
  /// unix:///.../redis.sock
  std::string unix_url() const { return "unix://" + socket_; }
  /// redis://127.0.0.1:PORT (only if started with tcp)
  std::string tcp_url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  /// The endpoint of unix_url().
  RedisEndpoint endpoint() const { return *parse_redis_url(unix_url()); }
  /// The server's temporary directory (tests may put their own files in it).
  const std::filesystem::path& dir() const { return dir_.path(); }
  /// Sends sig to the server process.
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  /// Kills the server and reaps it.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  /// One command on a fresh connection (test setup and inspection); kNil reply on failure.
  RedisReply command(std::vector<std::string> args) const {
    IoStatus status = IoStatus::kOk;
    std::string detail;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    auto connection = RedisConnection::open(endpoint(), deadline, &status, &detail);
    RedisReply reply;
    if (connection == nullptr) return reply;
    std::vector<std::string_view> views(args.begin(), args.end());
    connection->command(views, deadline, &reply, &detail);
    return reply;
  }

 private:
  bool ping() const {
    const RedisReply reply = command({"PING"});
    return reply.type == RedisReply::Type::kStatus && reply.text == "PONG";
  }

  TempDir dir_;
  std::string socket_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool ready_ = false;
};

}  // namespace tropical::storage::remote::testing
