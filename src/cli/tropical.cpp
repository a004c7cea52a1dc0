// The `tropical` command: list, warm, stats, clear, compile, gemm, verify.
//
// Exit codes: 0 success; 1 a check or compile failed; 2 bad usage;
// 3 a GPU, driver or NVRTC the command needs is missing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tropical/catalog_sources.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace {

using namespace tropical;
namespace drv = jit::driver;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

/// Architectures NVRTC 13 compiles for, probed by `tropical stats`.
constexpr int kKnownArchs[] = {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121};

struct UsageError {
  std::string message;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// ---------------------------------------------------------------- arguments

/// Flags and positional words of one subcommand, checked against what it accepts.
class Args {
 public:
  Args(int argc, char** argv, std::vector<std::string> value_flags, std::vector<std::string> bool_flags) {
    for (int i = 0; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        help_ = true;
      } else if (std::find(bool_flags.begin(), bool_flags.end(), a) != bool_flags.end()) {
        values_[a] = "1";
      } else if (std::find(value_flags.begin(), value_flags.end(), a) != value_flags.end()) {
        if (i + 1 >= argc) throw UsageError{a + " needs a value"};
        values_[a] = argv[++i];
      } else if (a.size() > 1 && a[0] == '-') {
        throw UsageError{"unknown option " + a};
      } else {
        words_.push_back(a);
      }
    }
  }
  bool help() const { return help_; }
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }
  std::string get(const std::string& flag, const std::string& fallback = "") const {
    auto it = values_.find(flag);
    return it == values_.end() ? fallback : it->second;
  }
  std::int64_t get_int(const std::string& flag, std::int64_t fallback) const {
    if (!has(flag)) return fallback;
    const std::string v = get(flag);
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < 0) throw UsageError{flag + " wants a non-negative integer, not '" + v + "'"};
    return x;
  }
  const std::vector<std::string>& words() const { return words_; }

 private:
  bool help_ = false;
  std::map<std::string, std::string> values_;
  std::vector<std::string> words_;
};

/// "sm_90" or "90" -> 90.
int parse_arch(const std::string& text) {
  std::string digits = text.rfind("sm_", 0) == 0 ? text.substr(3) : text;
  char* end = nullptr;
  const long v = std::strtol(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || v < 50 || v > 200) throw UsageError{"bad architecture '" + text + "' (want e.g. sm_90)"};
  return static_cast<int>(v);
}

/// The --arch flag, else the arch of GPU 0, else sm_90.
int arch_or_default(const Args& args) {
  if (args.has("--arch")) return parse_arch(args.get("--arch"));
  return drv::available() ? device_arch(0) : 90;
}

std::uint32_t kernel_by_name(const std::string& name) {
  for (const auto& k : catalog::kKernels) {
    if (k.name == name) return k.id;
  }
  throw UsageError{"no kernel named '" + name + "' (see: tropical list)"};
}

// ---------------------------------------------------------------- typed dispatch

/// Calls f.template operator()<S, T>() for the semiring and type named at run time.
template <class F>
int with_semiring_and_type(const std::string& semiring, const std::string& type, F&& f) {
  auto by_type = [&]<class S>() {
    if (type == "f32") return f.template operator()<S, float>();
    if (type == "f64") return f.template operator()<S, double>();
    if (type == "i32") return f.template operator()<S, std::int32_t>();
    if (type == "i64") return f.template operator()<S, std::int64_t>();
    throw UsageError{"unknown --type '" + type + "' (f32, f64, i32, i64)"};
  };
  if (semiring == "maxplus") return by_type.template operator()<MaxPlus>();
  if (semiring == "minplus") return by_type.template operator()<MinPlus>();
  if (semiring == "maxmul") return by_type.template operator()<MaxMul>();
  throw UsageError{"unknown --semiring '" + semiring + "' (maxplus, minplus, maxmul)"};
}


template <class S, class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(S::kMul == MulKind::kMul ? 0 : -1000, 1000);
  std::vector<T> v(n);
  for (auto& x : v) x = std::is_floating_point_v<T> ? static_cast<T>(dist(rng)) / T(37) : static_cast<T>(dist(rng));
  return v;
}

void synchronize() {
  drv::ScopedContext context(0);
  drv::check(drv::api().cuCtxSynchronize(), "cuCtxSynchronize");
}

