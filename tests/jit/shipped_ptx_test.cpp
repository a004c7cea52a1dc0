// First use from shipped PTX without a GPU: a fake driver whose JIT records
// what it is given drives the registry's choice between the driver's JIT and
// NVRTC (Registry::device_image), the cache key of a JIT image, single flight,
// and the fallbacks. The real driver's JIT is checked on a GPU
// (tests/gpu/tiers_gpu_test.cpp: quick kernels equal their tuned ones), and the
// catalog's PTX by catalog_compile_test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/registry.hpp"

namespace tropical::jit {
namespace {

using namespace std::chrono_literals;

// Kernel 0 has two tiers (PTX ships for its quick fragment), kernel 1 one tier (PTX for it).
constexpr KernelSource kTuned[] = {{0, "tropical_two", "tuned source", "tuned-digest"},
                                   {1, "tropical_one", "one source", "one-digest"}};
constexpr KernelSource kQuick[] = {{0, "tropical_two_quick", "quick source", "quick-digest"}, {1, "", "", ""}};
constexpr LaunchShape kShape[] = {{16, 16, 64, 64, 0}, {16, 16, 64, 64, 0}};
constexpr TierCost kCost[] = {{1000.0, 1000.0}, {0.0, 0.0}};
constexpr TierTable kTable{kQuick, kShape, kShape, kCost};
constexpr ShippedPtx kPtx[] = {{Tier::kQuick, 80, "ptx-digest-two", "PTX of tropical_two_quick"},
                               {Tier::kTuned, 80, "ptx-digest-one", "PTX of tropical_one"}};

CompiledImage image_of(std::string_view name) {
  CompiledImage image;
  image.cubin.assign(reinterpret_cast<const std::byte*>(name.data()),
                     reinterpret_cast<const std::byte*>(name.data()) + name.size());
  return image;
}

/// One device of sm_<device_arch>; its JIT returns a CUBIN naming the kernel, or throws if `refuse`.
class JitLoader final : public DeviceLoader {
 public:
  explicit JitLoader(int device_arch = 90) : device_arch_(device_arch) {}
  int device_count() override { return 1; }
  int arch(int) override { return device_arch_; }
  LoadedModule load(int, const CompiledImage& image, const std::string& name,
                    const std::function<std::string()>&) override {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.cubin.data()), image.cubin.size()), name)
        << "the image of another kernel was loaded";
    return {reinterpret_cast<CUmodule>(this), reinterpret_cast<CUfunction>(this)};
  }
  std::optional<std::vector<std::byte>> jit(int device, std::string_view ptx, const std::string& name) override {
    EXPECT_EQ(device, 0);
    EXPECT_EQ(std::string(ptx), "PTX of " + name) << "the PTX of another fragment was given to the JIT";
    ++jits;
    std::this_thread::sleep_for(delay);
    if (refuse) throw CudaError("cuLinkAddData", CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "fake refusal");
    return image_of(name).cubin;
  }
  std::string jit_identity() noexcept override { return "fake-jit 1.0"; }
  void unload(int, CUmodule) noexcept override {}
  bool capturing(CUstream) noexcept override { return false; }

  std::atomic<int> jits{0};
  std::chrono::milliseconds delay{0};
  bool refuse = false;

 private:
  int device_arch_;
};

/// Counts NVRTC stand-in compiles per fragment name.
struct CountingCompiler {
  std::atomic<int> quick{0}, tuned{0};
  Compiler fn() {
    return [this](const KernelSource& k, int) {
      ++(k.name.ends_with("_quick") ? quick : tuned);
      return image_of(k.name);
    };
  }
};

CacheConfig cache_in(const std::filesystem::path& dir) {
  CacheConfig config;
  config.dir = dir;
  return config;
}

TierConfig tiers(CountingCompiler& compiler, std::shared_ptr<JitLoader> loader, bool ship = true) {
  TierConfig t;
  t.table = kTable;
  t.loader = std::move(loader);
  t.compiler = compiler.fn();
  if (ship) t.ptx = kPtx;
  return t;
}

/// Calls kernel `id` until the tuned kernel serves (at most 30 s).
void until_tuned(Registry& registry, std::uint32_t id) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (registry.kernel(id, 0).tier != Tier::kTuned && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(registry.kernel(id, 0).tier, Tier::kTuned);
}

