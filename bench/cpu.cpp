// The CPU backend, side by side in one run: the microkernel's
// ceiling on data in L1 (one core, every core), f32 MaxPlus 1024^3 (and 4096^3
// with --large) on one core and on every core, argmax, i32 and f64 rows,
// matrix-vector products (n = 1, m = 1), the reference loops and NumPy's
// broadcast product at small sizes, then a table of ratios. Every row's label
// names the instruction set the dispatcher chose (TROPICAL_CPU_ISA forces one).
// Counter GMAC/s = M*N*K / time / 1e9.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../src/cpu/driver.hpp"
#include "../src/cpu/kernel.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/reference.hpp"

namespace {

using namespace tropical;

using Clock = std::chrono::steady_clock;

/// The row's rate over wall time (Google Benchmark's kIsRate divides by CPU
/// time, which is the calling thread's only) and its label, the instruction set.
/// Threads of one row each add their own rate.
void record(benchmark::State& state, Clock::time_point start, double macs_per_iteration, const std::string& label) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double macs = macs_per_iteration * static_cast<double>(state.iterations());
  state.counters["GMAC/s"] = benchmark::Counter(macs / seconds / 1e9);
  state.SetLabel(label);
}

template <class T>
std::vector<T> random_operand(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> values(-1000, 1000);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(values(rng)) / static_cast<T>(std::is_floating_point_v<T> ? 7 : 1);
  return v;
}