/// Checks the first rows of a GPU product against the CPU reference; returns mismatches.
template <class S, class T>
std::size_t compare_rows(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c,
                         std::int64_t rows, std::int64_t n, std::int64_t k) {
  std::vector<T> want(static_cast<std::size_t>(rows * n));
  reference::gemm<S, T>(Trans::kNo, Trans::kNo, rows, n, k, a.data(), k, b.data(), n, want.data(), n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += !(c[i] == want[i]);
  return bad;
}

// ---------------------------------------------------------------- subcommands

const char* const kUsage =
    "usage: tropical <command> [options]\n"
    "\n"
    "commands:\n"
    "  list      the kernel catalog, and which kernels are cached for an arch\n"
    "  warm      compile kernels into the disk cache (no GPU needed, all cores)\n"
    "  stats     disk cache statistics, machine-wide\n"
    "  clear     remove every entry of the disk cache\n"
    "  compile   NVRTC-compile one kernel, bypassing the cache, and time it\n"
    "  gemm      run one product on GPU 0, check it, print cold/warm/hot timings\n"
    "  verify    run every kernel on GPU 0 against the CPU reference\n"
    "\n"
    "'tropical <command> --help' describes each. Exit codes: 0 ok, 1 a check or\n"
    "compile failed, 2 bad usage, 3 no GPU/driver/NVRTC for a command that needs one.\n";

int cmd_list(int argc, char** argv) {
  Args args(argc, argv, {"--arch"}, {});
  if (args.help()) {
    std::puts("usage: tropical list [--arch sm_XY]\n\nPrints every kernel of the catalog with its id, and whether the disk\n"
              "cache holds it for the arch (default: GPU 0's, else sm_90). Loads no NVRTC.");
    return kExitOk;
  }
  const int arch = arch_or_default(args);
  auto& reg = registry();
  std::size_t cached = 0;
  std::printf("%3s  %-36s %-12s %-8s %-4s sm_%d\n", "id", "name", "op", "semiring", "type", arch);
  for (const auto& info : catalog::kInfo) {
    const auto id = static_cast<std::uint32_t>(info.id);
    // The entry's presence, by name: nothing read, no statistics or LRU time touched.
    std::error_code ec;
    const bool hit = std::filesystem::is_regular_file(reg.disk().entry_path(reg.cache_key(id, arch)), ec);
    cached += hit;
    std::printf("%3u  %-36.*s %-12.*s %-8.*s %-4.*s %s\n", id, static_cast<int>(info.name.size()), info.name.data(),
                static_cast<int>(op_name(info.op).size()), op_name(info.op).data(),
                static_cast<int>(info.semiring.size()), info.semiring.data(), static_cast<int>(info.type.size()),
                info.type.data(), hit ? "cached" : "-");
  }
  std::printf("%zu kernels, %zu cached for sm_%d in %s\n", catalog::kKernelCount, cached, arch,
              reg.disk().info().dir.c_str());
  return kExitOk;
}

int cmd_warm(int argc, char** argv) {
  Args args(argc, argv, {"--arch", "-j"}, {"--all"});
  if (args.help()) {
    std::puts("usage: tropical warm [--arch sm_XY] [-j THREADS] (--all | NAME...)\n\n"
              "Compiles kernels into the disk cache for the arch (default: GPU 0's, else sm_90),\n"
              "on every core unless -j says otherwise. Needs no GPU. A progress bar on a\n"
              "terminal, one line per kernel otherwise. Tuned kernels only: with them on\n"
              "disk a program never uses the quick tier.");
    return kExitOk;
  }
  if (args.has("--all") == !args.words().empty()) throw UsageError{"warm wants --all or kernel names (not both)"};
  std::vector<catalog::KernelId> ids;
  for (const auto& name : args.words()) ids.push_back(static_cast<catalog::KernelId>(kernel_by_name(name)));
  const int arch = arch_or_default(args);
  const auto threads = static_cast<unsigned>(args.get_int("-j", 0));
  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto progress = [&](std::size_t done, std::size_t total, std::string_view name) {
    if (tty) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * done / total);
      std::printf("\r[%.*s%*s] %zu/%zu %-40.*s", filled, "##############################", kWidth - filled, "", done,
                  total, static_cast<int>(name.size()), name.data());
      if (done == total) std::printf("\n");
    } else {
      std::printf("%zu/%zu %.*s\n", done, total, static_cast<int>(name.size()), name.data());
    }
    std::fflush(stdout);
  };
  const jit::WarmReport report = warm(arch, ids, threads, progress);
  if (!report.errors.empty() && report.unavailable == report.errors.size()) {
    // Every kernel failed for one reason: NVRTC is missing. Say it once.
    std::fprintf(stderr, "%s\n", report.errors.front().c_str());
    return kExitUnavailable;
  }
  for (const auto& e : report.errors) std::fprintf(stderr, "%s\n", e.c_str());
  std::printf("warm sm_%d: %zu kernels, %zu compiled, %zu already cached, %zu failed, %u threads, %.2f s\n", arch,
              report.kernels, report.compiled, report.ready, report.errors.size(), report.threads, report.seconds);
  return report.errors.empty() ? kExitOk : kExitFailed;
}

