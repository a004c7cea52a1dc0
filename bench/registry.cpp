// Registry benchmarks: the hot lookup, warm first use from the disk cache and from a read-only layer,
// and the read+verify part of a disk hit (CPU only).
//
// GPU rows skip themselves (SkipWithError) where no device is present; an exception out of a row
// skips it too (bench/guard.hpp), so the binary never aborts.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "guard.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/gemm.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/registry.hpp"
#include "tropical/storage/checksum.hpp"
#include "tropical/storage/sha256.hpp"
#include "tropical/storage/store_chain.hpp"
#include "tropical/kernel_args.hpp"

namespace {

using namespace tropical;

constexpr std::uint32_t kKernel = 0;  // tropical_gemm_maxplus_f32

std::filesystem::path bench_cache_dir() {
  // Never destroyed: the atexit handler that removes it runs after static destructors registered later.
  static const std::filesystem::path* const dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tropical-bench-XXXXXX").string();
    auto* made = new std::filesystem::path(mkdtemp(pattern.data()));
    std::atexit([] { std::filesystem::remove_all(bench_cache_dir()); });
    return made;
  }();
  return *dir;
}

storage::CacheConfig bench_cache() {
  storage::CacheConfig config;
  config.dir = bench_cache_dir();
  return config;
}

// Hot path: kernel already resolved in this process. Target: <= 2 ns, flat
// from 1 to 16 threads (one acquire load, no lock, no shared writes).
void BM_hot_lookup(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device: the hot lookup needs a resolved kernel on a GPU");
    return;
  }
  static jit::Registry* registry = new jit::Registry(catalog::kKernels, bench_cache());
  registry->function(kKernel, 0);  // resolve before timing
  for (auto _ : state) {
    benchmark::DoNotOptimize(registry->function(kKernel, 0));
  }
}
BENCHMARK(bench::guarded<BM_hot_lookup>)->Name("BM_hot_lookup")->ThreadRange(1, 16)->UseRealTime();

// The same through the public API's process-wide registry (adds its guard load).
void BM_hot_lookup_global_registry(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  registry().function(kKernel, 0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(registry().function(kKernel, 0));
  }
}
BENCHMARK(bench::guarded<BM_hot_lookup_global_registry>)
    ->Name("BM_hot_lookup_global_registry")
    ->ThreadRange(1, 16)
    ->UseRealTime();

