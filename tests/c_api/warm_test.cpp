// tropical_warm from several threads at once: one compile per kernel and arch in the process, and counts
// that add up for every caller. NVRTC runs on the CPU: no GPU needed (the archs are given).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "tropical/tropical.h"

namespace {

// The library reads TROPICAL_CACHE_DIR when it first needs its cache: a directory of this run's, set
// before any test (never the user's cache).
class CacheDir : public ::testing::Environment {
 public:
  void SetUp() override { setenv("TROPICAL_CACHE_DIR", dir_.path().c_str(), 1); }

 private:
  tropical::test::TempDir dir_{"c-api-warm"};
};
[[maybe_unused]] ::testing::Environment* const kCacheDir = ::testing::AddGlobalTestEnvironment(new CacheDir);

TEST(CAbiWarm, eight_threads_warming_one_kernel_compile_it_once_per_arch_and_report_counts_that_add_up) {
  std::uint32_t id = 0;
  ASSERT_EQ(tropical_find_kernel(TROPICAL_MINPLUS, TROPICAL_F32, TROPICAL_OP_GEMM, &id), TROPICAL_OK);
  constexpr int kThreads = 8;
  std::array<tropical_status, kThreads> status{};
  std::array<std::size_t, kThreads> compiled{}, ready{};
  std::array<std::string, kThreads> errors;
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++started;
      while (started < kThreads) std::this_thread::yield();
      status[t] = tropical_warm(&id, 1, t % 2 == 0 ? 80 : 90, 1, &compiled[t], &ready[t]);
      errors[t] = tropical_last_error();
    });
  }
  for (auto& t : threads) t.join();
  std::size_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    if (status[t] == TROPICAL_ERROR_UNAVAILABLE) GTEST_SKIP() << "no NVRTC: " << errors[t];
    ASSERT_EQ(status[t], TROPICAL_OK) << errors[t];
    EXPECT_LE(compiled[t], 1u) << t;
    EXPECT_LE(ready[t], 1u) << t;  // not an unsigned underflow
    EXPECT_EQ(compiled[t] + ready[t], 1u) << t << ": compiled " << compiled[t] << ", ready " << ready[t];
    total += compiled[t];
  }
  EXPECT_EQ(total, 2u) << "one NVRTC compile for sm_80 and one for sm_90, in a fresh cache";
}

}  // namespace
