// Tiered first use without a GPU: a fake driver (DeviceLoader) and fake or
// cheap compilers drive the registry's publish/swap protocol, the rules that
// make a call wait for the tuned kernel, TROPICAL_TIERED, and process exit
// while a tuned compile runs in the background.
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/registry.hpp"

namespace tropical::jit {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr KernelSource kTuned[] = {{0, "tropical_test", "tuned source", "tuned-digest"}};
constexpr KernelSource kQuick[] = {{0, "tropical_test_quick", "quick source", "quick-digest"}};
constexpr LaunchShape kTunedShape[] = {{32, 8, 128, 128, 0}};
constexpr LaunchShape kQuickShape[] = {{16, 16, 64, 64, 0}};
// 1 T MAC/s quick kernel, 1 s tuned compile.
constexpr TierCost kCost[] = {{1000.0, 1000.0}};
constexpr TierTable kTable{kQuick, kTunedShape, kQuickShape, kCost};

char g_tuned_token, g_quick_token;
const CUstream kCapturing = reinterpret_cast<CUstream>(std::uintptr_t{0x5eed});

bool is_quick(const KernelSource& k) { return k.name.ends_with("_quick"); }

/// One device of sm_90; the function of a module is a token that names its tier.
class FakeLoader final : public DeviceLoader {
 public:
  int device_count() override { return 1; }
  int arch(int) override { return 90; }
  LoadedModule load(int, const CompiledImage& image, const std::string& name,
                    const std::function<std::string()>&) override {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.cubin.data()), image.cubin.size()), name)
        << "the image of another kernel was loaded";
    char* token = name.ends_with("_quick") ? &g_quick_token : &g_tuned_token;
    return {reinterpret_cast<CUmodule>(token), reinterpret_cast<CUfunction>(token)};
  }
  void unload(int, CUmodule) noexcept override {}
  bool capturing(CUstream stream) noexcept override { return stream == kCapturing; }
};

/// Counts compiles per tier; a tuned compile takes `tuned_delay` and, if
/// `gate` is set, also waits (at most 30 s) for it to open.
struct FakeCompiler {
  std::atomic<int> quick{0}, tuned{0};
  std::chrono::milliseconds tuned_delay{0};
  std::shared_future<void> gate;
  bool fail_tuned = false;

  Compiler fn() {
    return [this](const KernelSource& k, int) {
      if (is_quick(k)) {
        ++quick;
      } else {
        ++tuned;
        std::this_thread::sleep_for(tuned_delay);
        if (gate.valid() && gate.wait_for(30s) != std::future_status::ready) ADD_FAILURE() << "gate never opened";
        if (fail_tuned) throw CompileError(std::string(k.name), "fake failure", {});
      }
      CompiledImage image;
      image.ptx = std::string(k.name);
      image.cubin.assign(reinterpret_cast<const std::byte*>(k.name.data()),
                         reinterpret_cast<const std::byte*>(k.name.data()) + k.name.size());
      return image;
    };
  }
};

CacheConfig no_disk() {
  CacheConfig config;
  config.enabled = false;
  return config;
}

TierConfig fake_tiers(FakeCompiler& compiler, TierMode mode = TierMode::kTiered) {
  TierConfig tiers;
  tiers.table = kTable;
  tiers.mode = mode;
  tiers.loader = std::make_shared<FakeLoader>();
  tiers.compiler = compiler.fn();
  return tiers;
}

/// The published kernel is one whole tier: its function, shape and tier agree.
void expect_consistent(const Resolved& r) {
  if (r.tier == Tier::kQuick) {
    EXPECT_EQ(r.function, reinterpret_cast<CUfunction>(&g_quick_token));
    EXPECT_EQ(r.launch.tile_m, 64u);
  } else {
    EXPECT_EQ(r.function, reinterpret_cast<CUfunction>(&g_tuned_token));
    EXPECT_EQ(r.launch.tile_m, 128u);
  }
}