/// The f32 MaxPlus microkernel alone on packed slivers that stay in L1 (kc = 256).
void BM_ceiling(benchmark::State& state) {
  const auto& ks = cpu::detail::vector_kernels<MaxPlus, float>();
  constexpr std::int64_t kc = 256;
  cpu::detail::Scratch a_buf, b_buf;
  float* a = a_buf.get<float>(static_cast<std::size_t>(kc * ks.mr));
  float* b = b_buf.get<float>(static_cast<std::size_t>(kc * ks.nr));
  const auto av = random_operand<float>(static_cast<std::size_t>(kc * ks.mr), 1);
  const auto bv = random_operand<float>(static_cast<std::size_t>(kc * ks.nr), 2);
  std::memcpy(a, av.data(), av.size() * sizeof(float));
  std::memcpy(b, bv.data(), bv.size() * sizeof(float));
  std::vector<float> c(static_cast<std::size_t>(ks.mr * ks.nr));
  const cpu::detail::TileArgs<float> t{kc, a, b, c.data(), ks.nr, nullptr, 0, 0, false};
  const auto start = Clock::now();
  for (auto _ : state) {
    ks.gemm(t);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  record(state, start, static_cast<double>(kc) * ks.mr * ks.nr, std::string(cpu::isa()));
}

/// n^3 products through the public API on state.range(1) threads (0: every core).
template <class S, class T, bool kArgmax>
void BM_product(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const auto a = random_operand<T>(static_cast<std::size_t>(n * n), 3);
  const auto b = random_operand<T>(static_cast<std::size_t>(n * n), 4);
  std::vector<T> c(static_cast<std::size_t>(n * n));
  std::vector<std::int32_t> x(kArgmax ? static_cast<std::size_t>(n * n) : 0);
  const auto start = Clock::now();
  for (auto _ : state) {
    if constexpr (kArgmax) {
      cpu::gemm_argmax<S, T>(Trans::kNo, Trans::kNo, n, n, n, a.data(), n, b.data(), n, c.data(), n, x.data(), n,
                             threads);
    } else {
      cpu::gemm<S, T>(Trans::kNo, Trans::kNo, n, n, n, a.data(), n, b.data(), n, c.data(), n, threads);
    }
    benchmark::DoNotOptimize(c.data());
  }
  record(state, start, static_cast<double>(n) * n * n, std::string(cpu::isa()));
}

/// A matrix-vector product through the public API: state.range(0) x state.range(0) A (or B) and a vector,
/// on state.range(1) threads (0: every core); kRows: C = A (x) b (n = 1), else c = a (x) B (m = 1).
template <class S, class T, bool kRows>
void BM_vector(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const auto matrix = random_operand<T>(static_cast<std::size_t>(n * n), 3);
  const auto vector = random_operand<T>(static_cast<std::size_t>(n), 4);
  std::vector<T> c(static_cast<std::size_t>(n));
  const auto start = Clock::now();
  for (auto _ : state) {
    if constexpr (kRows) {
      cpu::gemm<S, T>(Trans::kNo, Trans::kNo, n, 1, n, matrix.data(), n, vector.data(), 1, c.data(), 1, threads);
    } else {
      cpu::gemm<S, T>(Trans::kNo, Trans::kNo, 1, n, n, vector.data(), n, matrix.data(), n, c.data(), n, threads);
    }
    benchmark::DoNotOptimize(c.data());
  }
  record(state, start, static_cast<double>(n) * n, std::string(cpu::isa()));
}

/// The reference loops (one thread), the oracle the backend replaces.
template <class S, class T>
void BM_reference(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = random_operand<T>(static_cast<std::size_t>(n * n), 3);
  const auto b = random_operand<T>(static_cast<std::size_t>(n * n), 4);
  std::vector<T> c(static_cast<std::size_t>(n * n));
  const auto start = Clock::now();
  for (auto _ : state) {
    reference::gemm<S, T>(Trans::kNo, Trans::kNo, n, n, n, a.data(), n, b.data(), n, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  record(state, start, static_cast<double>(n) * n * n, "reference loops");
}

/// NumPy's broadcast product (bench/numpy_broadcast.py through /usr/bin/python3), timed by the script.
void BM_numpy_broadcast(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::string command =
      "/usr/bin/python3 " TROPICAL_BENCH_DIR "/numpy_broadcast.py " + std::to_string(n) + " 2 2>/dev/null";
  double total = 0;
  for (auto _ : state) {
    FILE* pipe = popen(command.c_str(), "r");
    double seconds = -1;
    if (pipe != nullptr) {
      if (std::fscanf(pipe, "%lf", &seconds) != 1) seconds = -1;
      pclose(pipe);
    }
    if (seconds <= 0) {
      state.SkipWithError("no /usr/bin/python3 with NumPy (apt-get install python3-numpy)");
      return;
    }
    state.SetIterationTime(seconds);
    total += seconds;
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(n) * n * n * static_cast<double>(state.iterations()) / total / 1e9);
  state.SetLabel("numpy broadcast (a[i:i+16,:,None] + b[None]).max(1)");
}

/// Prints, after the run, the ratios the targets are stated in.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      // Medians when repeated, else the single run.
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      const auto it = run.counters.find("GMAC/s");
      if (it == run.counters.end()) continue;
      std::string name = run.run_name.str();
      rates_[name] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto rate = [&](const std::string& key) {
      for (const auto& [name, value] : rates_) {
        if (name.find(key) == 0) return value;
      }
      return 0.0;
    };
    auto ratio = [&](const char* what, const std::string& num, const std::string& den) {
      const double n = rate(num), d = rate(den);
      if (n > 0 && d > 0) std::printf("%-58s %8.2f  (%.2f / %.2f G MAC/s)\n", what, n / d, n, d);
    };
    std::printf("\nratios (isa %s, %u hardware threads)\n", std::string(cpu::isa()).c_str(),
                std::thread::hardware_concurrency());
    ratio("ceiling, every core / one core", "BM_ceiling_all_cores", "BM_ceiling_one_core");
    ratio("f32 MaxPlus 1024^3 every core / ceiling every core", "BM_gemm_f32/1024/0", "BM_ceiling_all_cores");
    ratio("f32 MaxPlus 1024^3 one core / ceiling one core", "BM_gemm_f32/1024/1", "BM_ceiling_one_core");
    ratio("f32 MaxPlus 4096^3 every core / ceiling every core", "BM_gemm_f32/4096/0", "BM_ceiling_all_cores");
    ratio("f32 argmax 1024^3 / plain 1024^3 (every core)", "BM_argmax_f32/1024/0", "BM_gemm_f32/1024/0");
    ratio("f32 MaxPlus 512^3 every core / numpy 512^3", "BM_gemm_f32/512/0", "BM_numpy_broadcast/512");
    ratio("f32 MaxPlus 1024^3 every core / numpy 1024^3", "BM_gemm_f32/1024/0", "BM_numpy_broadcast/1024");
    ratio("f32 MaxPlus 256^3 one core / reference loops 256^3", "BM_gemm_f32/256/1", "BM_reference_f32/256");
    ratio("i32 MaxPlus 1024^3 / f32 (every core)", "BM_gemm_i32/1024/0", "BM_gemm_f32/1024/0");
    ratio("f64 MaxPlus 1024^3 / f32 (every core)", "BM_gemm_f64/1024/0", "BM_gemm_f32/1024/0");
    ratio("f32 MaxPlus 512x512 (x) vector / 1024^3 (one core)", "BM_matvec_f32/512/1", "BM_gemm_f32/1024/1");
    ratio("f32 MaxPlus vector (x) 512x512 / 1024^3 (one core)", "BM_vecmat_f32/512/1", "BM_gemm_f32/1024/1");
    ratio("f32 MaxPlus 4096x4096 (x) vector / 1024^3 (one core)", "BM_matvec_f32/4096/1", "BM_gemm_f32/1024/1");
    ratio("f32 MaxPlus vector (x) 4096x4096 / 1024^3 (one core)", "BM_vecmat_f32/4096/1", "BM_gemm_f32/1024/1");
    ratio("f32 MaxPlus 4096x4096 (x) vector / 1024^3 (every core)", "BM_matvec_f32/4096/0", "BM_gemm_f32/1024/0");
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  // --large adds the 4096^3 rows (minutes on two cores).
  bool large = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--large") == 0) large = true;
    else args.push_back(argv[i]);
  }
  int count = static_cast<int>(args.size());
  const int all = cpu::num_threads();
  benchmark::RegisterBenchmark("BM_ceiling_one_core", BM_ceiling)->Threads(1)->UseRealTime()->Repetitions(5)
      ->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("BM_ceiling_all_cores", BM_ceiling)->Threads(all)->UseRealTime()->Repetitions(5)
      ->ReportAggregatesOnly(true);
  const std::vector<std::int64_t> sizes = large ? std::vector<std::int64_t>{256, 512, 1024, 4096}
                                                : std::vector<std::int64_t>{256, 512, 1024};
  for (const std::int64_t n : sizes) {
    auto* plain = benchmark::RegisterBenchmark("BM_gemm_f32", BM_product<MaxPlus, float, false>);
    plain->Args({n, 1})->Args({n, 0})->UseRealTime()->Unit(benchmark::kMillisecond);
    if (n < 4096) plain->Repetitions(5)->ReportAggregatesOnly(true);
  }
  for (const std::int64_t n : {std::int64_t{1024}}) {
    benchmark::RegisterBenchmark("BM_argmax_f32", BM_product<MaxPlus, float, true>)->Args({n, 1})->Args({n, 0})
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
    benchmark::RegisterBenchmark("BM_gemm_i32", BM_product<MaxPlus, std::int32_t, false>)->Args({n, 0})
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
    benchmark::RegisterBenchmark("BM_argmax_i32", BM_product<MaxPlus, std::int32_t, true>)->Args({n, 0})
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
    benchmark::RegisterBenchmark("BM_gemm_f64", BM_product<MaxPlus, double, false>)->Args({n, 0})
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
    benchmark::RegisterBenchmark("BM_gemm_minplus_f32", BM_product<MinPlus, float, false>)->Args({n, 0})
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  }
  // The thin shapes of tensor networks and Viterbi recurrences: n = 1 and m = 1.
  // 512: the matrix in L2 (1 MiB), the kernels' rate; 4096: 64 MiB from memory, its bandwidth's.
  benchmark::RegisterBenchmark("BM_matvec_f32", BM_vector<MaxPlus, float, true>)->Args({512, 1})->Args({4096, 1})
      ->Args({4096, 0})->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("BM_vecmat_f32", BM_vector<MaxPlus, float, false>)->Args({512, 1})->Args({4096, 1})
      ->Args({4096, 0})->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("BM_reference_f32", BM_reference<MaxPlus, float>)->Arg(256)
      ->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("BM_reference_i32", BM_reference<MaxPlus, std::int32_t>)->Arg(256)
      ->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("BM_numpy_broadcast", BM_numpy_broadcast)->Arg(512)->Arg(1024)->UseManualTime()
      ->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&count, args.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
