// The registry on a machine without a GPU: compile once under races, sticky
// errors, warm() over the catalog, and a cached process that never maps NVRTC.
#include "../temp_dir.hpp"
#include "tropical/jit/registry.hpp"

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
#include <fstream>
#include <future>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tropical/catalog_sources.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::jit {
namespace {

constexpr int kArch = 90;

/// A fresh cache directory for this test file, removed afterwards.
struct TempDir : ::tropical::test::TempDir {
  TempDir() : ::tropical::test::TempDir("registry") {}
};

CacheConfig cache_in(const std::filesystem::path& dir) {
  CacheConfig config;
  config.dir = dir;
  return config;
}

CacheConfig no_disk() {
  CacheConfig config;
  config.enabled = false;
  return config;
}

bool nvrtc_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libnvrtc") != std::string::npos;
}

TEST(Registry, sixteen_threads_racing_on_first_use_compile_once) {
  Registry registry(catalog::kKernels, no_disk());
  constexpr int kThreads = 16;
  std::atomic<int> ready{0};
  std::array<const CompiledImage*, kThreads> seen{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      seen[t] = &registry.image(0, kArch);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto* image : seen) EXPECT_EQ(image, seen[0]);
  EXPECT_FALSE(seen[0]->cubin.empty());
  const auto stats = registry.stats();
  EXPECT_EQ(stats[0].compiles, 1u);
  for (std::size_t i = 1; i < stats.size(); ++i) EXPECT_EQ(stats[i].compiles, 0u);
}

constexpr KernelSource kBroken[] = {
    {0, "broken", "extern \"C\" __global__ void broken() { this_is_not_declared = 1; }\n", "0"},
};

TEST(Registry, failed_compile_reaches_every_racing_thread_with_the_log) {
  Registry registry(kBroken, no_disk());
  constexpr int kThreads = 16;
  std::vector<std::future<std::string>> results;
  for (int t = 0; t < kThreads; ++t) {
    results.push_back(std::async(std::launch::async, [&] {
      try {
        registry.image(0, kArch);
      } catch (const CompileError& e) {
        return e.log();
      }
      return std::string("no exception");
    }));
  }
  for (auto& r : results) {
    ASSERT_EQ(r.wait_for(std::chrono::seconds(120)), std::future_status::ready) << "a thread hung";
    EXPECT_NE(r.get().find("this_is_not_declared"), std::string::npos);
  }
  EXPECT_EQ(registry.stats()[0].compiles, 0u);
}

TEST(Registry, failed_compile_is_not_retried_in_this_process) {
  Registry registry(kBroken, no_disk());
  const CompileError* first = nullptr;
  try {
    registry.image(0, kArch);
  } catch (const CompileError& e) {
    first = &e;
  }
  ASSERT_NE(first, nullptr);
  // The slot keeps the exception: the second call rethrows the same object.
  try {
    registry.image(0, kArch);
    FAIL() << "second call did not throw";
  } catch (const CompileError& e) {
    EXPECT_EQ(&e, first);
    EXPECT_FALSE(e.options().empty());
  }
}

TEST(Registry, a_new_registry_retries_a_failed_compile) {
  // Failures are never cached on disk: another registry (or process) tries again.
  TempDir dir;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Registry registry(kBroken, cache_in(dir.path()));
    EXPECT_THROW(registry.image(0, kArch), CompileError);
    EXPECT_EQ(registry.disk().info().entries, 0u);
  }
}

constexpr KernelSource kTiny[] = {
    {0, "tiny", "extern \"C\" __global__ void tiny() {}\n", "0"},
};