TEST(ShippedPtx, a_quick_first_use_takes_the_driver_jit_and_nvrtc_only_compiles_the_tuned_fragment) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, loader));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  until_tuned(registry, 0);
  EXPECT_EQ(loader->jits, 1);
  EXPECT_EQ(compiler.quick, 0) << "the quick fragment went through NVRTC although its PTX ships";
  EXPECT_EQ(compiler.tuned, 1);
  const KernelStats s = registry.stats()[0];
  EXPECT_EQ(s.jit_compiles, 1u);
  EXPECT_EQ(s.quick_compiles, 1u);
  EXPECT_EQ(s.compiles, 2u);
}

TEST(ShippedPtx, the_jit_image_is_stored_under_its_own_key_and_a_new_process_jits_nothing) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  {
    Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, loader));
    registry.kernel(1, 0);
  }
  EXPECT_EQ(loader->jits, 1);
  EXPECT_EQ(compiler.tuned, 0);
  Registry again(kTuned, cache_in(dir.path()), tiers(compiler, loader));
  const std::optional<CacheKey> key = again.jit_cache_key(1, 90);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->kernel_name, "tropical_one");
  EXPECT_EQ(key->source_digest, "ptx-digest-one");
  EXPECT_EQ(key->compiler, "fake-jit 1.0");
  ASSERT_FALSE(key->options.empty());
  EXPECT_EQ(key->options[0], kDriverJitOption);
  EXPECT_NE(key->digest(), again.cache_key(1, 90).digest()) << "a JIT image must not pass for an NVRTC one";
  EXPECT_TRUE(again.stores().find(*key).has_value());
  again.kernel(1, 0);
  EXPECT_EQ(loader->jits, 1);
  EXPECT_EQ(again.stats()[1].disk_hits, 1u);
}

TEST(ShippedPtx, an_nvrtc_image_in_the_stores_serves_before_the_jit) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  {
    // As `tropical warm` does: NVRTC images, no device.
    Registry warm(kTuned, cache_in(dir.path()), tiers(compiler, loader));
    warm.image(1, 90);
    warm.image(0, 90, Tier::kQuick);
  }
  EXPECT_EQ(compiler.tuned, 1);
  EXPECT_EQ(compiler.quick, 1);
  Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, loader));
  registry.kernel(1, 0);
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  EXPECT_EQ(loader->jits, 0);
  EXPECT_EQ(compiler.quick, 1);
  until_tuned(registry, 0);
}

TEST(ShippedPtx, a_refused_jit_falls_back_to_nvrtc) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  loader->refuse = true;
  Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, loader));
  EXPECT_NO_THROW(registry.kernel(1, 0));
  EXPECT_EQ(loader->jits, 1);
  EXPECT_EQ(compiler.tuned, 1);
  EXPECT_EQ(registry.stats()[1].jit_compiles, 0u);
  EXPECT_TRUE(registry.stores().find(registry.cache_key(1, 90)).has_value()) << "the NVRTC image is stored as such";
}

TEST(ShippedPtx, a_device_older_than_the_ptx_or_a_loader_without_jit_compiles_with_nvrtc) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto old_device = std::make_shared<JitLoader>(75);
  Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, old_device));
  EXPECT_FALSE(registry.jit_cache_key(1, 75).has_value());
  registry.kernel(1, 0);
  EXPECT_EQ(old_device->jits, 0);
  EXPECT_EQ(compiler.tuned, 1);

  CountingCompiler plain;
  Registry unshipped(kTuned, cache_in(dir.path() / "b"), tiers(plain, std::make_shared<JitLoader>(), false));
  EXPECT_FALSE(unshipped.jit_cache_key(1, 90).has_value());
  unshipped.kernel(1, 0);
  EXPECT_EQ(plain.tuned, 1);
}

TEST(ShippedPtx, an_arch_specific_kernel_takes_no_shipped_ptx_and_compiles_for_its_arch_as_such) {
  test::TempDir dir("ptx");
  // Kernel 1 uses sm_90a's own features: a PTX in the table (portable, so its stub) is never handed to the JIT.
  constexpr KernelSource kSpecific[] = {{0, "tropical_two", "tuned source", "tuned-digest"},
                                        {1, "tropical_one", "one source", "one-digest", 90}};
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  Registry registry(kSpecific, cache_in(dir.path()), tiers(compiler, loader));
  EXPECT_FALSE(registry.jit_cache_key(1, 90).has_value());
  registry.kernel(1, 0);
  EXPECT_EQ(loader->jits, 0);
  EXPECT_EQ(compiler.tuned, 1);
  // Its key names sm_90a on its arch (no sm_90 image is ever taken for it), sm_XY on any other.
  EXPECT_EQ(registry.cache_key(1, 90).options.front(), "--gpu-architecture=sm_90a");
  EXPECT_EQ(registry.cache_key(1, 80).options, compile_options(80));
  EXPECT_EQ(registry.cache_key(0, 90).options, compile_options(90));
}

