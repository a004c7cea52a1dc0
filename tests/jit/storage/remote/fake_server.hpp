#pragma once

// A stand-in Redis for hostile-server tests: it answers one request on a unix socket in a temporary
// directory with fixed bytes, then holds the connection open until the client closes it.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "redis_server.hpp"

namespace tropical::storage::remote::testing {

/// A "server" that answers the first connection's first request with fixed bytes, then holds it open.
class FakeServer {
 public:
  explicit FakeServer(std::string answer) : answer_(std::move(answer)) {
    path_ = (dir_.path() / "fake.sock").string();
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    listen(fd_, 8);
    thread_ = std::thread([this] {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      char request[4096];
      (void)!recv(client, request, sizeof request, 0);
      (void)!send(client, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      char wait;
      (void)!recv(client, &wait, 1, 0);  // until the client closes
      close(client);
    });
  }
  ~FakeServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string url() const { return "unix://" + path_; }

 private:
  TempDir dir_;
  std::string path_;
  std::string answer_;
  int fd_ = -1;
  std::thread thread_;
};

}  // namespace tropical::storage::remote::testing
