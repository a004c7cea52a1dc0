// A distributed run whose peer never joins: a real communicator of two ranks on devices 0 and 1 (ncclCommInitAll),
// only rank 0 called. Its wait for the all-reduce ends after its limit with NcclTimeout and the communicator
// aborted, instead of hanging the program. Skipped without two GPUs, or without libnccl.so.2
// ($TROPICAL_NCCL_LIBRARY, else the loader's path).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tropical/device_buffer.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;

TEST(GpuDistributedTimeout, a_rank_whose_peer_never_joins_times_out_and_aborts_the_communicator) {
  if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  if (drv::device_count() < 2) GTEST_SKIP() << "needs two GPUs (a communicator of two ranks)";
  std::string pattern = (std::filesystem::temp_directory_path() / "tropical-timeout-XXXXXX").string();
  setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1);
  const char* env = std::getenv("TROPICAL_NCCL_LIBRARY");
  void* nccl = dlopen(env != nullptr && *env != '\0' ? env : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) GTEST_SKIP() << "no NCCL: libnccl.so.2 does not load";
  using InitAll = int (*)(ncclComm_t*, int, const int*);
  using Abort = int (*)(ncclComm_t);
  const auto init = reinterpret_cast<InitAll>(dlsym(nccl, "ncclCommInitAll"));
  const auto comm_abort = reinterpret_cast<Abort>(dlsym(nccl, "ncclCommAbort"));
  ncclComm_t comms[2] = {nullptr, nullptr};
  const int devices[] = {0, 1};
  ASSERT_TRUE(init != nullptr && comm_abort != nullptr && init(comms, 2, devices) == 0) << "ncclCommInitAll failed";

  const EinsumPlan plan("ij,jk->ik", {{2, 2}, {2, 2}});
  const DeviceBuffer<float> a(std::vector<float>{1, 2, 3, 4}, 0), b(std::vector<float>{5, 6, 7, 8}, 0);
  const std::vector<const float*> operands = {a.get(), b.get()};
  DeviceBuffer<float> out(4, 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    einsum_distributed<MaxPlus, float>(plan, operands, out.get(), comms[0], nullptr, {.timeout_s = 2});
    ADD_FAILURE() << "rank 0's all-reduce completed without rank 1";
  } catch (const NcclTimeout& e) {
    EXPECT_EQ(e.call(), "ncclAllReduce") << e.what();
    EXPECT_EQ(e.seconds(), 2);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 2);
  EXPECT_LT(took, 60) << "the wait overran its limit";
  comm_abort(comms[1]);  // rank 1 never ran; rank 0's communicator was aborted by the run
}

}  // namespace
}  // namespace tropical
