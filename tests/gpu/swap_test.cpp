// The tiered first use through the public API on a real GPU, from an empty
// cache: products launched again and again while the tuned kernel compiles
// in the background, every result checked, across the swap; and a stream
// capturing a CUDA graph, which must get the tuned kernel. Its own executable:
// it points the process-wide registry at a fresh cache before first use.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;
using Clock = std::chrono::steady_clock;

/// Points the process-wide registry at an empty cache, once, before its first use.
void fresh_cache() {
  static const bool done = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tropical-swap-XXXXXX").string();
    setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1);
    unsetenv("TROPICAL_TIERED");
    return true;
  }();
  (void)done;
}

class GpuSwap : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    fresh_cache();
  }
};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng)) / 37.0f;
  return v;
}

KernelStats stats_of(catalog::KernelId id) { return stats().kernels[static_cast<std::size_t>(id)]; }

TEST_F(GpuSwap, launches_across_the_swap_all_match_the_reference) {
  const std::int64_t m = 300, n = 257, k = 513;
  const auto a = random_floats(static_cast<std::size_t>(m * k), 1), b = random_floats(static_cast<std::size_t>(k * n), 2);
  std::vector<float> want(static_cast<std::size_t>(m * n)), want_c(want.size());
  std::vector<std::int32_t> want_arg(want.size());
  reference::gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want.data(), n);
  reference::gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want_c.data(), n,
                                         want_arg.data(), n);
  DeviceBuffer<float> da(a), db(b), dc(want.size()), dc2(want.size());
  DeviceBuffer<std::int32_t> darg(want.size());
  const auto gemm_id = catalog::KernelId::kGemmMaxplusF32, argmax_id = catalog::KernelId::kGemmArgmaxMaxplusF32;
  int launches = 0, after_swap = 0, bad = 0;
  const auto start = Clock::now();
  while (after_swap < 20 && Clock::now() - start < std::chrono::seconds(120)) {
    const bool swapped = stats_of(gemm_id).first_to_tuned_ns > 0 && stats_of(argmax_id).first_to_tuned_ns > 0;
    gemm<MaxPlus, float>(m, n, k, da.get(), db.get(), dc.get());
    gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, m, n, k, da.get(), k, db.get(), n, dc2.get(), n, darg.get(), n);
    ++launches;
    after_swap += swapped;
    bad += dc.download(want.size()) != want;
    bad += dc2.download(want.size()) != want_c || darg.download(want.size()) != want_arg;
  }
  std::printf("%d launches of each product, %d after both swaps, in %.2f s\n", launches, after_swap,
              std::chrono::duration<double>(Clock::now() - start).count());
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(after_swap, 20) << "the tuned kernels never took over";
  for (auto id : {gemm_id, argmax_id}) {
    const KernelStats s = stats_of(id);
    EXPECT_GT(s.quick_calls, 0u) << "the quick kernel never served";
    EXPECT_EQ(s.quick_compiles, 1u);
    EXPECT_EQ(s.background_compiles, 1u);
    EXPECT_EQ(s.compiles, 2u);
    std::printf("%s: %llu calls on the quick kernel, tuned after %.1f ms\n",
                std::string(catalog::kInfo[static_cast<std::size_t>(id)].name).c_str(),
                static_cast<unsigned long long>(s.quick_calls), static_cast<double>(s.first_to_tuned_ns) * 1e-6);
  }
}

/// Records one gemm of kernel `S` into a graph on a stream captured in `mode`, replays it and checks it.
template <class S>
void capture_and_check(CUstreamCaptureMode mode) {
  const auto& api = drv::api();
  const std::int64_t m = 130, n = 70, k = 90;
  const auto a = random_floats(static_cast<std::size_t>(m * k), 3), b = random_floats(static_cast<std::size_t>(k * n), 4);
  std::vector<float> want(static_cast<std::size_t>(m * n));
  reference::gemm<S, float>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want.data(), n);
  DeviceBuffer<float> da(a), db(b), dc(want.size());
  drv::ScopedContext context(0);
  CUstream stream = nullptr;
  drv::check(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  drv::check(api.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture");
  gemm<S, float>(Trans::kNo, Trans::kNo, m, n, k, da.get(), k, db.get(), n, dc.get(), n, stream);
  CUgraph graph = nullptr;
  drv::check(api.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  drv::check(api.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  drv::check(api.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  drv::check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
  EXPECT_EQ(dc.download(want.size()), want);
  const KernelStats s = stats_of(kernel_id<S, float, Op::kGemm>());
  EXPECT_EQ(s.quick_calls, 0u) << "a capturing stream got the quick kernel";
  EXPECT_GT(s.first_to_tuned_ns, 0u);
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

TEST_F(GpuSwap, a_stream_capturing_in_global_mode_gets_the_tuned_kernel) {
  capture_and_check<MinPlus>(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

TEST_F(GpuSwap, a_stream_capturing_in_relaxed_mode_gets_the_tuned_kernel) {
  capture_and_check<MaxMul>(CU_STREAM_CAPTURE_MODE_RELAXED);
}

}  // namespace
}  // namespace tropical