TEST(Registry, debug_log_tells_a_memory_hit_from_a_compile) {
  CacheConfig config = no_disk();
  config.log = LogLevel::kDebug;
  Registry registry(kTiny, config);
  ::testing::internal::CaptureStderr();
  const CompiledImage& first = registry.image(0, kArch);
  const CompiledImage& second = registry.image(0, kArch);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(&first, &second);
  const auto count = [&](const std::string& needle) {
    int n = 0;
    for (auto at = err.find(needle); at != std::string::npos; at = err.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("tropical: info: tiny sm_90: compiled in "), 1) << err;
  EXPECT_EQ(count("tropical: debug: tiny sm_90: memory hit"), 1) << err;
}

TEST(Registry, unknown_kernel_id_is_an_invalid_argument) {
  Registry registry(catalog::kKernels, no_disk());
  EXPECT_THROW(registry.image(static_cast<std::uint32_t>(catalog::kKernelCount), kArch), InvalidArgument);
}

TEST(Registry, catalog_with_ids_out_of_order_is_rejected) {
  constexpr KernelSource kBad[] = {{1, "a", "", "0"}};
  EXPECT_THROW(Registry(kBad, no_disk()), InvalidArgument);
}

TEST(Registry, function_without_a_driver_throws_unavailable) {
  if (driver::available()) {
    GTEST_SKIP() << "a CUDA driver is present; this checks the no-GPU path";
  }
  Registry registry(catalog::kKernels, no_disk());
  EXPECT_THROW(registry.function(0, 0), Unavailable);
  EXPECT_THROW(registry.function(0, 0), Unavailable);
}

// Every backward kernel (the cheap ones: ~30 ms each): enough kernels to keep
// every core busy. That every fragment of the catalog compiles is
// catalog_compile's job; compiling all of them again here would double CI time.
TEST(Registry, warm_of_many_kernels_for_sm_90_needs_no_gpu_and_uses_every_core) {
  std::vector<std::uint32_t> ids;
  for (const auto& info : catalog::kInfo) {
    if (info.op == Op::kBackwardA || info.op == Op::kBackwardB) ids.push_back(static_cast<std::uint32_t>(info.id));
  }
  ASSERT_GE(ids.size(), 8u);
  Registry registry(catalog::kKernels, no_disk());
  const WarmReport report = registry.warm(ids, kArch);
  for (const auto& e : report.errors) ADD_FAILURE() << e;
  EXPECT_EQ(report.kernels, ids.size());
  EXPECT_EQ(report.compiled, ids.size());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(report.threads, std::min<unsigned>(cores, static_cast<unsigned>(ids.size())));
  // Every worker compiled at the same time at least once: one NVRTC per core.
  EXPECT_EQ(report.peak_compiles, report.threads);
  std::printf("warm: %zu kernels on %u threads (%u compiles at once at peak) in %.2f s\n", report.kernels,
              report.threads, report.peak_compiles, report.seconds);
  // Everything is now in memory: a second warm compiles nothing.
  const WarmReport again = registry.warm(ids, kArch);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.ready, ids.size());
}

// Warms racing on one kernel: one NVRTC compile per (kernel, arch) in the process, and each report counts
// its own call only (compiled + ready + failed = kernels asked for), whatever the others compiled.
TEST(Registry, concurrent_warms_of_one_kernel_compile_once_per_arch_and_report_their_own_counts) {
  Registry registry(catalog::kKernels, no_disk());
  constexpr int kThreads = 8;
  const std::uint32_t id = 0;
  std::atomic<int> ready{0};
  std::array<WarmReport, kThreads> reports{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();
      reports[t] = registry.warm(std::span(&id, 1), t % 2 == 0 ? 80 : 90, 1);
    });
  }
  for (auto& t : threads) t.join();
  std::size_t compiled = 0;
  for (const WarmReport& r : reports) {
    for (const auto& e : r.errors) ADD_FAILURE() << e;
    EXPECT_EQ(r.kernels, 1u);
    EXPECT_LE(r.compiled, 1u);
    EXPECT_LE(r.ready, 1u);  // not an unsigned underflow
    EXPECT_EQ(r.compiled + r.ready + r.errors.size(), 1u) << "compiled " << r.compiled << ", ready " << r.ready;
    compiled += r.compiled;
  }
  EXPECT_EQ(compiled, 2u);  // sm_80 and sm_90
  EXPECT_EQ(registry.stats()[id].compiles, 2u);
}

/// Runs this test binary again with only `filter`, `env` added to the environment; returns its exit status.
int run_child(const std::string& filter, const std::vector<std::string>& env) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter_arg = "--gtest_filter=" + filter;
  char* argv[] = {exe.data(), filter_arg.data(), nullptr};
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs only as a child of the test below (fresh process, NVRTC never loaded).
TEST(RegistryChild, resolves_kernel_from_disk) {
  const char* dir = std::getenv("TROPICAL_TEST_CHILD_CACHE");
  if (dir == nullptr) {
    GTEST_SKIP() << "child half of process_that_never_misses_does_not_map_nvrtc";
  }
  const bool expect_compile = std::getenv("TROPICAL_TEST_CHILD_COMPILES") != nullptr;
  Registry registry(catalog::kKernels, cache_in(dir));
  ASSERT_FALSE(nvrtc_mapped());
  const CompiledImage& image = registry.image(3, kArch);
  EXPECT_FALSE(image.cubin.empty());
  EXPECT_EQ(registry.stats()[3].compiles, expect_compile ? 1u : 0u);
  EXPECT_EQ(registry.stats()[3].disk_hits, expect_compile ? 0u : 1u);
  EXPECT_EQ(nvrtc_mapped(), expect_compile);
  EXPECT_EQ(nvrtc_loaded(), expect_compile);
}

TEST(Registry, process_that_never_misses_does_not_map_nvrtc) {
  TempDir dir;
  const std::string cache = "TROPICAL_TEST_CHILD_CACHE=" + dir.path().string();
  // A first process compiles kernel 3 into the cache; a second one only reads it.
  EXPECT_EQ(run_child("RegistryChild.*", {cache, "TROPICAL_TEST_CHILD_COMPILES=1"}), 0);
  EXPECT_EQ(run_child("RegistryChild.*", {cache}), 0);
}

}  // namespace
}  // namespace tropical::jit