TEST(Tiering, sixteen_threads_racing_on_first_use_get_one_quick_and_one_tuned_compile) {
  FakeCompiler compiler;
  compiler.tuned_delay = 200ms;
  Registry registry(kTuned, no_disk(), fake_tiers(compiler));
  constexpr int kThreads = 16;
  std::atomic<int> ready{0};
  std::array<int, kThreads> quick_seen{}, calls{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      const auto deadline = Clock::now() + 30s;
      for (;;) {
        const Resolved& r = registry.kernel(0, 0);
        expect_consistent(r);
        // The hot path's load races with the publication: it sees nothing or the whole tuned kernel.
        if (const Resolved* hot = registry.settled(0, 0)) {
          EXPECT_EQ(hot->tier, Tier::kTuned);
          expect_consistent(*hot);
        }
        ++calls[t];
        if (r.tier == Tier::kTuned || Clock::now() > deadline) break;
        ++quick_seen[t];
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiler.quick, 1);
  EXPECT_EQ(compiler.tuned, 1);
  int quick_total = 0;
  for (int q : quick_seen) quick_total += q;
  EXPECT_GT(quick_total, 0) << "the quick kernel never served while the tuned one compiled for 200 ms";
  const KernelStats s = registry.stats()[0];
  EXPECT_EQ(s.compiles, 2u);
  EXPECT_EQ(s.quick_compiles, 1u);
  EXPECT_EQ(s.background_compiles, 1u);
  EXPECT_EQ(s.quick_calls, static_cast<std::uint64_t>(quick_total));
  EXPECT_GE(s.first_to_tuned_ns, 200'000'000u);
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kTuned);
}

/// A registry whose tuned compile waits on a gate; the first call got the quick kernel.
struct Gated {
  FakeCompiler compiler;
  std::promise<void> open;
  std::unique_ptr<Registry> registry;
  Gated() {
    compiler.gate = open.get_future().share();
    registry = std::make_unique<Registry>(kTuned, no_disk(), fake_tiers(compiler));
    EXPECT_EQ(registry->kernel(0, 0).tier, Tier::kQuick);
  }
  ~Gated() {
    try {
      open.set_value();
    } catch (const std::future_error&) {
    }
  }
};

