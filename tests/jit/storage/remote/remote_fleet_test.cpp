// Several "machines" (processes with their own clients) on one real redis-server.

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "redis_server.hpp"
#include "tropical/storage/remote/key_files.hpp"

extern char** environ;

namespace tropical::storage::remote {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;
using Clock = std::chrono::steady_clock;

const std::string kDigest = "aa11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff00112233";

// $TROPICAL_TEST_REMOTE_MACHINE (set by meson), else remote_machine next to this test.
std::string machine_binary() {
  const char* path = std::getenv("TROPICAL_TEST_REMOTE_MACHINE");
  if (path != nullptr && *path != '\0') return path;
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "" : (self.parent_path() / "remote_machine").string();
}

// A child process with its stdout on a pipe.
struct Machine {
  pid_t pid = -1;
  int out = -1;
  std::string output;
  int status = -1;
  Clock::time_point started;
  Clock::time_point ended;
};

Machine spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  Machine m;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return m;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("TROPICAL_REMOTE_", 0) != 0) env_strings.emplace_back(*e);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  m.started = Clock::now();
  if (posix_spawn(&m.pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) m.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  m.out = pipe_fds[0];
  return m;
}

// Reads m's output until EOF and reaps it; kills it if it runs past deadline.
void finish(Machine& m, Clock::time_point deadline) {
  char buffer[256];
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    pollfd p{m.out, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) == 0) {
      kill(m.pid, SIGKILL);
      m.output += "(killed: ran past the test's deadline)";
      break;
    }
    const ssize_t n = read(m.out, buffer, sizeof buffer);
    if (n <= 0) break;
    m.output.append(buffer, static_cast<std::size_t>(n));
  }
  close(m.out);
  waitpid(m.pid, &m.status, 0);
  m.ended = Clock::now();
}

// Reads one line of m's output (blocking up to 10 s).
std::string read_line(Machine& m) {
  std::string line;
  char c;
  pollfd p{m.out, POLLIN, 0};
  while (poll(&p, 1, 10'000) > 0 && read(m.out, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

std::size_t count_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class RemoteFleet : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ready()) << server_.explain();
    ASSERT_TRUE(std::filesystem::exists(machine_binary())) << "no remote_machine: " << machine_binary();
    std::string error;
    keys_ = write_key_pair(server_.dir() / "keys", &error);
    ASSERT_TRUE(keys_) << error;
    env_ = {{"TROPICAL_REMOTE_CACHE", server_.unix_url()},
            {"TROPICAL_REMOTE_SIGNING_KEY", keys_->private_key.string()},
            {"TROPICAL_REMOTE_LEASE", "2s"},
            {"TROPICAL_REMOTE_WAIT", "10s"}};
    compiles_ = server_.dir() / "compiles";
  }

  Machine flight(int compile_ms) {
    return spawn({machine_binary(), "flight", kDigest, std::to_string(compile_ms), compiles_.string()}, env_);
  }

  RedisServer server_;
  std::optional<KeyPairFiles> keys_;
  std::map<std::string, std::string> env_;
  std::filesystem::path compiles_;
};

TEST_F(RemoteFleet, eight_machines_cold_on_one_key_compile_once) {
  std::vector<Machine> machines;
  for (int i = 0; i < 8; ++i) machines.push_back(flight(300));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::map<std::string, int> roles;
  for (auto& m : machines) {
    ASSERT_GT(m.pid, 0);
    finish(m, deadline);
    EXPECT_TRUE(WIFEXITED(m.status) && WEXITSTATUS(m.status) == 0) << m.output;
    ++roles[m.output];
  }
  EXPECT_EQ(count_lines(compiles_), 1u);
  EXPECT_EQ(roles["leader\n"], 1);
  EXPECT_EQ(roles["hit\n"], 7);
}

TEST_F(RemoteFleet, killed_lease_holder_delays_the_others_no_longer_than_its_lease) {
  Machine holder = spawn({machine_binary(), "hold", kDigest}, env_);
  ASSERT_EQ(read_line(holder), "held");
  const auto lease_taken = Clock::now();
  std::vector<Machine> machines;
  for (int i = 0; i < 7; ++i) machines.push_back(flight(300));
  std::this_thread::sleep_for(milliseconds(300));
  kill(holder.pid, SIGKILL);
  finish(holder, Clock::now() + std::chrono::seconds(5));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::map<std::string, int> roles;
  for (auto& m : machines) {
    finish(m, deadline);
    EXPECT_TRUE(WIFEXITED(m.status) && WEXITSTATUS(m.status) == 0) << m.output;
    ++roles[m.output];
    // The lease (2 s, from when it was taken) + one compile (0.3 s) + one poll (0.25 s) + start-up.
    EXPECT_LE(m.ended - lease_taken, milliseconds(2000 + 300 + 250 + 750)) << m.output;
  }
  EXPECT_EQ(count_lines(compiles_), 1u);  // one of the waiters took the lease over
  EXPECT_EQ(roles["leader\n"], 1);
  EXPECT_EQ(roles["hit\n"], 6);
}

TEST_F(RemoteFleet, keyless_machine_reads_nothing) {
  // A producer publishes; a machine with no keys and no unsigned opt-in does not use it.
  ASSERT_EQ(count_lines(compiles_), 0u);
  Machine producer = flight(0);
  finish(producer, Clock::now() + std::chrono::seconds(10));
  ASSERT_EQ(producer.output, "leader\n");
  Machine keyless = spawn({machine_binary(), "flight", kDigest, "0", compiles_.string()},
                          {{"TROPICAL_REMOTE_CACHE", server_.unix_url()}});
  finish(keyless, Clock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(WIFEXITED(keyless.status));
  EXPECT_EQ(WEXITSTATUS(keyless.status), 2) << "remote must be off for a keyless reader";
}

}  // namespace
}  // namespace tropical::storage::remote