// The lookup the products make (kernel() with a request) after the tiered
// first use has swapped the tuned kernel in: the same one acquire load.
void BM_hot_lookup_after_swap(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  // A kernel the rows above do not use, so its first use is tiered.
  const auto id = static_cast<std::uint32_t>(catalog::KernelId::kGemmMaxplusF64);
  const jit::Request request{1e6, nullptr, true};
  if (state.thread_index() == 0) {
    registry().kernel(id, 0, request);  // first use: quick (or tuned from disk)
    for (int i = 0; i < 60000 && registry().kernel(id, 0, request).tier != jit::Tier::kTuned; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(registry().kernel(id, 0, request).function);
  }
  state.counters["tuned"] = registry().kernel(id, 0, request).tier == jit::Tier::kTuned;
}
BENCHMARK(bench::guarded<BM_hot_lookup_after_swap>)
    ->Name("BM_hot_lookup_after_swap")
    ->ThreadRange(1, 16)
    ->UseRealTime();

/// One float on GPU 0 for the per-call benchmarks.
CUdeviceptr device_float() {
  jit::driver::ScopedContext context(0);
  CUdeviceptr p = 0;
  jit::driver::check(jit::driver::api().cuMemAlloc(&p, sizeof(float)), "cuMemAlloc");
  return p;
}

// What one call of the public API costs on the host: argument checks, pointer
// checks with the driver, kernel lookup, context push/pop and the launch of a
// 1x1x1 product (synchronising every 256 calls, inside the timing).
void BM_gemm_call(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  static const CUdeviceptr a = device_float(), b = device_float(), c = device_float();
  const float* pa = reinterpret_cast<const float*>(a);
  const float* pb = reinterpret_cast<const float*>(b);
  float* pc = reinterpret_cast<float*>(c);
  gemm<MaxPlus, float>(1, 1, 1, pa, pb, pc);
  jit::driver::ScopedContext context(0);  // as a runtime-API program has it current
  std::int64_t n = 0;
  for (auto _ : state) {
    gemm<MaxPlus, float>(1, 1, 1, pa, pb, pc);
    if (++n % 256 == 0) jit::driver::check(jit::driver::api().cuCtxSynchronize(), "cuCtxSynchronize");
  }
  jit::driver::check(jit::driver::api().cuCtxSynchronize(), "cuCtxSynchronize");
}
BENCHMARK(bench::guarded<BM_gemm_call>)->Name("BM_gemm_call")->Unit(benchmark::kMicrosecond);

// The same launch with the driver alone, for the ratio: cuLaunchKernel of the
// already-resolved function that gemm<MaxPlus, float>(1, 1, 1) runs (the
// smallest batched tile, a batch of one) in a current context, with the
// argument struct the library's launcher fills (tropical/kernel_args.hpp).
void BM_bare_launch(benchmark::State& state) {
  const auto kernel = catalog::pick_product(kernel_id<MaxPlus, float, Op::kGemm>(), 1, 1);
  const auto id = static_cast<std::uint32_t>(kernel);
  const float unused = 0;
  catalog::GemmBatchedArgs args{.a = nullptr, .b = nullptr, .c = nullptr, .m = 1, .n = 1, .kk = 1, .lda = 1,
                                .ldb = 1, .ldc = 1, .trans_a = 0, .trans_b = 0, .stride_a = 0, .stride_b = 0,
                                .stride_c = 0, .batch = 1, .alpha = &unused, .beta = &unused, .flags = 0};
  if (catalog::kSignatureOf[id] != catalog::GemmBatchedArgs::kSignature) {
    state.SkipWithError(("argument list drift: " + std::string(catalog::kInfo[id].name) +
                         " does not take gemm_batched's parameters").c_str());
    return;
  }
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  static const CUdeviceptr da = device_float(), db = device_float(), dc = device_float();
  args.a = reinterpret_cast<const void*>(da);
  args.b = reinterpret_cast<const void*>(db);
  args.c = reinterpret_cast<void*>(dc);
  auto pointers = args.pointers();
  CUfunction f = registry().function(id, 0);
  const auto& launch = catalog::kInfo[id].launch;
  jit::driver::ScopedContext context(0);
  const auto& api = jit::driver::api();
  std::int64_t n = 0;
  for (auto _ : state) {
    jit::driver::check(api.cuLaunchKernel(f, 1, 1, 1, launch.block_x, launch.block_y, 1, launch.smem_bytes,
                                          nullptr, pointers.data(), nullptr),
                       "cuLaunchKernel");
    if (++n % 256 == 0) jit::driver::check(api.cuCtxSynchronize(), "cuCtxSynchronize");
  }
  jit::driver::check(api.cuCtxSynchronize(), "cuCtxSynchronize");
}
BENCHMARK(bench::guarded<BM_bare_launch>)->Name("BM_bare_launch")->Unit(benchmark::kMicrosecond);

// Warm first use: a new registry (as in a new process) whose kernel is on
// disk: read + verify + cuModuleLoadData, context creation excluded. Target <= 1 ms.
void BM_warm_first_use_from_disk(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device: the GPU half of a warm first use needs a GPU");
    return;
  }
  const std::uint32_t id = static_cast<std::uint32_t>(state.range(0));
  {
    jit::Registry fill(catalog::kKernels, bench_cache());
    fill.function(id, 0);  // compile into the disk cache, and create the context
  }
  for (auto _ : state) {
    // Timed: the call to CUfunction only, as in BM_warm_first_use_from_layer (construction is startup_bench's
    // (c1) part; the destructor's module unload, timed here once, is no part of
    // it).
    state.PauseTiming();
    auto fresh = std::make_unique<jit::Registry>(catalog::kKernels, bench_cache());
    state.ResumeTiming();
    benchmark::DoNotOptimize(fresh->function(id, 0));
    state.PauseTiming();
    if (fresh->stats()[id].compiles != 0) state.SkipWithError("compiled: the disk cache missed");
    fresh.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(bench::guarded<BM_warm_first_use_from_disk>)
    ->Name("BM_warm_first_use_from_disk")
    ->Arg(0)
    ->Arg(static_cast<int>(catalog::KernelId::kGemmArgmaxMaxplusF32))
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// A new, empty directory under the bench directory (a fresh user's primary).
std::filesystem::path fresh_dir(const char* stem) {
  static std::atomic<int> n{0};
  const auto dir = bench_cache_dir() / (std::string(stem) + std::to_string(n++));
  std::filesystem::create_directories(dir);
  return dir;
}

/// The bench cache as a read-only layer under a fresh, empty primary.
storage::CacheConfig fresh_over_layer() {
  storage::CacheConfig config;
  config.dir = fresh_dir("fresh-");
  config.layers = {bench_cache_dir()};
  config.prebuilt_layer = false;
  return config;
}

// Warm first use from a read-only layer (a shipped image, the install's prebuilt cache) by a fresh registry
// whose primary is empty: read + verify the CUBIN from the layer, queue the copy into the primary (read again
// whole and written by a background thread: read, verify, write, rename; checked after each iteration),
// cuModuleLoadData; context creation excluded. Target <= 0.5 ms.
void BM_warm_first_use_from_layer(benchmark::State& state) {
  if (!jit::driver::available()) {
    state.SkipWithError("no CUDA device: the GPU half of a warm first use needs a GPU");
    return;
  }
  const std::uint32_t id = static_cast<std::uint32_t>(state.range(0));
  {
    jit::Registry fill(catalog::kKernels, bench_cache());
    fill.function(id, 0);
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = std::make_unique<jit::Registry>(catalog::kKernels, fresh_over_layer());
    state.ResumeTiming();
    benchmark::DoNotOptimize(fresh->function(id, 0));
    state.PauseTiming();
    if (fresh->stats()[id].compiles != 0) state.SkipWithError("compiled: the layer missed");
    if (!fresh->stores().finish_promotions() ||
        !fresh->disk().load(fresh->cache_key(id, jit::driver::device_arch(0))))
      state.SkipWithError("the hit was not copied into the primary");
    fresh.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(bench::guarded<BM_warm_first_use_from_layer>)
    ->Name("BM_warm_first_use_from_layer")
    ->Arg(0)
    ->Arg(static_cast<int>(catalog::KernelId::kGemmArgmaxMaxplusF32))
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// CPU part of a layer hit: a miss in an empty primary, then the layer (made on that miss) read and verified,
// the CUBIN only, and the copy into the primary queued (its whole read is the copier's). With written=1 the
// timing also waits for the copy (write, rename, eviction pass), which the caller of a first use does not;
// with 0 it is checked untimed.
void BM_layer_hit_with_promotion(benchmark::State& state) {
  const bool written = state.range(0) != 0;
  jit::Registry fill(catalog::kKernels, bench_cache());
  fill.image(kKernel, 90);
  const storage::CacheKey key = fill.cache_key(kKernel, 90);
  for (auto _ : state) {
    state.PauseTiming();
    auto stores = std::make_unique<storage::StoreChain>(fresh_over_layer());
    state.ResumeTiming();
    bool compiled = false;
    benchmark::DoNotOptimize(stores->get_or_compile(
        key, [] { return storage::CompiledImage{}; }, &compiled));
    if (written) stores->finish_promotions();
    state.PauseTiming();
    if (compiled) state.SkipWithError("compiled: the layer missed");
    if (!stores->finish_promotions() || !stores->primary().load(key)) state.SkipWithError("not copied");
    stores.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(bench::guarded<BM_layer_hit_with_promotion>)
    ->Name("BM_layer_hit_with_promotion")
    ->ArgName("written")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// CPU part of a disk hit: read the entry and verify key and checksums. The
// start-up path reads header + key + CUBIN only; the PTX, which the driver
// needs only if it refuses the CUBIN, is read and verified on request.
void disk_read_and_verify(benchmark::State& state, storage::ImageParts parts) {
  jit::Registry fill(catalog::kKernels, bench_cache());
  fill.image(kKernel, 90);
  storage::LocalStore disk(bench_cache());
  const storage::CacheKey key = fill.cache_key(kKernel, 90);
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto image = disk.load(key, parts);
    if (!image) {
      state.SkipWithError("disk cache miss");
      break;
    }
    bytes = image->cubin.size() + image->ptx.size();
    benchmark::DoNotOptimize(image);
  }
  state.counters["entry_bytes"] = static_cast<double>(std::filesystem::file_size(disk.entry_path(key)));
  state.counters["loaded_bytes"] = static_cast<double>(bytes);
}

void BM_disk_read_and_verify(benchmark::State& state) {
  disk_read_and_verify(state, storage::ImageParts::kCubin);
}
BENCHMARK(bench::guarded<BM_disk_read_and_verify>)
    ->Name("BM_disk_read_and_verify")
    ->Unit(benchmark::kMicrosecond);

// The same with the PTX (the cold fallback for a driver that refuses the CUBIN).
void BM_disk_read_and_verify_with_ptx(benchmark::State& state) {
  disk_read_and_verify(state, storage::ImageParts::kCubinAndPtx);
}
BENCHMARK(bench::guarded<BM_disk_read_and_verify_with_ptx>)
    ->Name("BM_disk_read_and_verify_with_ptx")
    ->Unit(benchmark::kMicrosecond);

// Read + verify of a synthetic entry the size of the catalog's typical one
// (77,552 bytes of CUBIN, as tropical_gemm_maxplus_f32 for sm_90, and 138 kB of
// PTX left unread): CPU only, needs neither NVRTC nor a GPU. Target <= 60 us.
void BM_entry_read_and_verify_77kB(benchmark::State& state) {
  storage::CacheConfig config;
  config.dir = bench_cache_dir() / "synthetic";
  storage::LocalStore disk(config);
  const storage::CacheKey key{"tropical_synthetic_f32", std::string(64, 'a'), jit::compile_options(90), 90,
                          "bench"};
  storage::CompiledImage image;
  image.cubin.resize(77'552);
  for (std::size_t i = 0; i < image.cubin.size(); ++i)
    image.cubin[i] = static_cast<std::byte>(i * 131 + (i >> 9));
  image.ptx.assign(138'113, 'p');
  disk.get_or_compile(key, [&] { return image; });
  for (auto _ : state) {
    auto loaded = disk.load(key);
    if (!loaded) {
      state.SkipWithError("disk cache miss");
      break;
    }
    benchmark::DoNotOptimize(loaded);
  }
  state.counters["entry_bytes"] = static_cast<double>(std::filesystem::file_size(disk.entry_path(key)));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(image.cubin.size()));
}
BENCHMARK(bench::guarded<BM_entry_read_and_verify_77kB>)
    ->Name("BM_entry_read_and_verify_77kB")
    ->Unit(benchmark::kMicrosecond);

// Its parts: the entry checksum (GMAC) and, for scale, SHA-256 over the same 77,552 bytes.
void BM_checksum_77kB(benchmark::State& state) {
  const std::string bytes(77'552, 'c');
  for (auto _ : state) benchmark::DoNotOptimize(storage::Checksum::of(bytes));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}
BENCHMARK(bench::guarded<BM_checksum_77kB>)->Name("BM_checksum_77kB")->Unit(benchmark::kMicrosecond);

void BM_sha256_77kB(benchmark::State& state) {
  const std::string bytes(77'552, 'c');
  for (auto _ : state) benchmark::DoNotOptimize(storage::Sha256::of(bytes));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}
BENCHMARK(bench::guarded<BM_sha256_77kB>)->Name("BM_sha256_77kB")->Unit(benchmark::kMicrosecond);

// Cold first use without a GPU: empty disk cache, so look up, lock, compile,
// write. Target: <= 1.2 x the bare compile below (run with CUDA_CACHE_DISABLE=1).
// Every iteration of every repetition gets a directory never used before (the
// counter outlives the benchmark function, which --benchmark_repetitions calls
// again), and a hit instead of a compile fails the run.
void BM_cold_first_use_image(benchmark::State& state) {
  static std::atomic<int> round{0};
  for (auto _ : state) {
    state.PauseTiming();
    storage::CacheConfig config;
    config.dir = bench_cache_dir() / ("cold-" + std::to_string(round++));
    std::filesystem::remove_all(config.dir);
    state.ResumeTiming();
    jit::Registry fresh(catalog::kKernels, config);
    benchmark::DoNotOptimize(fresh.image(kKernel, 90));
    state.PauseTiming();
    if (fresh.stats()[kKernel].compiles != 1) state.SkipWithError("not cold: the image came from disk");
    std::filesystem::remove_all(config.dir);
    state.ResumeTiming();
  }
}
BENCHMARK(bench::guarded<BM_cold_first_use_image>)
    ->Name("BM_cold_first_use_image")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// For scale: one NVRTC compile of the same fragment (cold; set CUDA_CACHE_DISABLE=1).
void BM_nvrtc_compile_one_fragment(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(jit::compile(catalog::kKernels[kKernel], 90));
  }
}
BENCHMARK(bench::guarded<BM_nvrtc_compile_one_fragment>)
    ->Name("BM_nvrtc_compile_one_fragment")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