/// Calls kernel(0, 0, request) on another thread and checks it waits for the gate.
void expect_waits_for_tuned(Gated& g, const Request& request) {
  auto call = std::async(std::launch::async, [&] { return g.registry->kernel(0, 0, request).tier; });
  EXPECT_EQ(call.wait_for(300ms), std::future_status::timeout) << "did not wait for the tuned kernel";
  g.open.set_value();
  ASSERT_EQ(call.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(call.get(), Tier::kTuned);
  EXPECT_EQ(g.compiler.tuned, 1);
}

TEST(Tiering, hot_path_is_empty_while_the_quick_kernel_serves_and_then_gives_the_tuned_one) {
  Gated g;
  Registry& registry = *g.registry;
  EXPECT_EQ(registry.settled(0, 0), nullptr);
  g.open.set_value();
  const auto deadline = Clock::now() + 30s;
  while (registry.kernel(0, 0).tier != Tier::kTuned && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  const Resolved* hot = registry.settled(0, 0);
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot, &registry.kernel(0, 0, Request{1e15, kCapturing, true}));
  expect_consistent(*hot);
  EXPECT_EQ(registry.function(0, 0), hot->function);
  // Outside the table: nothing, never an exception.
  EXPECT_EQ(registry.settled(1, 0), nullptr);
  EXPECT_EQ(registry.settled(0, -1), nullptr);
  EXPECT_EQ(registry.settled(0, Registry::kMaxDevices), nullptr);
  EXPECT_EQ(registry.settled(0, 1), nullptr);  // another device: not resolved there
}

// kernel_if_ready(): the kernel a caller can do without for now (split k's second kernel) is queued on the
// background pool at the first ask, never waited for, compiled once, and returned once published.
TEST(Tiering, kernel_if_ready_queues_the_compile_and_never_waits) {
  FakeCompiler compiler;
  std::promise<void> open;
  compiler.gate = open.get_future().share();
  TierConfig tiers = fake_tiers(compiler, TierMode::kTunedOnly);
  Registry registry(kTuned, no_disk(), tiers);
  const auto start = Clock::now();
  EXPECT_EQ(registry.kernel_if_ready(0, 0), nullptr);
  EXPECT_EQ(registry.kernel_if_ready(0, 0), nullptr) << "still compiling";
  EXPECT_LT(Clock::now() - start, 5s) << "waited for the compile";
  open.set_value();
  const Resolved* ready = nullptr;
  for (const auto deadline = Clock::now() + 30s; ready == nullptr && Clock::now() < deadline;) {
    std::this_thread::sleep_for(1ms);
    ready = registry.kernel_if_ready(0, 0);
  }
  ASSERT_NE(ready, nullptr) << "never published";
  EXPECT_EQ(ready->tier, Tier::kTuned);
  expect_consistent(*ready);
  EXPECT_EQ(ready, registry.settled(0, 0));
  EXPECT_EQ(&registry.kernel(0, 0), ready) << "a later first use finds it";
  EXPECT_EQ(compiler.tuned, 1);
  EXPECT_EQ(compiler.quick, 0);
  // Outside the table, or on a device that does not exist: null, never an exception.
  EXPECT_EQ(registry.kernel_if_ready(1, 0), nullptr);
  EXPECT_EQ(registry.kernel_if_ready(0, -1), nullptr);
  EXPECT_EQ(registry.kernel_if_ready(0, 1), nullptr);
}

TEST(Tiering, kernel_if_ready_of_a_kernel_that_fails_to_compile_stays_null) {
  FakeCompiler compiler;
  compiler.fail_tuned = true;
  Registry registry(kTuned, no_disk(), fake_tiers(compiler, TierMode::kTunedOnly));
  EXPECT_EQ(registry.kernel_if_ready(0, 0), nullptr);
  for (const auto deadline = Clock::now() + 30s; compiler.tuned.load() == 0 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(registry.kernel_if_ready(0, 0), nullptr);
  EXPECT_THROW(registry.kernel(0, 0), CompileError) << "the failure is kept for the process";
  EXPECT_EQ(compiler.tuned, 1);
}

TEST(Tiering, a_capturing_stream_never_gets_the_quick_kernel) {
  Gated g;
  EXPECT_EQ(g.registry->kernel(0, 0, Request{0, nullptr, true}).tier, Tier::kQuick);
  expect_waits_for_tuned(g, Request{0, kCapturing, true});
}

TEST(Tiering, a_call_that_allows_only_the_tuned_kernel_waits_for_it) {
  Gated g;
  expect_waits_for_tuned(g, Request{0, nullptr, false});
}

TEST(Tiering, a_product_longer_than_the_remaining_compile_waits_for_the_tuned_kernel) {
  Gated g;
  // 1e8 MACs at 1 T MAC/s: 0.1 ms, far less than the compile's ~1 s left.
  EXPECT_EQ(g.registry->kernel(0, 0, Request{1e8, nullptr, true}).tier, Tier::kQuick);
  // 1e13 MACs: 10 s on the quick kernel, longer than the whole compile.
  expect_waits_for_tuned(g, Request{1e13, nullptr, true});
}

TEST(Tiering, cost_model_compares_quick_time_with_the_compile_left) {
  const TierCost cost{1000.0, 1000.0};  // 1 T MAC/s, 1 s compile
  EXPECT_FALSE(quick_takes_longer(cost, 0, 0));
  EXPECT_FALSE(quick_takes_longer(cost, 0.9e12, 0));     // 0.9 s < 1 s left
  EXPECT_TRUE(quick_takes_longer(cost, 1.1e12, 0));      // 1.1 s > 1 s left
  EXPECT_TRUE(quick_takes_longer(cost, 0.5e12, 600e6));  // 0.5 s > 0.4 s left
  // A late compile is assumed to need a quarter of its estimate more.
  EXPECT_FALSE(quick_takes_longer(cost, 0.2e12, 5'000e6));
  EXPECT_TRUE(quick_takes_longer(cost, 0.3e12, 5'000e6));
  EXPECT_FALSE(quick_takes_longer(TierCost{}, 1e15, 0)) << "a kernel with one tier never waits";
}

TEST(Tiering, failed_tuned_compile_leaves_the_quick_kernel_serving_and_capture_gets_the_error) {
  FakeCompiler compiler;
  compiler.fail_tuned = true;
  Registry registry(kTuned, no_disk(), fake_tiers(compiler));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  EXPECT_THROW(registry.kernel(0, 0, Request{0, kCapturing, true}), CompileError);
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  EXPECT_EQ(registry.kernel(0, 0, Request{1e15, nullptr, true}).tier, Tier::kQuick);
  EXPECT_THROW(registry.function(0, 0), CompileError);
  EXPECT_EQ(registry.settled(0, 0), nullptr);
  EXPECT_EQ(compiler.tuned, 1);
}

TEST(Tiering, tiering_off_compiles_the_tuned_kernel_at_first_use) {
  FakeCompiler compiler;
  Registry registry(kTuned, no_disk(), fake_tiers(compiler, TierMode::kTunedOnly));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kTuned);
  EXPECT_EQ(compiler.quick, 0);
  EXPECT_EQ(compiler.tuned, 1);
  EXPECT_EQ(registry.stats()[0].background_compiles, 0u);
}

TEST(Tiering, quick_only_mode_serves_the_quick_kernel_and_never_compiles_the_tuned_one) {
  FakeCompiler compiler;
  Registry registry(kTuned, no_disk(), fake_tiers(compiler, TierMode::kQuickOnly));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(registry.kernel(0, 0, Request{1e15, kCapturing, true}).tier, Tier::kQuick);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(compiler.quick, 1);
  EXPECT_EQ(compiler.tuned, 0);
  // function() promises the tuned kernel: it gets it, and the quick one stays published.
  EXPECT_EQ(registry.function(0, 0), reinterpret_cast<CUfunction>(&g_tuned_token));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  EXPECT_EQ(registry.settled(0, 0), nullptr) << "the hot path would skip the quick kernel";
  EXPECT_EQ(registry.function(0, 0), reinterpret_cast<CUfunction>(&g_tuned_token));
  EXPECT_EQ(compiler.tuned, 1);
}

TEST(Tiering, tropical_tiered_0_turns_tiering_off) {
  const char* saved = std::getenv("TROPICAL_TIERED");
  const std::string before = saved ? saved : "";
  for (const char* off : {"0", "false", "No", "OFF"}) {
    setenv("TROPICAL_TIERED", off, 1);
    EXPECT_EQ(tier_mode_from_env(), TierMode::kTunedOnly) << off;
  }
  for (const char* on : {"1", "yes", "", "on"}) {
    setenv("TROPICAL_TIERED", on, 1);
    EXPECT_EQ(tier_mode_from_env(), TierMode::kTiered) << on;
  }
  setenv("TROPICAL_TIERED", "Quick", 1);
  EXPECT_EQ(tier_mode_from_env(), TierMode::kQuickOnly);
  unsetenv("TROPICAL_TIERED");
  EXPECT_EQ(tier_mode_from_env(), TierMode::kTiered);
  if (saved != nullptr) setenv("TROPICAL_TIERED", before.c_str(), 1);
}

/// A fresh cache directory for this test file, removed afterwards.
struct TempDir : ::tropical::test::TempDir {
  TempDir() : ::tropical::test::TempDir("tiering") {}
};

CacheConfig cache_in(const std::filesystem::path& dir) {
  CacheConfig config;
  config.dir = dir;
  return config;
}

TEST(Tiering, a_process_with_the_tuned_image_on_disk_never_touches_the_quick_tier) {
  TempDir dir;
  FakeCompiler first;
  Registry(kTuned, cache_in(dir.path()), fake_tiers(first)).warm({}, 90);
  EXPECT_EQ(first.tuned, 1);
  EXPECT_EQ(first.quick, 0) << "warm compiles the tuned tier only";
  FakeCompiler second;
  Registry registry(kTuned, cache_in(dir.path()), fake_tiers(second));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kTuned);
  EXPECT_EQ(second.quick + second.tuned, 0);
  EXPECT_EQ(registry.stats()[0].disk_hits, 1u);
  EXPECT_EQ(registry.stats()[0].quick_calls, 0u);
}

TEST(Tiering, the_real_catalog_has_a_quick_tier_for_every_product_and_none_for_backward) {
  for (std::size_t i = 0; i < catalog::kKernelCount; ++i) {
    const Op op = catalog::kInfo[i].op;
    // Every product op of every semiring, small-tile variants included, but the skinny tiles (a short loop
    // that compiles in tens of milliseconds: codegen/spec.py, SKINNY_TILES) and the split-k kernels (never
    // waited for: SPLIT_OPS), which have one tier.
    const std::string_view variant = catalog::kInfo[i].variant;
    const bool skinny = variant == "skinny" || variant == "split";
    const bool product = !skinny && (op == Op::kGemm || op == Op::kGemmArgmax || op == Op::kGemmBatched ||
                                     op == Op::kGemmBatchedArgmax);
    EXPECT_EQ(!catalog::kQuickKernels[i].source.empty(), product) << catalog::kInfo[i].name;
    EXPECT_EQ(catalog::kTierCost[i].quick_macs_per_ns > 0, product) << catalog::kInfo[i].name;
    if (product) {
      EXPECT_EQ(catalog::kQuickKernels[i].name, std::string(catalog::kInfo[i].name) + "_quick");
    }
  }
}

}  // namespace
}  // namespace tropical::jit