void print_cache_stats(const char* title, const jit::CacheStats& s) {
  std::printf("%s\n  hits %" PRIu64 ", misses %" PRIu64 ", compiles %" PRIu64 ", evictions %" PRIu64 ", errors %" PRIu64
              "\n  bytes written %" PRIu64 ", bytes read %" PRIu64 ", compile time %.1f ms, load time %.3f ms\n",
              title, s.hits, s.misses, s.compiles, s.evictions, s.errors, s.bytes_written, s.bytes_read,
              static_cast<double>(s.compile_ns) * 1e-6, static_cast<double>(s.load_ns) * 1e-6);
}

int cmd_stats(int argc, char** argv) {
  Args args(argc, argv, {}, {});
  if (args.help()) {
    std::puts("usage: tropical stats\n\nPrints the disk cache's location, size and machine-wide counters, and per\n"
              "kernel the architectures it is cached for.");
    return kExitOk;
  }
  const jit::CacheInfo i = info();
  std::printf("cache %s (%s)\n  %" PRIu64 " entries, %" PRIu64 " bytes of %" PRIu64 " allowed\n", i.dir.c_str(),
              i.enabled ? "enabled" : "disabled", i.entries, i.bytes, i.max_bytes);
  print_cache_stats("machine-wide:", stats().machine);
  // Per kernel: the architectures it is cached for, found by the entries'
  // names alone (a stat each: nothing is read or counted).
  auto& reg = registry();
  std::printf("per kernel (cached architectures, entry bytes):\n");
  std::size_t listed = 0;
  for (const auto& k : catalog::kKernels) {
    std::string line;
    for (const int arch : kKnownArchs) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(reg.disk().entry_path(reg.cache_key(k.id, arch)), ec);
      if (!ec) line += " sm_" + std::to_string(arch) + " (" + std::to_string(size) + ")";
    }
    if (line.empty()) continue;
    ++listed;
    std::printf("  %-36.*s%s\n", static_cast<int>(k.name.size()), k.name.data(), line.c_str());
  }
  if (listed == 0) std::printf("  none cached\n");
  return kExitOk;
}

int cmd_clear(int argc, char** argv) {
  Args args(argc, argv, {}, {});
  if (args.help()) {
    std::puts("usage: tropical clear\n\nRemoves every entry of the disk cache.");
    return kExitOk;
  }
  if (!info().enabled && std::getenv("TROPICAL_CACHE_DISABLE") != nullptr) {
    std::printf("the disk cache is disabled (TROPICAL_CACHE_DISABLE); nothing removed from %s\n", info().dir.c_str());
    return kExitOk;
  }
  std::printf("removed %" PRIu64 " entries from %s\n", clear(), info().dir.c_str());
  return kExitOk;
}

int cmd_compile(int argc, char** argv) {
  Args args(argc, argv, {"--arch"}, {});
  if (args.help() || args.words().size() != 1) {
    if (!args.help()) throw UsageError{"compile wants one kernel name"};
    std::puts("usage: tropical compile [--arch sm_XY] NAME\n\nNVRTC-compiles one kernel of the catalog for the arch (default sm_90 or\n"
              "GPU 0's), bypassing every cache, and prints the time and image sizes.");
    return kExitOk;
  }
  const auto id = kernel_by_name(args.words()[0]);
  const int arch = arch_or_default(args);
  const auto start = Clock::now();
  const jit::CompiledImage image = jit::compile(catalog::kKernels[id], arch);
  std::printf("compiled %s for sm_%d in %.1f ms: CUBIN %zu bytes, PTX %zu bytes (NVRTC %s)\n", args.words()[0].c_str(),
              arch, ms_since(start), image.cubin.size(), image.ptx.size(), jit::nvrtc_version().c_str());
  return kExitOk;
}

