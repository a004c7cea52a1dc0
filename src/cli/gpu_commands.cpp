// The subcommands that need a GPU: gemm and verify (gemm also runs on the CPU backend: --device cpu).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/tiers.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

namespace {

namespace drv = jit::driver;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Calls f.template operator()<S, T>() for the semiring and type named at run time.
template <class F>
int with_semiring_and_type(const std::string& semiring, const std::string& type, F&& f) {
  auto by_type = [&]<class S>() {
    if (type == "f32") return f.template operator()<S, float>();
    if (type == "f64") return f.template operator()<S, double>();
    if (type == "i32") return f.template operator()<S, std::int32_t>();
    if (type == "i64") return f.template operator()<S, std::int64_t>();
    if (type == "i16") return f.template operator()<S, std::int16_t>();
    throw UsageError{"unknown --type '" + type + "' (f32, f64, i32, i64, i16)"};
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
  for (auto& x : v)
    x = std::is_floating_point_v<T> ? static_cast<T>(dist(rng)) / T(37) : static_cast<T>(dist(rng));
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
  reference::gemm_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want2.data(), n,
                               want_arg.data(), n);
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
    reference::backward_a<S, T>(Trans::kNo, Trans::kNo, m, n, k, gc.data(), n, want_arg.data(), n, b.data(),
                                n, want_ga.data(), k);
    reference::backward_b<S, T>(Trans::kNo, Trans::kNo, m, n, k, gc.data(), n, want_arg.data(), n, a.data(),
                                k, want_gb.data(), n);
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

/// gemm_counting and gemm_batched_counting of CountingTropical over T against the CPU reference, on
/// tied data (small integer values: the kernels' dense counting pass) and on spread data (one winner per
/// element), values and counts compared exactly.
template <class T>
bool verify_counting(std::string& report) {
  const std::int64_t m = 67, n = 45, k = 129, batch = 3;
  bool ok = true;
  for (const bool tied : {true, false}) {
    std::mt19937_64 rng(tied ? 5 : 6);
    std::uniform_int_distribution<int> value(tied ? -3 : -1000, tied ? 3 : 1000), count(0, 3);
    const std::size_t na = static_cast<std::size_t>(batch * m * k), nb = static_cast<std::size_t>(batch * k * n);
    const std::size_t nc = static_cast<std::size_t>(batch * m * n);
    std::vector<T> av(na), ac(na), bv(nb), bc(nb), want_v(nc), want_c(nc);
    for (auto& x : av) x = static_cast<T>(value(rng)) / T(tied ? 1 : 37);
    for (auto& x : bv) x = static_cast<T>(value(rng)) / T(tied ? 1 : 37);
    for (auto& x : ac) x = static_cast<T>(count(rng));
    for (auto& x : bc) x = static_cast<T>(count(rng));
    const CountingMatrix<const T> a{av.data(), k, ac.data(), k, m * k, m * k};
    const CountingMatrix<const T> b{bv.data(), n, bc.data(), n, k * n, k * n};
    reference::gemm_batched_counting<T>(Trans::kNo, Trans::kNo, m, n, k, a, b,
                                        CountingMatrix<T>{want_v.data(), n, want_c.data(), n, m * n, m * n}, batch);
    DeviceBuffer<T> dav(av), dac(ac), dbv(bv), dbc(bc), dcv(nc), dcc(nc);
    const CountingMatrix<const T> da{dav.get(), k, dac.get(), k, m * k, m * k};
    const CountingMatrix<const T> db{dbv.get(), n, dbc.get(), n, k * n, k * n};
    const CountingMatrix<T> dc{dcv.get(), n, dcc.get(), n, m * n, m * n};
    const std::size_t one = static_cast<std::size_t>(m * n);
    auto line = [&](const char* op, bool good) {
      report += std::string("  ") + (good ? "ok     " : "FAILED ") + "tropical_" + op + "_counting (" +
                (tied ? "tied" : "spread") + " values)\n";
      ok = ok && good;
    };
    gemm_counting<T>(Trans::kNo, Trans::kNo, m, n, k, da, db, dc);
    const auto v1 = dcv.download(one), c1 = dcc.download(one);
    line("gemm", std::equal(v1.begin(), v1.end(), want_v.begin()) && std::equal(c1.begin(), c1.end(), want_c.begin()));
    gemm_batched_counting<T>(Trans::kNo, Trans::kNo, m, n, k, da, db, dc, batch);
    line("gemm_batched", dcv.download(nc) == want_v && dcc.download(nc) == want_c);
  }
  return ok;
}

/// f() of a product m x n x k over T; a host allocation it cannot make becomes one sentence (exit 1) that
/// names the product and the memory its operands need, not std::bad_alloc.
template <class T, class F>
int with_host_memory(const std::string& type, std::int64_t m, std::int64_t n, std::int64_t k, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    const double elements = static_cast<double>(m) * static_cast<double>(k) +
                            static_cast<double>(k) * static_cast<double>(n) +
                            static_cast<double>(m) * static_cast<double>(n);
    throw std::runtime_error(format("tropical gemm: %" PRId64 "x%" PRId64 "x%" PRId64 " over %s needs %.1f GB of host "
                                    "memory for A, B and C, more than this process could allocate",
                                    m, n, k, type.c_str(), elements * static_cast<double>(sizeof(T)) / 1e9));
  }
}

/// `tropical gemm --device cpu`: the product on the CPU backend, timed and checked the same way.
template <class S, class T>
int gemm_on_cpu(const std::string& type, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t repeat,
                int threads) {
  const auto a = random_values<S, T>(static_cast<std::size_t>(m * k), 1);
  const auto b = random_values<S, T>(static_cast<std::size_t>(k * n), 2);
  std::vector<T> c(static_cast<std::size_t>(m * n));
  auto t = Clock::now();
  cpu::gemm<S, T>(m, n, k, a.data(), b.data(), c.data(), threads);
  const double first = ms_since(t);
  t = Clock::now();
  cpu::gemm<S, T>(m, n, k, a.data(), b.data(), c.data(), threads);
  const double second = ms_since(t);
  t = Clock::now();
  for (std::int64_t r = 0; r < repeat; ++r) cpu::gemm<S, T>(m, n, k, a.data(), b.data(), c.data(), threads);
  const double hot = ms_since(t) / static_cast<double>(repeat);
  const std::int64_t rows = std::min<std::int64_t>(m, 64);
  const std::size_t bad = compare_rows<S, T>(a, b, c, rows, n, k);
  const auto used = static_cast<std::uint64_t>(threads > 0 ? threads : cpu::num_threads());
  std::printf("%s %s %" PRId64 "x%" PRId64 "x%" PRId64 " on the CPU (%s, %s)\n", S::kName.data(), type.c_str(), m, n,
              k, std::string(cpu::isa()).c_str(), count(used, "thread").c_str());
  std::printf("  first call  %10.3f ms\n", first);
  std::printf("  second call %10.3f ms\n", second);
  std::printf("  hot         %10.3f ms  %.2f G MAC/s (mean of %" PRId64 ")\n", hot,
              static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (hot * 1e-3) / 1e9,
              repeat);
  std::printf("  check       %s (%" PRId64 " rows vs CPU reference, %zu mismatches)\n", bad == 0 ? "ok" : "FAILED",
              rows, bad);
  return bad == 0 ? kExitOk : kExitFailed;
}

/// `tropical gemm` on GPU 0: the first call (compiled or read from disk), the second, and the hot rate with the
/// kernel that served it (steady: wait for the tuned kernel before the hot loop).
template <class S, class T>
int gemm_on_gpu(const std::string& type, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t repeat,
                bool steady) {
  const auto a = random_values<S, T>(static_cast<std::size_t>(m * k), 1);
  const auto b = random_values<S, T>(static_cast<std::size_t>(k * n), 2);
  DeviceBuffer<T> da(a.size()), db(b.size()), dc(static_cast<std::size_t>(m * n));
  da.upload(a);
  db.upload(b);
  // The kernel that runs this product: a small tile for a small product.
  const auto kernel = catalog::pick_product(kernel_id<S, T, Op::kGemm>(), m, n);
  const auto before = registry().stats()[static_cast<std::size_t>(kernel)];
  auto t = Clock::now();
  gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
  synchronize();
  const double first = ms_since(t);
  const auto after = registry().stats()[static_cast<std::size_t>(kernel)];
  t = Clock::now();
  gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
  synchronize();
  const double second = ms_since(t);
  // On a cold cache the quick tier serves while the tuned kernel compiles in the background: a steady rate
  // asked for (--repeat) waits for the tuned kernel; the hot line says which kernel served either way.
  const auto id = static_cast<std::uint32_t>(kernel);
  const bool quick_only = jit::tier_mode_from_env() == jit::TierMode::kQuickOnly;
  if (steady && !quick_only) {
    try {
      (void)registry().function(id, 0);
    } catch (const Error&) {
      // The tuned kernel failed to compile or load: the quick one still serves, and the hot line says so.
    }
  }
  const auto before_hot = registry().stats()[id];
  t = Clock::now();
  for (std::int64_t r = 0; r < repeat; ++r) gemm<S, T>(m, n, k, da.get(), db.get(), dc.get());
  synchronize();
  const double hot = ms_since(t) / static_cast<double>(repeat);
  const std::uint64_t quick_hot = registry().stats()[id].quick_calls - before_hot.quick_calls;
  std::string served = "tuned kernel";
  if (quick_hot >= static_cast<std::uint64_t>(repeat)) {
    served = quick_only ? "quick tier" : "quick tier: the tuned kernel was still compiling; --repeat R waits for it";
  } else if (quick_hot > 0) {
    served = format("quick tier for %" PRIu64 " of %" PRId64 " calls, then the tuned kernel", quick_hot, repeat);
  }
  const std::int64_t rows = std::min<std::int64_t>(m, 64);
  const auto c = dc.download(static_cast<std::size_t>(rows * n));
  const std::size_t bad = compare_rows<S, T>(a, b, c, rows, n, k);
  // A compile of this call's tier: by the driver's JIT of the shipped PTX, or by NVRTC.
  const bool jit = after.jit_compiles > before.jit_compiles;
  const char* how = after.compiles > before.compiles
                        ? (jit ? "JIT-compiled by the driver from shipped PTX" : "compiled by NVRTC")
                        : (after.disk_hits > before.disk_hits ? "read from disk cache" : "already in memory");
  if (after.quick_calls > before.quick_calls) {
    how = after.quick_compiles > before.quick_compiles
              ? (jit ? "quick tier, JIT-compiled by the driver from shipped PTX; tuned compiling in the background"
                     : "quick tier, compiled by NVRTC; tuned compiling in the background")
              : "quick tier; tuned compiling in the background";
  }
  std::printf("%s %s %" PRId64 "x%" PRId64 "x%" PRId64 " on sm_%d (%s)\n", S::kName.data(),
              type.c_str(), m, n, k, device_arch(0),
              catalog::kInfo[static_cast<std::size_t>(kernel)].name.data());
  std::printf("  first call  %10.3f ms  (kernel %s, loaded in %.3f ms)\n", first, how,
              static_cast<double>(after.load_ns - before.load_ns) * 1e-6);
  std::printf("  second call %10.3f ms\n", second);
  std::printf("  hot         %10.3f ms  %.2f T MAC/s (mean of %" PRId64 ", %s)\n", hot,
              static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (hot * 1e-3) / 1e12, repeat,
              served.c_str());
  std::printf("  check       %s (%" PRId64 " rows vs CPU reference, %zu mismatches)\n",
              bad == 0 ? "ok" : "FAILED", rows, bad);
  return bad == 0 ? kExitOk : kExitFailed;
}

}  // namespace

