// A distributed run whose peer never joins: a real communicator of two ranks, rank 0 in this process on device 0
// (non-blocking: ncclConfig_t::blocking = 0) and rank 1 in a child process on device 1 (this binary again,
// GpuDistributedTimeoutPeer: it joins the communicator, ncclCommInitRank, and never runs the plan), as a rank of
// a job that hung or died before its collective leaves its peers. NCCL connects the ranks on the first collective,
// which waits for the peer; rank 0's run waits for that and for the all-reduce, and ends after its limit with
// NcclTimeout and the communicator aborted, instead of hanging the program. Skipped without two GPUs, or without
// libnccl.so.2 ($TROPICAL_NCCL_LIBRARY, else the loader's path).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tropical/device_buffer.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"
#include "nccl_handles.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;

using nccl_test::UniqueId;
using GetUniqueId = int (*)(UniqueId*);
using InitRank = int (*)(ncclComm_t*, int, UniqueId, int);

constexpr const char* kPeerVariable = "TROPICAL_TEST_NCCL_PEER_ID";

std::string hex(const UniqueId& id) {
  std::string out;
  char two[3];
  for (const char c : id.internal) {
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(c));
    out += two;
  }
  return out;
}

UniqueId unhex(const std::string& text) {
  UniqueId id{};
  for (std::size_t i = 0; i < sizeof id.internal && 2 * i + 1 < text.size(); ++i) {
    id.internal[i] = static_cast<char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  }
  return id;
}

// Runs only as the child of the test below: rank 1 joins and then waits, never calling a collective, until it is
// killed (or 120 s pass).
TEST(GpuDistributedTimeoutPeer, joins_the_communicator_and_never_runs_the_plan) {
  const char* id = std::getenv(kPeerVariable);
  if (id == nullptr) GTEST_SKIP() << "the peer half of GpuDistributedTimeout";
  void* nccl = nccl_test::open_nccl();
  ASSERT_NE(nccl, nullptr);
  const auto init = nccl_test::symbol<InitRank>(nccl, "ncclCommInitRank");
  ncclComm_t comm = nullptr;
  ASSERT_TRUE(init != nullptr && init(&comm, 2, unhex(id), 1) == 0) << "rank 1's ncclCommInitRank failed";
  std::this_thread::sleep_for(std::chrono::seconds(120));
}

/// The peer process on the second visible device: this binary with the peer test alone and the id.
pid_t spawn_peer(const UniqueId& id) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=GpuDistributedTimeoutPeer.*";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  std::string second = "1";
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr && *visible != '\0') {
    const std::string list = visible;
    const auto comma = list.find(',');
    second = comma == std::string::npos ? list : list.substr(comma + 1, list.find(',', comma + 1) - comma - 1);
  }
  std::vector<std::string> env;  // gtest's sharding and output settings are this run's, not the peer's
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CUDA_VISIBLE_DEVICES=", 0) != 0 && entry.rfind("GTEST_", 0) != 0) env.push_back(entry);
  }
  env.push_back(std::string(kPeerVariable) + "=" + hex(id));
  env.push_back("CUDA_VISIBLE_DEVICES=" + second);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  return pid;
}

/// The peer process, killed and reaped however the test ends.
struct Peer {
  pid_t pid = -1;
  ~Peer() { stop(); }
  /// Kills and reaps it; its wait status (-1 where there is none).
  int stop() {
    int status = -1;
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      pid = -1;
    }
    return status;
  }
};

TEST(GpuDistributedTimeout, a_rank_whose_peer_never_joins_times_out_and_aborts_the_communicator) {
  if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  if (drv::device_count() < 2) GTEST_SKIP() << "needs two GPUs (a communicator of two ranks)";
  std::string pattern = (std::filesystem::temp_directory_path() / "tropical-timeout-XXXXXX").string();
  setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1);
  void* nccl = nccl_test::open_nccl();
  if (nccl == nullptr) GTEST_SKIP() << "no NCCL: libnccl.so.2 does not load";
  const auto get_id = nccl_test::symbol<GetUniqueId>(nccl, "ncclGetUniqueId");
  ASSERT_NE(get_id, nullptr);
  UniqueId id{};
  ASSERT_EQ(get_id(&id), 0) << "ncclGetUniqueId failed";
  Peer peer{spawn_peer(id)};
  ASSERT_GT(peer.pid, 0) << "the peer process did not start";
  ncclComm_t comm = nullptr;
  {
    drv::ScopedContext context(0);  // NCCL's device: the current context's
    comm = nccl_test::init_nonblocking(nccl, 2, id, 0);  // ready once the peer has joined too
  }
  ASSERT_NE(comm, nullptr) << "rank 0's non-blocking ncclCommInitRankConfig failed";

  const EinsumPlan plan("ij,jk->ik", {{2, 2}, {2, 2}});
  const DeviceBuffer<float> a(std::vector<float>{1, 2, 3, 4}, 0), b(std::vector<float>{5, 6, 7, 8}, 0);
  const std::vector<const float*> operands = {a.get(), b.get()};
  DeviceBuffer<float> out(4, 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    einsum_distributed<MaxPlus, float>(plan, operands, out.get(), comm, nullptr, {.timeout_s = 2});
    ADD_FAILURE() << "rank 0's all-reduce completed without rank 1";
  } catch (const NcclTimeout& e) {
    EXPECT_EQ(e.call(), "ncclAllReduce") << e.what();
    EXPECT_EQ(e.seconds(), 2);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 2);
  EXPECT_LT(took, 60) << "the wait overran its limit";
  const int status = peer.stop();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the peer exited by itself: " << status;
}

}  // namespace
}  // namespace tropical