int cmd_gemm(int argc, char** argv) {
  Args args(argc, argv, {"--semiring", "--type", "-m", "-n", "-k", "--repeat"}, {});
  if (args.help()) {
    std::puts("usage: tropical gemm [--semiring maxplus|minplus|maxmul] [--type f32|f64|i32|i64]\n"
              "                     [-m M] [-n N] [-k K] [--repeat R]\n\n"
              "Runs C = A (x) B on GPU 0 with random data, checks up to 64 rows against the CPU\n"
              "reference, and prints: the first call (kernel compiled or read from the disk\n"
              "cache, then loaded), the second call, and the hot product time and rate.");
    return kExitOk;
  }
  const std::int64_t m = args.get_int("-m", 1024), n = args.get_int("-n", 1024), k = args.get_int("-k", 1024);
  const std::int64_t repeat = std::max<std::int64_t>(1, args.get_int("--repeat", 10));
  return with_semiring_and_type(args.get("--semiring", "maxplus"), args.get("--type", "f32"), [&]<class S, class T>() {
    if (!drv::available()) throw Unavailable("tropical gemm needs a GPU: no CUDA driver or device found");
    const auto a = random_values<S, T>(static_cast<std::size_t>(m * k), 1);
    const auto b = random_values<S, T>(static_cast<std::size_t>(k * n), 2);
    DeviceBuffer<T> da(a.size()), db(b.size()), dc(static_cast<std::size_t>(m * n));
    da.upload(a);
    db.upload(b);
    const auto before = registry().stats()[static_cast<std::size_t>(kernel_id<S, T, Op::kGemm>())];
    auto t = Clock::now();
    gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
    synchronize();
    const double first = ms_since(t);
    const auto after = registry().stats()[static_cast<std::size_t>(kernel_id<S, T, Op::kGemm>())];
    t = Clock::now();
    gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
    synchronize();
    const double second = ms_since(t);
    t = Clock::now();
    for (std::int64_t r = 0; r < repeat; ++r) gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
    synchronize();
    const double hot = ms_since(t) / static_cast<double>(repeat);
    const std::int64_t rows = std::min<std::int64_t>(m, 64);
    const auto c = dc.download(static_cast<std::size_t>(rows * n));
    const std::size_t bad = compare_rows<S, T>(a, b, c, rows, n, k);
    const char* how = after.compiles > before.compiles ? "compiled by NVRTC" : (after.disk_hits > before.disk_hits ? "read from disk cache" : "already in memory");
    if (after.quick_calls > before.quick_calls) how = after.quick_compiles > before.quick_compiles ? "quick tier, compiled by NVRTC; tuned compiling in the background" : "quick tier; tuned compiling in the background";
    std::printf("%s %s %" PRId64 "x%" PRId64 "x%" PRId64 " on sm_%d\n", S::kName.data(), args.get("--type", "f32").c_str(), m, n, k,
                device_arch(0));
    std::printf("  first call  %10.3f ms  (kernel %s, loaded in %.3f ms)\n", first, how,
                static_cast<double>(after.load_ns - before.load_ns) * 1e-6);
    std::printf("  second call %10.3f ms\n", second);
    std::printf("  hot         %10.3f ms  %.2f T MAC/s (mean of %" PRId64 ")\n", hot,
                static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (hot * 1e-3) / 1e12, repeat);
    std::printf("  check       %s (%" PRId64 " rows vs CPU reference, %zu mismatches)\n", bad == 0 ? "ok" : "FAILED", rows, bad);
    return bad == 0 ? kExitOk : kExitFailed;
  });
}