int cmd_gemm(int argc, char** argv) {
  const Args args("gemm", argc, argv,
                  {"--semiring", "--type", "-m", "-n", "-k", "--repeat", "--device", "--threads"}, {});
  if (args.help()) {
    print(
        "usage: tropical gemm [--semiring maxplus|minplus|maxmul] [--type f32|f64|i32|i64|i16]\n"
        "                     [-m M] [-n N] [-k K] [--repeat R] [--device gpu|cpu] [--threads T]\n\n"
        "Runs C = A (x) B on GPU 0 with random data, checks up to 64 rows against the CPU\n"
        "reference, and prints: the first call (kernel compiled or read from the disk\n"
        "cache, then loaded), the second call, and the hot product time and rate with\n"
        "the tier that ran it: on a cold cache the quick kernel serves while the tuned\n"
        "one compiles in the background; --repeat R waits for the tuned kernel first.\n"
        "--device cpu runs it on the CPU backend instead (tropical::cpu, no GPU needed;\n"
        "--threads T: its thread count, default all), with the instruction set it chose.\n");
    return kExitOk;
  }
  const std::string device = args.get("--device", "gpu");
  if (device != "gpu" && device != "cpu") throw UsageError{"unknown --device '" + device + "' (gpu, cpu)"};
  if (device == "gpu" && args.has("--threads")) throw UsageError{"--threads applies to --device cpu only"};
  const auto threads = static_cast<int>(args.get_uint("--threads", 0, 1, 1024));
  constexpr std::uint64_t kMaxSide = std::uint64_t{1} << 20;
  const auto m = static_cast<std::int64_t>(args.get_uint("-m", 1024, 1, kMaxSide));
  const auto n = static_cast<std::int64_t>(args.get_uint("-n", 1024, 1, kMaxSide));
  const auto k = static_cast<std::int64_t>(args.get_uint("-k", 1024, 1, kMaxSide));
  const auto repeat = static_cast<std::int64_t>(args.get_uint("--repeat", 10, 1, 1000000));
  return with_semiring_and_type(
      args.get("--semiring", "maxplus"), args.get("--type", "f32"), [&]<class S, class T>() {
        const std::string type = args.get("--type", "f32");
        if (device == "cpu") {
          return with_host_memory<T>(type, m, n, k, [&] { return gemm_on_cpu<S, T>(type, m, n, k, repeat, threads); });
        }
        if (!drv::available()) throw Unavailable("tropical gemm needs a GPU: no CUDA driver or device found");
        const bool steady = args.has("--repeat");
        return with_host_memory<T>(type, m, n, k, [&] { return gemm_on_gpu<S, T>(type, m, n, k, repeat, steady); });
      });
}

