// Start-up benchmark: what a program pays before its first products, measured
// side by side in fresh processes, in one run.
//
//   (a)  whole catalog: every fragment NVRTC-compiled as ONE program, then loaded
//   (b)  tropical, first run of a program using 5 kernels (cold disk cache)
//   (b') the same program, warming its 5 kernels up front with tropical::warm
//   (c)  tropical, second run of that program (disk cache warm)
//   (d)  NVRTC 13's own compute cache, warm, for the same 5 kernels (no disk tier)
//   (e)  8 processes cold on one key at once (exactly one compile expected)
//   (f)  a fresh user (empty cache) with a shipped read-only layer holding the 5 kernels: 0 compiles
//        expected, the hits copied into the fresh cache
//
// Cold rows run with CUDA_CACHE_DISABLE=1 so NVRTC's cache cannot help them.
// Without a GPU every row stops at the CUBIN (no module load), and (d) shows
// NVRTC without its cache, which needs libcuda. Usage: startup [--arch sm_XY]
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tropical/catalog_sources.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace {

using namespace tropical;
namespace drv = jit::driver;
using Clock = std::chrono::steady_clock;

/// The five kernels of the example program: a forward pass with argmax, its
/// two gradients, and two plain products.
constexpr std::array<catalog::KernelId, 5> kProgram = {
    catalog::KernelId::kGemmArgmaxMaxplusF32, catalog::KernelId::kBackwardAMaxplusF32,
    catalog::KernelId::kBackwardBMaxplusF32, catalog::KernelId::kGemmMaxplusF32,
    catalog::KernelId::kGemmMinplusF32};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

bool nvrtc_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libnvrtc") != std::string::npos;
}

/// What one child measured: context creation, the work, compiles it did.
struct Result {
  double context_ms = 0, work_ms = 0;
  long compiles = 0;
  int nvrtc = 0;
  bool ok = false;
};

// ------------------------------------------------------------------ children

/// Creates the primary context of GPU 0 (if any) and returns its cost.
double create_context(bool gpu) {
  const auto t = Clock::now();
  if (gpu) drv::primary_context(0);
  return ms_since(t);
}

int child_whole(int arch, bool gpu) {
  const double ctx = create_context(gpu);
  const auto t = Clock::now();
  // One program: each fragment in its own namespace (extern "C" names stay
  // unique), the preamble's macros reset between them.
  std::string source;
  for (const auto& k : catalog::kKernels) {
    source += "namespace fragment_" + std::to_string(k.id) + " {\n" + std::string(k.source) +
              "\n}\n#undef TROPICAL_LOWEST\n#undef TROPICAL_HIGHEST\n";
  }
  const jit::KernelSource whole{0, "whole_catalog", source, ""};
  const jit::CompiledImage image = jit::compile(whole, arch);
  if (gpu) {
    drv::ScopedContext context(0);
    CUmodule module = nullptr;
    drv::check(drv::api().cuModuleLoadData(&module, image.cubin.data()), "cuModuleLoadData");
    for (const auto& k : catalog::kKernels) {
      CUfunction f = nullptr;
      drv::check(drv::api().cuModuleGetFunction(&f, module, std::string(k.name).c_str()), "cuModuleGetFunction");
    }
  }
  std::printf("RESULT %.3f %.3f %zu %d\n", ctx, ms_since(t), catalog::kKernelCount, nvrtc_mapped() ? 1 : 0);
  return 0;
}

int child_program(int arch, bool gpu, bool warm_first, std::size_t kernels) {
  const double ctx = create_context(gpu);
  const auto t = Clock::now();
  if (warm_first) {
    const auto report = warm(arch, std::span(kProgram.data(), kernels));
    if (!report.errors.empty()) return 1;
  }
  for (std::size_t i = 0; i < kernels; ++i) {
    const auto id = static_cast<std::uint32_t>(kProgram[i]);
    if (gpu) {
      registry().function(id, 0);
    } else {
      registry().image(id, arch);
    }
  }
  const double work = ms_since(t);
  long compiles = 0;
  for (const auto& s : registry().stats()) compiles += static_cast<long>(s.compiles);
  std::printf("RESULT %.3f %.3f %ld %d\n", ctx, work, compiles, nvrtc_mapped() ? 1 : 0);
  return 0;
}