template <class S, class T>
bool verify_pair(std::string& report) {
  const std::int64_t m = 67, n = 45, k = 129;
  const auto a = random_values<S, T>(static_cast<std::size_t>(m * k), 3);
  const auto b = random_values<S, T>(static_cast<std::size_t>(k * n), 4);
  DeviceBuffer<T> da(a.size()), db(b.size()), dc(static_cast<std::size_t>(m * n));
  DeviceBuffer<std::int32_t> darg(static_cast<std::size_t>(m * n));
  da.upload(a);
  db.upload(b);
  std::vector<T> want(static_cast<std::size_t>(m * n)), want2(want.size());
  std::vector<std::int32_t> want_arg(want.size());
  reference::gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want.data(), n);
  reference::gemm_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want2.data(), n, want_arg.data(), n);
  bool ok = true;
  auto line = [&](std::string_view op, bool good) {
    report += std::string("  ") + (good ? "ok     " : "FAILED ") + "tropical_" + std::string(op) + "_" +
              std::string(S::kName) + "\n";
    ok = ok && good;
  };
  gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
  line("gemm", dc.download(want.size()) == want);
  gemm_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, da.get(), k, db.get(), n, dc.get(), n, darg.get(), n);
  line("gemm_argmax", dc.download(want.size()) == want2 && darg.download(want.size()) == want_arg);
  gemm_batched<S, T>(Trans::kNo, Trans::kNo, m, n, k, da.get(), k, 0, db.get(), n, 0, dc.get(), n, m * n, 1);
  line("gemm_batched", dc.download(want.size()) == want);
  if constexpr (kInCatalog<S, T, Op::kBackwardA>) {
    std::vector<T> gc(want.size(), T(1)), want_ga(a.size()), want_gb(b.size());
    DeviceBuffer<T> dgc(gc.size()), dga(a.size()), dgb(b.size());
    dgc.upload(gc);
    reference::backward_a<S, T>(Trans::kNo, Trans::kNo, m, n, k, gc.data(), n, want_arg.data(), n, b.data(), n, want_ga.data(), k);
    reference::backward_b<S, T>(Trans::kNo, Trans::kNo, m, n, k, gc.data(), n, want_arg.data(), n, a.data(), k, want_gb.data(), n);
    backward_a<S, T>(Trans::kNo, Trans::kNo, m, n, k, dgc.get(), n, darg.get(), n, db.get(), n, dga.get(), k);
    backward_b<S, T>(Trans::kNo, Trans::kNo, m, n, k, dgc.get(), n, darg.get(), n, da.get(), k, dgb.get(), n);
    auto close = [](const std::vector<T>& x, const std::vector<T>& y) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::abs(x[i] - y[i]) > T(1e-4) * std::max(T(1), std::abs(y[i]))) return false;
      }
      return true;
    };
    line("backward_a", close(dga.download(a.size()), want_ga));
    line("backward_b", close(dgb.download(b.size()), want_gb));
  }
  return ok;
}

int cmd_verify(int argc, char** argv) {
  Args args(argc, argv, {}, {});
  if (args.help()) {
    std::puts("usage: tropical verify\n\nRuns every kernel of the catalog on GPU 0 with random data and compares it\n"
              "with the CPU reference. Exit code 1 if any differs.");
    return kExitOk;
  }
  if (!drv::available()) throw Unavailable("tropical verify needs a GPU: no CUDA driver or device found");
  bool ok = true;
  for (const char* s : {"maxplus", "minplus", "maxmul"}) {
    for (const char* t : {"f32", "f64", "i32", "i64"}) {
      std::string report;
      ok = with_semiring_and_type(s, t, [&]<class S, class T>() { return verify_pair<S, T>(report) ? 1 : 0; }) && ok;
      std::printf("%s %s\n%s", s, t, report.c_str());
    }
  }
  std::printf("%s\n", ok ? "all kernels match the CPU reference" : "MISMATCHES FOUND");
  return ok ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string_view, std::function<int(int, char**)>> commands = {
      {"list", cmd_list},       {"warm", cmd_warm},   {"stats", cmd_stats}, {"clear", cmd_clear},
      {"compile", cmd_compile}, {"gemm", cmd_gemm},   {"verify", cmd_verify},
  };
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const auto command = commands.find(argv[1]);
  try {
    if (command == commands.end()) throw UsageError{std::string("unknown command '") + argv[1] + "'"};
    return command->second(argc - 2, argv + 2);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "tropical: %s\n%s", e.message.c_str(), "try 'tropical --help'\n");
    return kExitUsage;
  } catch (const Unavailable& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitUnavailable;
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitFailed;
  }
}