TEST(ShippedPtx, sixteen_threads_racing_on_first_use_get_one_jit) {
  test::TempDir dir("ptx");
  CountingCompiler compiler;
  auto loader = std::make_shared<JitLoader>();
  loader->delay = 50ms;
  Registry registry(kTuned, cache_in(dir.path()), tiers(compiler, loader));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      ++ready;
      while (ready < 16) std::this_thread::yield();
      registry.kernel(1, 0);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(loader->jits, 1);
  EXPECT_EQ(compiler.tuned, 0);
}

TEST(ShippedPtx, without_nvrtc_the_one_tier_kernels_and_the_quick_products_still_run) {
  test::TempDir dir("ptx");
  auto loader = std::make_shared<JitLoader>();
  TierConfig t;
  t.table = kTable;
  t.loader = loader;
  t.ptx = kPtx;
  std::atomic<int> attempts{0};
  t.compiler = [&](const KernelSource&, int) -> CompiledImage {
    ++attempts;
    throw Unavailable("tropical: libnvrtc.so.13 not found (test)");
  };
  Registry registry(kTuned, cache_in(dir.path()), std::move(t));
  EXPECT_NO_THROW(registry.kernel(1, 0));
  EXPECT_EQ(registry.kernel(0, 0).tier, Tier::kQuick);
  // The tuned compile fails in the background; the quick kernel goes on serving, also for a call that waits.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (attempts == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(registry.kernel(0, 0, Request{1e15, nullptr, true}).tier, Tier::kQuick);
  EXPECT_THROW(registry.function(0, 0), Unavailable) << "a call that allows only the tuned kernel gets the error";
  EXPECT_EQ(loader->jits, 2);
  EXPECT_EQ(attempts, 1);
}

TEST(ShippedPtx, the_build_compiled_the_ptx_with_the_run_time_options) {
  for (const Effort effort : {Effort::kFull, Effort::kLight}) {
    const std::vector<std::string> options = compile_options(80, effort);
    std::string joined;
    for (std::size_t i = 1; i < options.size(); ++i) joined += (i > 1 ? " " : "") + options[i];
    EXPECT_EQ(catalog::kShippedPtxOptions[effort == Effort::kLight ? 1 : 0], joined)
        << "codegen/ptx.py and jit::compile_options disagree";
  }
}

TEST(ShippedPtx, the_catalog_ships_ptx_of_every_quick_fragment_and_one_tier_kernel_but_sm_xya_and_split_ones) {
  if (!TROPICAL_SHIP_PTX) GTEST_SKIP() << "built with -Dship_ptx=false: the library ships no PTX";
  for (std::size_t id = 0; id < catalog::kKernelCount; ++id) {
    const ShippedPtx& ptx = catalog::kShippedPtx[id];
    const bool two_tiers = !catalog::kQuickKernels[id].source.empty();
    SCOPED_TRACE(std::string(catalog::kKernels[id].name));
    if (catalog::kKernels[id].feature_arch != 0) {  // arch-specific (sm_XYa): its portable PTX would be a stub
      EXPECT_TRUE(ptx.text.empty());
      continue;
    }
    if (catalog::kInfo[id].variant == "split") {  // never waited for: compiled in the background, from source
      EXPECT_TRUE(ptx.text.empty());
      continue;
    }
    ASSERT_FALSE(ptx.text.empty());
    EXPECT_EQ(ptx.tier, two_tiers ? Tier::kQuick : Tier::kTuned);
    EXPECT_GE(ptx.arch, 75);
    EXPECT_EQ(ptx.digest.size(), 64u);
    const std::string_view name = two_tiers ? catalog::kQuickKernels[id].name : catalog::kKernels[id].name;
    EXPECT_NE(ptx.text.find(".entry " + std::string(name) + "("), std::string_view::npos);
    EXPECT_NE(ptx.text.find(".target sm_" + std::to_string(ptx.arch)), std::string_view::npos);
  }
}

}  // namespace
}  // namespace tropical::jit