int cmd_verify(int argc, char** argv) {
  const Args args("verify", argc, argv, {}, {});
  if (args.help()) {
    print(
        "usage: tropical verify\n\nRuns every kernel of the catalog on GPU 0 with random data and compares "
        "it\n"
        "with the CPU reference. Exit code 1 if any differs.\n");
    return kExitOk;
  }
  if (!drv::available()) throw Unavailable("tropical verify needs a GPU: no CUDA driver or device found");
  bool ok = true;
  for (const char* s : {"maxplus", "minplus", "maxmul"}) {
    for (const char* t : {"f32", "f64", "i32", "i64", "i16"}) {
      std::string report;
      ok = with_semiring_and_type(s, t,
                                  [&]<class S, class T>() { return verify_pair<S, T>(report) ? 1 : 0; }) &&
           ok;
      std::printf("%s %s\n%s", s, t, report.c_str());
    }
  }
  for (const char* t : {"f32", "f64"}) {
    std::string report;
    ok = (std::string(t) == "f32" ? verify_counting<float>(report) : verify_counting<double>(report)) && ok;
    std::printf("counting %s\n%s", t, report.c_str());
  }
  std::printf("%s\n", ok ? "all kernels match the CPU reference" : "MISMATCHES FOUND");
  return ok ? kExitOk : kExitFailed;
}

}  // namespace tropical::cli