int child_nvrtc_only(int arch, bool gpu) {
  const double ctx = create_context(gpu);
  const auto t = Clock::now();
  for (auto id : kProgram) {
    const jit::CompiledImage image = jit::compile(catalog::kKernels[static_cast<std::size_t>(id)], arch);
    if (gpu) {
      drv::ScopedContext context(0);
      CUmodule module = nullptr;
      drv::check(drv::api().cuModuleLoadData(&module, image.cubin.data()), "cuModuleLoadData");
    }
  }
  std::printf("RESULT %.3f %.3f %zu %d\n", ctx, ms_since(t), kProgram.size(), 1);
  return 0;
}

// ------------------------------------------------------------------ parent

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn(const std::vector<std::string>& args, const std::vector<std::string>& env_extra,
            const std::vector<std::string>& env_remove = {}) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool drop = false;
    for (const auto& r : env_remove) drop = drop || entry.rfind(r + "=", 0) == 0;
    for (const auto& x : env_extra) drop = drop || entry.rfind(x.substr(0, x.find('=') + 1), 0) == 0;
    if (!drop) env_s.push_back(entry);
  }
  env_s.insert(env_s.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  Child c;
  if (posix_spawn(&c.pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) std::exit(1);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  c.out = fds[0];
  return c;
}

Result wait_for(Child c) {
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(c.out, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  Result r;
  const auto at = text.find("RESULT ");
  if (at != std::string::npos && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.ok = std::sscanf(text.c_str() + at, "RESULT %lf %lf %ld %d", &r.context_ms, &r.work_ms, &r.compiles, &r.nvrtc) == 4;
  }
  if (!r.ok) std::fprintf(stderr, "child failed:\n%s\n", text.c_str());
  return r;
}

Result run_child(const std::vector<std::string>& args, const std::vector<std::string>& env,
                 const std::vector<std::string>& env_remove = {}) {
  return wait_for(spawn(args, env, env_remove));
}

void row(const char* name, const Result& r, const char* note) {
  std::printf("%-44s %10.1f %10.1f %9ld %6s  %s\n", name, r.context_ms, r.work_ms, r.compiles, r.nvrtc ? "yes" : "no", note);
}

}  // namespace

int main(int argc, char** argv) {
  const bool gpu = drv::available();
  int arch = gpu ? device_arch(0) : 90;
  if (argc >= 3 && std::strcmp(argv[1], "--arch") == 0) arch = std::atoi(argv[2] + (std::strncmp(argv[2], "sm_", 3) == 0 ? 3 : 0));
  if (argc >= 3 && std::strcmp(argv[1], "--child") == 0) {
    const std::string mode = argv[2];
    const int child_arch = std::atoi(argv[3]);
    if (mode == "whole") return child_whole(child_arch, gpu);
    if (mode == "program") return child_program(child_arch, gpu, false, kProgram.size());
    if (mode == "program-warm") return child_program(child_arch, gpu, true, kProgram.size());
    if (mode == "one") return child_program(child_arch, gpu, false, 1);
    if (mode == "nvrtc") return child_nvrtc_only(child_arch, gpu);
    return 2;
  }

  std::string pattern = (std::filesystem::temp_directory_path() / "tropical-startup-XXXXXX").string();
  const std::filesystem::path root = mkdtemp(pattern.data());
  const std::string a = std::to_string(arch);
  const std::string cold = "CUDA_CACHE_DISABLE=1";
  auto cache = [&](const char* name) { return "TROPICAL_CACHE_DIR=" + (root / name).string(); };

  std::printf("start-up, sm_%d, %s, %zu kernels in the catalog, program uses %zu\n", arch,
              gpu ? "GPU 0 (modules loaded)" : "no GPU (CUBIN only)", catalog::kKernelCount, kProgram.size());
  std::printf("%-44s %10s %10s %9s %6s\n", "", "ctx ms", "work ms", "compiles", "nvrtc");
  const Result whole = run_child({"--child", "whole", a}, {cold, cache("unused")});
  row("(a)  whole catalog, one NVRTC program", whole, "");
  const Result first = run_child({"--child", "program", a}, {cold, cache("b")});
  row("(b)  tropical first run (cold cache)", first, "lazy, one kernel at a time");
  const Result first_warm = run_child({"--child", "program-warm", a}, {cold, cache("b2")});
  row("(b') tropical first run, warm() up front", first_warm, "its 5 kernels on every core");
  const Result second = run_child({"--child", "program", a}, {cold, cache("b")});
  row("(c)  tropical second run (disk cache)", second, "");
  run_child({"--child", "nvrtc", a}, {cache("unused"), "TROPICAL_CACHE_DISABLE=1"}, {"CUDA_CACHE_DISABLE"});
  const Result nvrtc_warm =
      run_child({"--child", "nvrtc", a}, {cache("unused"), "TROPICAL_CACHE_DISABLE=1"}, {"CUDA_CACHE_DISABLE"});
  row("(d)  NVRTC 13 compute cache, warm", nvrtc_warm, gpu ? "" : "inactive: needs libcuda");

  // (e) 8 processes at once, one key, empty cache: one compile machine-wide.
  const auto t = Clock::now();
  std::vector<Child> racers;
  for (int i = 0; i < 8; ++i) racers.push_back(spawn({"--child", "one", a}, {cold, cache("e")}));
  Result race;
  double slowest = 0;
  for (auto& c : racers) {
    const Result r = wait_for(c);
    race.compiles += r.compiles;
    race.ok = r.ok;
    slowest = std::max(slowest, r.work_ms);
  }
  race.work_ms = ms_since(t);
  jit::CacheConfig e_config;
  e_config.dir = root / "e";
  const auto machine = jit::LocalStore(e_config).machine_stats();
  row("(e)  8 processes cold on one key", race, "wall time for all 8");
  std::printf("     compiles machine-wide: %llu (want 1), slowest process %.1f ms\n",
              static_cast<unsigned long long>(machine.compiles), slowest);

  // (f) A layer shipped in an image: filled by one run, then read by a user whose own cache is empty.
  run_child({"--child", "program", a}, {cold, cache("shipped")});
  const Result shipped = run_child({"--child", "program", a},
                                   {cold, cache("f"), "TROPICAL_CACHE_LAYERS=" + (root / "shipped").string()});
  row("(f)  fresh user, shipped layer", shipped, "0 compiles expected; hits copied into its cache");

  std::printf("\nratios (work time):\n");
  std::printf("  (a)/(b)  = %6.1fx  whole catalog vs first run           (target >= 10x)\n", whole.work_ms / first.work_ms);
  std::printf("  (a)/(b') = %6.1fx  whole catalog vs first run with warm()\n", whole.work_ms / first_warm.work_ms);
  std::printf("  (d)/(c)  = %6.1fx  NVRTC's warm cache vs our disk cache\n", nvrtc_warm.work_ms / second.work_ms);
  std::printf("  (c) per kernel = %.3f ms (target <= 1 ms after context creation)\n", second.work_ms / kProgram.size());
  std::printf("  (f) per kernel = %.3f ms (from a layer, copy included; target <= 0.5 ms)\n",
              shipped.work_ms / kProgram.size());
  std::filesystem::remove_all(root);
  const bool ok = whole.ok && first.ok && first_warm.ok && second.ok && nvrtc_warm.ok && race.ok && second.compiles == 0 &&
                  shipped.ok && shipped.compiles == 0;
  return ok ? 0 : 1;
}
