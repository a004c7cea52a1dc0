// The two tiers side by side, in one run:
//   compile  NVRTC compile of every quick fragment (and the tuned fragment of
//            the same kernels for comparison), each in a fresh process with
//            CUDA_CACHE_DISABLE=1, median/min/max of --repeat; needs no GPU.
//   rate     quick vs tuned throughput (T MAC/s, CUDA events, median) of the
//            products at 1024^3 and 8192^3 on GPU 0, and their ratio.
// Usage: tiers_bench [compile|rate|all] [--repeat N] [--arch sm_XY]
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../tests/gpu/tier_launch.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/tropical.hpp"

namespace {

using namespace tropical;
using jit::Tier;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ------------------------------------------------------------------ compile

/// Child: compiles one fragment (tier 0 tuned, 1 quick) and prints its wall time.
int child_compile(std::size_t id, int tier, int arch) {
  const jit::KernelSource& k = tier == 1 ? catalog::kQuickKernels[id] : catalog::kKernels[id];
  const auto t = Clock::now();
  const storage::CompiledImage image = jit::compile(k, arch, jit::effort_of(tier == 1 ? Tier::kQuick : Tier::kTuned));
  std::printf("MS %.3f %zu\n", std::chrono::duration<double, std::milli>(Clock::now() - t).count(), image.cubin.size());
  return 0;
}

double spawn_compile(std::size_t id, int tier, int arch) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {exe, "--child", std::to_string(id), std::to_string(tier), std::to_string(arch)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = {"CUDA_CACHE_DISABLE=1"};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int r = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; r == 0 && (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  if (r == 0) waitpid(pid, &status, 0);
  double ms = -1;
  const auto at = out.find("MS ");
  if (at != std::string::npos) std::sscanf(out.c_str() + at, "MS %lf", &ms);
  return ms;
}

void compile_table(int arch, int repeat) {
  std::printf("NVRTC compile, fresh process, CUDA_CACHE_DISABLE=1, sm_%d, median of %d (ms)\n", arch, repeat);
  std::printf("%-44s %8s %8s %8s %10s\n", "quick fragment", "median", "min", "max", "tuned med");
  std::vector<double> medians;
  for (std::size_t id = 0; id < catalog::kKernelCount; ++id) {
    if (catalog::kQuickKernels[id].source.empty()) continue;
    std::vector<double> q;
    for (int i = 0; i < repeat; ++i) q.push_back(spawn_compile(id, 1, arch));
    // The tuned fragment once per op for f32 MaxPlus only: it costs ~1 s a compile.
    const bool compare = catalog::kInfo[id].semiring == "maxplus" && catalog::kInfo[id].type == "f32";
    std::vector<double> t;
    for (int i = 0; compare && i < repeat; ++i) t.push_back(spawn_compile(id, 0, arch));
    medians.push_back(median(q));
    std::printf("%-44s %8.1f %8.1f %8.1f %10s\n", std::string(catalog::kQuickKernels[id].name).c_str(), median(q),
                *std::min_element(q.begin(), q.end()), *std::max_element(q.begin(), q.end()),
                compare ? std::to_string(static_cast<int>(median(t))).c_str() : "");
  }
  std::printf("quick fragments: %zu, slowest median %.1f ms (target <= 150 ms here, ~100 ms on the H100 host)\n\n",
              medians.size(), *std::max_element(medians.begin(), medians.end()));
}

// ------------------------------------------------------------------ rate

template <class T>
std::vector<T> values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

/// Median seconds of `launch` over `repeat` timed runs after one warm-up, by CUDA events.
template <class F>
double time_launch(F&& launch, int repeat) {
  const auto& api = jit::driver::api();
  jit::driver::ScopedContext context(0);
  CUevent start = nullptr, stop = nullptr;
  api.cuEventCreate(&start, 0);
  api.cuEventCreate(&stop, 0);
  launch();
  std::vector<double> s;
  for (int i = 0; i < repeat; ++i) {
    api.cuEventRecord(start, nullptr);
    launch();
    api.cuEventRecord(stop, nullptr);
    api.cuEventSynchronize(stop);
    float ms = 0;
    api.cuEventElapsedTime(&ms, start, stop);
    s.push_back(ms * 1e-3);
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  return median(s);
}

template <class S, class T>
void rate_rows(testing::TierLauncher& l, const char* type, long long size, int repeat) {
  const long long n = size;
  const auto a = values<T>(static_cast<std::size_t>(n * n), 1), b = values<T>(static_cast<std::size_t>(n * n), 2);
  DeviceBuffer<T> da(a), db(b), dc(static_cast<std::size_t>(n * n));
  DeviceBuffer<std::int32_t> darg(static_cast<std::size_t>(n * n));
  const double macs = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  double rate[2][2] = {};
  for (Tier tier : {Tier::kQuick, Tier::kTuned}) {
    const int t = tier == Tier::kQuick ? 0 : 1;
    rate[0][t] = macs / time_launch([&] {
      l.gemm(kernel_id<S, T, Op::kGemm>(), tier, n, n, n, da.get(), n, db.get(), n, dc.get(), n);
    }, repeat) * 1e-12;
    rate[1][t] = macs / time_launch([&] {
      l.gemm_argmax(kernel_id<S, T, Op::kGemmArgmax>(), tier, n, n, n, da.get(), n, db.get(), n, dc.get(), n,
                    darg.get(), n);
    }, repeat) * 1e-12;
  }
  for (int op = 0; op < 2; ++op) {
    std::printf("%-12s %-8s %-4s %6lld^3 %10.2f %10.2f %8.2f\n", op == 0 ? "gemm" : "gemm_argmax",
                std::string(S::kName).c_str(), type, size, rate[op][0], rate[op][1], rate[op][0] / rate[op][1]);
  }
}

void rate_table(int repeat) {
  if (!jit::driver::available()) {
    std::printf("rate: no CUDA device, skipped\n");
    return;
  }
  testing::TierLauncher l;
  std::printf("throughput on GPU 0, T MAC/s (median of %d, CUDA events)\n", repeat);
  std::printf("%-12s %-8s %-4s %8s %10s %10s %8s\n", "op", "semiring", "type", "size", "quick", "tuned", "ratio");
  for (long long size : {1024LL, 8192LL}) {
    rate_rows<MaxPlus, float>(l, "f32", size, repeat);
    rate_rows<MinPlus, float>(l, "f32", size, repeat);
    rate_rows<MaxPlus, double>(l, "f64", size, repeat);
    rate_rows<MaxPlus, std::int32_t>(l, "i32", size, repeat);
    rate_rows<MaxPlus, std::int64_t>(l, "i64", size == 8192 ? 4096 : size, repeat);
  }
  // Batched: 4096 products of 64^3.
  const long long m = 64, batch = 4096;
  const auto a = values<float>(static_cast<std::size_t>(m * m * batch), 3);
  DeviceBuffer<float> da(a), db(a), dc(a.size());
  double r[2];
  for (Tier tier : {Tier::kQuick, Tier::kTuned}) {
    r[tier == Tier::kQuick ? 0 : 1] =
        static_cast<double>(m * m * m * batch) / time_launch([&] {
          l.gemm_batched(catalog::KernelId::kGemmBatchedMaxplusF32, tier, m, m, m, da.get(), m, m * m, db.get(), m,
                         m * m, dc.get(), m, m * m, batch);
        }, repeat) * 1e-12;
  }
  std::printf("%-12s %-8s %-4s %8s %10.2f %10.2f %8.2f\n", "gemm_batched", "maxplus", "f32", "4096x64^3", r[0], r[1],
              r[0] / r[1]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "--child") == 0) {
    return child_compile(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]), std::atoi(argv[4]));
  }
  std::string what = argc >= 2 && argv[1][0] != '-' ? argv[1] : "all";
  int repeat = 5, arch = jit::driver::available() ? device_arch(0) : 90;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--arch") == 0) arch = std::atoi(argv[i + 1] + (std::strncmp(argv[i + 1], "sm_", 3) == 0 ? 3 : 0));
  }
  if (what == "compile" || what == "all") compile_table(arch, repeat);
  if (what == "rate" || what == "all") rate_table(repeat);
  return 0;
}
