// Kernel throughput: the ALU ceiling of a tropical multiply-
// accumulate, then every op x semiring x type of the catalog at 4096^3 and
// 8192^3, the batched products and the backward passes, in one run.
//
// Each row is one Google Benchmark "iteration" whose time is the median of
// several timed launches (CUDA events, after a warm-up that also compiles or
// loads the kernel). Inputs are random (a hash of the index; never zeros).
// Counters: TMAC/s = M*N*K*batch / time / 1e12, and "of_ceiling", that rate
// over the add+max ceiling of the same element type measured in this run.
// Rows skip themselves (SkipWithError) where no device is present.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../src/permute.hpp"
#include "guard.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/tropical.hpp"

namespace {

using namespace tropical;
namespace drv = jit::driver;

/// Device memory of `bytes`, freed on destruction.
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) {
    drv::ScopedContext context(0);
    drv::check(drv::api().cuMemAlloc(&ptr_, std::max<std::size_t>(bytes, 16)), "cuMemAlloc");
  }
  ~DeviceMemory() {
    drv::ScopedContext context(0);
    drv::api().cuMemFree(ptr_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(ptr_);
  }
  CUdeviceptr get() const { return ptr_; }

 private:
  CUdeviceptr ptr_ = 0;
};

/// A module of bench-only kernels, compiled through the library's NVRTC path
/// (same options as the catalog) for device 0 and loaded there.
class BenchModule {
 public:
  BenchModule(std::string name, std::string source) : name_(std::move(name)), source_(std::move(source)) {
    const storage::CompiledImage image = jit::compile({0, name_, source_, {}}, drv::device_arch(0));
    drv::ScopedContext context(0);
    drv::check(drv::api().cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData");
  }
  CUfunction function(const char* name) const {
    CUfunction f = nullptr;
    drv::check(drv::api().cuModuleGetFunction(&f, module_, name), "cuModuleGetFunction");
    return f;
  }
  void launch(const char* name, unsigned grid, unsigned block, void** args) const {
    drv::ScopedContext context(0);
    drv::check(drv::api().cuLaunchKernel(function(name), grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr),
               "cuLaunchKernel");
  }

 private:
  std::string name_, source_;
  CUmodule module_ = nullptr;
};

int sm_count() {
  CUdevice dev = 0;
  drv::check(drv::api().cuDeviceGet(&dev, 0), "cuDeviceGet");
  int n = 0;
  drv::check(drv::api().cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
             "cuDeviceGetAttribute");
  return n;
}

/// Median time in ms of `launch` (queued on the default stream), after a
/// warm-up. Short launches are repeated between one pair of events.
double median_ms(const std::function<void()>& launch, int samples) {
  const auto& api = drv::api();
  drv::ScopedContext context(0);
  CUevent start = nullptr, stop = nullptr;
  drv::check(api.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  drv::check(api.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  auto timed = [&](int repeat) {
    drv::check(api.cuEventRecord(start, nullptr), "cuEventRecord");
    for (int r = 0; r < repeat; ++r) launch();
    drv::check(api.cuEventRecord(stop, nullptr), "cuEventRecord");
    drv::check(api.cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    drv::check(api.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    return static_cast<double>(ms) / repeat;
  };
  launch();  // compile or load, first touch
  drv::check(api.cuCtxSynchronize(), "cuCtxSynchronize");
  const double first = timed(1);
  const int repeat = std::clamp(static_cast<int>(5.0 / std::max(first, 1e-3)), 1, 200);
  std::vector<double> ms;
  for (int s = 0; s < samples; ++s) ms.push_back(timed(repeat));
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// ---------------------------------------------------------------- ceiling

// One multiply-accumulate per expression, on 32 independent chains per
// thread: x[c] = MAC(x[c], x[c + 1], y). The chains keep the compiler from
// folding anything; no memory is touched in the loop.
struct CeilingKernel {
  const char* name;   // also the row name
  const char* type;   // element type in the fragment
  const char* mac;    // expression of a (accumulator), b (operand), y, lo, hi
  const char* key;    // which type's ceiling this is ("" if a variant)
};

const CeilingKernel kCeilings[] = {
    {"f32_add_max", "float", "fmaxf(a, b + y)", "f32"},
    {"f32_mul_max", "float", "fmaxf(a, b * y)", ""},
    {"f64_add_max", "double", "fmax(a, b + y)", "f64"},
    {"f64_add_select", "double", "(b + y > a ? b + y : a)", ""},
    {"i32_add_max", "int", "max(a, b + y)", "i32"},
    {"i32_addsat_max", "int", "max(a, sat_add(b, y))", ""},
    {"i32_clamp_add_max", "int", "max(a, min(max(b, lo), hi) + y)", ""},
    {"i64_add_max", "long long", "max(a, b + y)", "i64"},
    // MaxMin's multiply-accumulate: NaN-propagating min (one FMNMX.NAN), then max.
    {"f32_minnan_max", "float", "fmaxf(a, min_nan(b, y))", ""},
    // AndOr on bytes held one per register: one LOP3 per product.
    {"u8_and_or", "unsigned char", "(unsigned char)(a | (b & y))", "u8"},
    // ... and four bytes per 32-bit register (what a packed kernel could reach).
    {"u8x4_and_or", "unsigned int", "(a | (b & y))", "u8x4"},
    // Hopper's DPX add-max: one VIADDMNMX on sm_90 (emulated before), on one 32-bit lane and on
    // two 16-bit lanes (two lane-steps per instruction: the int16 products' ceiling).
    {"i32_viaddmax", "int", "__viaddmax_s32(b, y, a)", ""},
    {"i16x2_viaddmax", "unsigned int", "__viaddmax_s16x2(b, y, a)", "i16"},
};

std::string ceiling_source() {
  std::string s =
      "__device__ __forceinline__ int sat_add(int a, int b) {\n"
      "  int r; asm(\"add.sat.s32 %0, %1, %2;\" : \"=r\"(r) : \"r\"(a), \"r\"(b)); return r;\n}\n"
      "__device__ __forceinline__ float min_nan(float a, float b) {\n"
      "  float r; asm(\"min.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b)); return r;\n}\n"
      "template <class T> __device__ __forceinline__ T max(T a, T b) { return a > b ? a : b; }\n"
      "template <class T> __device__ __forceinline__ T min(T a, T b) { return a < b ? a : b; }\n";
  for (const auto& c : kCeilings) {
    const std::string t = c.type;
    s += "extern \"C\" __global__ void ceiling_" + std::string(c.name) + "(" + t + "* out, " + t + " y, " + t +
         " lo, " + t + " hi, int iters) {\n"
         "  " + t + " x[32];\n"
         "#pragma unroll\n"
         "  for (int c = 0; c < 32; ++c) x[c] = (" + t + ")(threadIdx.x % 7 + c);\n"
         "  for (int it = 0; it < iters; ++it) {\n"
         "#pragma unroll\n"
         "    for (int c = 0; c < 32; ++c) { const " + t + " a = x[c], b = x[(c + 1) % 32]; x[c] = " + c.mac + "; }\n"
         "#pragma unroll\n"
         "    for (int c = 0; c < 32; ++c) { const " + t + " a = x[c], b = x[(c + 5) % 32]; x[c] = " + c.mac + "; }\n"
         "  }\n"
         "  " + t + " s = x[0];\n"
         "#pragma unroll\n"
         "  for (int c = 1; c < 32; ++c) s = s > x[c] ? s : x[c];\n"
         "  if (s == (" + t + ")123456789) out[threadIdx.x] = s;\n"
         "}\n";
  }
  return s;
}

const BenchModule& ceiling_module() {
  static const BenchModule module("tropical_bench_ceiling", ceiling_source());
  return module;
}

std::map<std::string, double>& ceilings() {  // type -> T MAC/s
  static std::map<std::string, double> c;
  return c;
}

std::map<std::int64_t, double>& maxplus_f32_rate() {  // n -> T MAC/s of gemm/maxplus/f32/n in this run
  static std::map<std::int64_t, double> r;
  return r;
}

template <class T>
void run_ceiling(benchmark::State& state, const CeilingKernel& kernel) {
  const int blocks = sm_count() * 8, threads = 256, iters = 2048;
  DeviceMemory out(threads * sizeof(double));
  CUdeviceptr out_ptr = out.get();
  T y = std::is_floating_point_v<T> ? T(-0.25) : T(-1);
  if (std::string(kernel.name) == "f32_mul_max") y = T(0.999);
  T lo = T(-1000000), hi = T(1000000);
  int it = iters;
  void* args[] = {&out_ptr, &y, &lo, &hi, &it};
  const std::string fn = std::string("ceiling_") + kernel.name;
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms([&] { ceiling_module().launch(fn.c_str(), blocks, threads, args); }, 5);
    state.SetIterationTime(ms * 1e-3);
  }
  // A packed u8x4 operation is four byte products, an i16x2 one two.
  const std::string key = kernel.key;
  const double macs = double(blocks) * threads * iters * 64 * (key == "u8x4" ? 4 : key == "i16" ? 2 : 1);
  const double rate = macs / (ms * 1e-3) / 1e12;
  state.counters["TMAC/s"] = rate;
  if (*kernel.key) ceilings()[kernel.key] = rate;
}

/// Device memory bandwidth (read + write bytes per second) of a 16-byte copy
/// of 1 GiB: the memory ceiling of the small batched products.
double& bandwidth() {
  static double bytes_per_s = 0;
  return bytes_per_s;
}

// ---------------------------------------------------------------- inputs

constexpr const char* kFillSource = R"(
__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Uniform in [lo, hi) for floats; in [lo, hi] for integers, or every bit
// pattern when lo > hi.
extern "C" __global__ void fill_f32(float* p, long long n, unsigned long long seed, double lo, double hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = (float)(lo + (hi - lo) * ((mix(seed ^ (unsigned long long)i) >> 11) * 1.1102230246251565e-16));
}
extern "C" __global__ void fill_f64(double* p, long long n, unsigned long long seed, double lo, double hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = lo + (hi - lo) * ((mix(seed ^ (unsigned long long)i) >> 11) * 1.1102230246251565e-16);
}
extern "C" __global__ void fill_i32(int* p, long long n, unsigned long long seed, long long lo, long long hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = mix(seed ^ (unsigned long long)i);
    p[i] = lo > hi ? (int)(unsigned)r : (int)(lo + (long long)(r % (unsigned long long)(hi - lo + 1)));
  }
}
extern "C" __global__ void fill_u8(unsigned char* p, long long n, unsigned long long seed, long long lo, long long hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = mix(seed ^ (unsigned long long)i);
    p[i] = lo > hi ? (unsigned char)r : (unsigned char)(lo + (long long)(r % (unsigned long long)(hi - lo + 1)));
  }
}
extern "C" __global__ void copy_x4(const float4* __restrict__ in, float4* __restrict__ out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}
// Integer-valued floats in [lo, hi].
extern "C" __global__ void fill_f32_int(float* p, long long n, unsigned long long seed, long long lo, long long hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = (float)(lo + (long long)(mix(seed ^ (unsigned long long)i) % (unsigned long long)(hi - lo + 1)));
}
extern "C" __global__ void fill_i16(short* p, long long n, unsigned long long seed, long long lo, long long hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = mix(seed ^ (unsigned long long)i);
    p[i] = lo > hi ? (short)r : (short)(lo + (long long)(r % (unsigned long long)(hi - lo + 1)));
  }
}
extern "C" __global__ void fill_i64(long long* p, long long n, unsigned long long seed, long long lo, long long hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = mix(seed ^ (unsigned long long)i);
    p[i] = lo > hi ? (long long)r : lo + (long long)(r % (unsigned long long)(hi - lo + 1));
  }
}
)";

const BenchModule& fill_module() {
  static const BenchModule module("tropical_bench_fill", kFillSource);
  return module;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, double>) return "f64";
  if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
  if constexpr (std::is_same_v<T, std::int16_t>) return "i16";
  if constexpr (std::is_same_v<T, std::uint8_t>) return "u8";
}

/// Fills n elements with random data for semiring S: floats uniform in
/// [-1000, 1000) ([0, 2) for MaxMul); integers over their full range
/// (non-negative for MaxMul), so saturation really happens, or with `small`
/// in [-2^29, 2^29) ([0, 2^15) for MaxMul), where no product can overflow
/// (int16: [-2^13, 2^13), [0, 2^7) for MaxMul: the DPX path); bytes (AndOr) any value.
template <class S, class T>
void fill(const DeviceMemory& mem, long long n, unsigned long long seed, bool small = false) {
  CUdeviceptr p = mem.get();
  const bool nonneg = S::kMul == MulKind::kMul;
  const std::string fn = std::string("fill_") + type_name<T>();
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    long long lo = 1, hi = 0;
    void* args[] = {&p, &n, &seed, &lo, &hi};
    fill_module().launch(fn.c_str(), 1024, 256, args);
  } else if constexpr (std::is_floating_point_v<T>) {
    double lo = nonneg ? 0.0 : -1000.0, hi = nonneg ? 2.0 : 1000.0;
    void* args[] = {&p, &n, &seed, &lo, &hi};
    fill_module().launch(fn.c_str(), 1024, 256, args);
  } else {
    long long lo = nonneg ? 0 : 1, hi = nonneg ? static_cast<long long>(std::numeric_limits<T>::max()) : 0;
    if (small) {
      const bool i16 = std::is_same_v<T, std::int16_t>;
      lo = nonneg ? 0 : -(1LL << (i16 ? 13 : 29));
      hi = nonneg ? (1LL << (i16 ? 7 : 15)) - 1 : (1LL << (i16 ? 13 : 29)) - 1;
    }
    void* args[] = {&p, &n, &seed, &lo, &hi};
    fill_module().launch(fn.c_str(), 1024, 256, args);
  }
}

void fill_indices(const DeviceMemory& mem, long long n, long long k, unsigned long long seed) {
  CUdeviceptr p = mem.get();
  long long lo = 0, hi = k - 1;
  void* args[] = {&p, &n, &seed, &lo, &hi};
  fill_module().launch("fill_i32", 1024, 256, args);
}

// ---------------------------------------------------------------- products

template <class T>
void report(benchmark::State& state, double macs, double ms) {
  const double rate = macs / (ms * 1e-3) / 1e12;
  state.counters["TMAC/s"] = rate;
  const auto it = ceilings().find(type_name<T>());
  if (it != ceilings().end()) state.counters["of_ceiling"] = rate / it->second;
}

bool need_gpu(benchmark::State& state) {
  if (drv::available()) return true;
  state.SkipWithError("no CUDA device: kernel throughput needs a GPU");
  return false;
}

int samples_for(double macs) { return macs > 2e11 ? 3 : 5; }

/// C (n x n) = A (n x k) (x) B (k x n), k = n unless given: the deep rows (k past n) are products of few tiles,
/// whose grid of one block a tile fills a fraction of the device's slots (the case for splitting k over blocks;
/// bench/RESULTS.md, "Session of 2026-11-29 (fifth)").
template <class S, class T>
void run_gemm(benchmark::State& state, std::int64_t n, bool argmax, bool small = false, std::int64_t k = 0) {
  if (!need_gpu(state)) return;
  if (k == 0) k = n;
  const std::size_t elems = static_cast<std::size_t>(n * n);
  DeviceMemory a(static_cast<std::size_t>(n * k) * sizeof(T)), b(static_cast<std::size_t>(k * n) * sizeof(T)),
      c(elems * sizeof(T));
  std::unique_ptr<DeviceMemory> idx;
  fill<S, T>(a, n * k, 1, small);
  fill<S, T>(b, k * n, 2, small);
  if (argmax) idx = std::make_unique<DeviceMemory>(elems * sizeof(std::int32_t));
  const double macs = double(n) * n * k;
  double ms = 0;
  for (auto _ : state) {
    if (argmax) {
      ms = median_ms([&] { gemm_argmax<S, T>(Trans::kNo, Trans::kNo, n, n, k, a.as<T>(), k, b.as<T>(), n, c.as<T>(), n,
                                             idx->as<std::int32_t>(), n); },
                     samples_for(macs));
    } else {
      ms = median_ms([&] { gemm<S, T>(n, n, k, a.as<T>(), b.as<T>(), c.as<T>()); }, samples_for(macs));
    }
    state.SetIterationTime(ms * 1e-3);
  }
  report<T>(state, macs, ms);
  if constexpr (std::is_same_v<S, MaxPlus> && std::is_same_v<T, float>) {
    if (!argmax && !small && k == n) maxplus_f32_rate()[n] = macs / (ms * 1e-3) / 1e12;
  }
}

/// CountingTropical C = A (x) B, n^3; counts uniform in [0, 2). Values uniform floats in
/// [-1000, 1000): the maximum of an element lies in one chunk of 16 k (its chunk rescan) but for about
/// 5 in 10^6 elements (a CPU count over 2^20 elements of these data at k = 8192), so about 2 % of the
/// 64 x 64 blocks take the dense counting pass. With `tied` (f32 only), integers in [-2, 2]: every element
/// ties across chunks, every block takes the dense pass. Reports the rate over f32 MaxPlus's at the same
/// size in this run.
template <class T>
void run_counting(benchmark::State& state, std::int64_t n, bool tied) {
  if (!need_gpu(state)) return;
  const std::size_t elems = static_cast<std::size_t>(n * n);
  DeviceMemory av(elems * sizeof(T)), ac(elems * sizeof(T)), bv(elems * sizeof(T)), bc(elems * sizeof(T)),
      cv(elems * sizeof(T)), cc(elems * sizeof(T));
  fill<MaxMul, T>(ac, n * n, 11);  // counts uniform in [0, 2): their values do not change the work
  fill<MaxMul, T>(bc, n * n, 12);
  long long count = n * n;
  unsigned long long seed = 13;
  if (tied && std::is_same_v<T, float>) {
    long long vlo = -2, vhi = 2;
    for (const DeviceMemory* values : {&av, &bv}) {
      CUdeviceptr p = values->get();
      void* args[] = {&p, &count, &seed, &vlo, &vhi};
      fill_module().launch("fill_f32_int", 1024, 256, args);
      ++seed;
    }
  } else {
    fill<MaxPlus, T>(av, n * n, 1);
    fill<MaxPlus, T>(bv, n * n, 2);
  }
  const CountingMatrix<const T> a{av.as<T>(), n, ac.as<T>(), n}, b{bv.as<T>(), n, bc.as<T>(), n};
  const CountingMatrix<T> c{cv.as<T>(), n, cc.as<T>(), n};
  const double macs = double(n) * n * n;
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms([&] { gemm_counting<T>(Trans::kNo, Trans::kNo, n, n, n, a, b, c); }, samples_for(macs));
    state.SetIterationTime(ms * 1e-3);
  }
  report<T>(state, macs, ms);
  const auto it = maxplus_f32_rate().find(n);
  if (it != maxplus_f32_rate().end()) state.counters["vs_maxplus_f32"] = macs / (ms * 1e-3) / 1e12 / it->second;
}

/// Also reports the bound of a batch of n^3 products: the lower of the ALU
/// ceiling and memory bandwidth x (MACs per byte moved: A and B read, C
/// written, and the argmax written if any), and the rate over it.
template <class T>
void report_bound(benchmark::State& state, std::int64_t n, double rate, bool argmax) {
  const auto it = ceilings().find(type_name<T>());
  if (it == ceilings().end() || bandwidth() == 0) return;
  const double bytes = 3.0 * n * n * sizeof(T) + (argmax ? double(n) * n * sizeof(std::int32_t) : 0.0);
  const double memory_bound = bandwidth() * (double(n) * n * n / bytes) / 1e12;
  const double bound = std::min(it->second, memory_bound);
  state.counters["bound"] = bound;
  state.counters["of_bound"] = rate / bound;
}

/// A batch of n^3 products, C = A (x) B or with an argmax; `tile` forces a
/// small tile by name ("" lets the library pick by size, as users get).
template <class S, class T>
void run_batched(benchmark::State& state, std::int64_t batch, std::int64_t n, bool argmax = false,
                 std::string_view tile = "") {
  if (!need_gpu(state)) return;
  const std::size_t elems = static_cast<std::size_t>(batch * n * n);
  DeviceMemory a(elems * sizeof(T)), b(elems * sizeof(T)), c(elems * sizeof(T));
  std::unique_ptr<DeviceMemory> idx;
  if (argmax) idx = std::make_unique<DeviceMemory>(elems * sizeof(std::int32_t));
  fill<S, T>(a, batch * n * n, 3);
  fill<S, T>(b, batch * n * n, 4);
  const double macs = double(batch) * n * n * n;
  auto id = argmax ? kernel_id<S, T, Op::kGemmBatchedArgmax>() : kernel_id<S, T, Op::kGemmBatched>();
  const auto base = id;
  for (const auto& info : catalog::kInfo) {
    if (!tile.empty() && info.base == base && info.variant == tile) id = info.id;
  }
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms(
        [&] {
          if (argmax && !tile.empty()) {
            const Product<T> p{{a.as<T>(), n, n, n, Trans::kNo, n * n}, {b.as<T>(), n, n, n, Trans::kNo, n * n},
                               {c.as<T>(), n, n, n, Trans::kNo, n * n},
                               Operand<std::int32_t>{idx->as<std::int32_t>(), n, n, n, Trans::kNo, n * n}, {}, batch};
            detail::launch_gemm_batched(id, erased(p), sizeof(T), nullptr);
          } else if (argmax) {
            gemm_batched_argmax<S, T>(Trans::kNo, Trans::kNo, n, n, n, a.as<T>(), n, n * n, b.as<T>(), n, n * n,
                                      c.as<T>(), n, n * n, idx->as<std::int32_t>(), n, n * n, batch);
          } else {
            const Product<T> p{{a.as<T>(), n, n, n, Trans::kNo, n * n}, {b.as<T>(), n, n, n, Trans::kNo, n * n},
                               {c.as<T>(), n, n, n, Trans::kNo, n * n}, {}, {}, batch};
            detail::launch_gemm_batched(id, erased(p), sizeof(T), nullptr);
          }
        },
        samples_for(macs));
    state.SetIterationTime(ms * 1e-3);
  }
  report<T>(state, macs, ms);
  report_bound<T>(state, n, macs / (ms * 1e-3) / 1e12, argmax);
}

void run_bandwidth(benchmark::State& state) {
  if (!need_gpu(state)) return;
  const long long vectors = (1LL << 30) / 16;
  DeviceMemory in(static_cast<std::size_t>(vectors) * 16), out(static_cast<std::size_t>(vectors) * 16);
  CUdeviceptr pin = in.get(), pout = out.get();
  long long n = vectors;
  void* args[] = {&pin, &pout, &n};
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms([&] { fill_module().launch("copy_x4", static_cast<unsigned>(sm_count() * 8), 256, args); }, 5);
    state.SetIterationTime(ms * 1e-3);
  }
  bandwidth() = 2.0 * static_cast<double>(vectors) * 16 / (ms * 1e-3);
  state.counters["GB/s"] = bandwidth() / 1e9;
}

/// The library's permute (src/permute.hpp) of a row-major f32 tensor of `sizes` into the axis order `perm`; GB/s
/// counts the bytes read and written (the einsum's intermediates: 2^26 elements).
void run_permute(benchmark::State& state, std::vector<std::int64_t> sizes, std::vector<int> perm) {
  if (!need_gpu(state)) return;
  detail::StridedCopy copy{};
  copy.rank = static_cast<int>(sizes.size());
  std::int64_t elements = 1;
  for (int a = copy.rank - 1; a >= 0; --a) {
    copy.size[a] = sizes[static_cast<std::size_t>(a)];
    copy.src_stride[a] = elements;
    elements *= copy.size[a];
  }
  std::int64_t stride = 1;
  for (int q = copy.rank - 1; q >= 0; --q) {
    const int a = perm[static_cast<std::size_t>(q)];
    copy.dst_stride[a] = stride;
    stride *= copy.size[a];
  }
  DeviceMemory in(static_cast<std::size_t>(elements) * 4), out(static_cast<std::size_t>(elements) * 4);
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms([&] { detail::permute(4, in.as<float>(), out.as<float>(), copy, nullptr); }, 5);
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["GB/s"] = 2.0 * 4.0 * static_cast<double>(elements) / (ms * 1e-3) / 1e9;
}

/// C = A (x) B with beta = the zero (C not read) and beta = the one (C = C (+) A (x) B), side by side.
template <class S, class T>
void run_beta(benchmark::State& state, std::int64_t n, bool accumulate) {
  if (!need_gpu(state)) return;
  static double zero_ms = 0;
  const std::size_t elems = static_cast<std::size_t>(n * n);
  DeviceMemory a(elems * sizeof(T)), b(elems * sizeof(T)), c(elems * sizeof(T));
  fill<S, T>(a, n * n, 1);
  fill<S, T>(b, n * n, 2);
  fill<S, T>(c, n * n, 3);
  const T beta = accumulate ? reference::one<S, T>() : reference::zero<S, T>();
  const double macs = double(n) * n * n;
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms([&] { gemm<S, T>(Trans::kNo, Trans::kNo, n, n, n, reference::one<S, T>(), a.as<T>(), n, b.as<T>(), n,
                                    beta, c.as<T>(), n); },
                   samples_for(macs));
    state.SetIterationTime(ms * 1e-3);
  }
  report<T>(state, macs, ms);
  if (!accumulate) zero_ms = ms;
  if (accumulate && zero_ms > 0) state.counters["time_vs_beta_zero"] = ms / zero_ms;
}

/// Batched backward passes from a random argmax: G elements of dC per second.
template <class S, class T>
void run_backward_batched(benchmark::State& state, std::int64_t batch, std::int64_t n, bool wrt_a) {
  if (!need_gpu(state)) return;
  const std::size_t elems = static_cast<std::size_t>(batch * n * n);
  DeviceMemory gc(elems * sizeof(T)), idx(elems * sizeof(std::int32_t)), operand(elems * sizeof(T)),
      grad(elems * sizeof(T));
  fill<S, T>(gc, batch * n * n, 5);
  fill<S, T>(operand, batch * n * n, 6);
  fill_indices(idx, batch * n * n, n, 7);
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms(
        [&] {
          if (wrt_a) {
            backward_a_batched<S, T>(Trans::kNo, Trans::kNo, n, n, n, gc.as<T>(), n, n * n, idx.as<std::int32_t>(), n,
                                     n * n, operand.as<T>(), n, n * n, grad.as<T>(), n, n * n, batch);
          } else {
            backward_b_batched<S, T>(Trans::kNo, Trans::kNo, n, n, n, gc.as<T>(), n, n * n, idx.as<std::int32_t>(), n,
                                     n * n, operand.as<T>(), n, n * n, grad.as<T>(), n, n * n, batch);
          }
        },
        5);
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["Gelem/s"] = double(batch) * n * n / (ms * 1e-3) / 1e9;
}

// Backward passes scatter one value per element of dC: reported as G elements
// of dC per second (no MACs).
template <class S, class T>
void run_backward(benchmark::State& state, std::int64_t n, bool wrt_a) {
  if (!need_gpu(state)) return;
  const std::size_t elems = static_cast<std::size_t>(n * n);
  DeviceMemory gc(elems * sizeof(T)), idx(elems * sizeof(std::int32_t)), operand(elems * sizeof(T)),
      grad(elems * sizeof(T));
  fill<S, T>(gc, n * n, 5);
  fill<S, T>(operand, n * n, 6);
  fill_indices(idx, n * n, n, 7);
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms(
        [&] {
          if (wrt_a) {
            backward_a<S, T>(Trans::kNo, Trans::kNo, n, n, n, gc.as<T>(), n, idx.as<std::int32_t>(), n,
                             operand.as<T>(), n, grad.as<T>(), n);
          } else {
            backward_b<S, T>(Trans::kNo, Trans::kNo, n, n, n, gc.as<T>(), n, idx.as<std::int32_t>(), n,
                             operand.as<T>(), n, grad.as<T>(), n);
          }
        },
        5);
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["Gelem/s"] = double(n) * n / (ms * 1e-3) / 1e9;
}

template <class S, class T>
void register_pair() {
  const std::string suffix = std::string(S::kName) + "/" + type_name<T>();
  // i64 products are several times slower than the rest: 4096^3 only.
  const std::vector<std::int64_t> sizes =
      std::is_same_v<T, std::int64_t> ? std::vector<std::int64_t>{4096} : std::vector<std::int64_t>{4096, 8192};
  for (const std::int64_t n : sizes) {
    bench::register_guarded(("gemm/" + suffix + "/" + std::to_string(n)).c_str(),
                                 [n](benchmark::State& s) { run_gemm<S, T>(s, n, false); })
        ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  for (const std::int64_t n : sizes) {
    bench::register_guarded(("gemm_argmax/" + suffix + "/" + std::to_string(n)).c_str(),
                                 [n](benchmark::State& s) { run_gemm<S, T>(s, n, true); })
        ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int16_t>) {
    // Integer data where no product can overflow: the kernels' fast path (int16: DPX).
    for (const bool argmax : {false, true}) {
      bench::register_guarded(((argmax ? "gemm_argmax/" : "gemm/") + suffix + "/8192/small").c_str(),
                                   [argmax](benchmark::State& s) { run_gemm<S, T>(s, 8192, argmax, true); })
          ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
    }
  }
  bench::register_guarded(("gemm_batched/" + suffix + "/4096x64").c_str(),
                               [](benchmark::State& s) { run_batched<S, T>(s, 4096, 64); })
      ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  bench::register_guarded(("gemm_batched_argmax/" + suffix + "/4096x64").c_str(),
                               [](benchmark::State& s) { run_batched<S, T>(s, 4096, 64, true); })
      ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  if constexpr (std::is_same_v<T, float>) {
    bench::register_guarded(("gemm_batched/" + suffix + "/8x2048").c_str(),
                                 [](benchmark::State& s) { run_batched<S, T>(s, 8, 2048); })
        ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  if constexpr (kInCatalog<S, T, Op::kBackwardA>) {
    for (const bool wrt_a : {true, false}) {
      bench::register_guarded(((wrt_a ? "backward_a/" : "backward_b/") + suffix + "/8192").c_str(),
                                   [wrt_a](benchmark::State& s) { run_backward<S, T>(s, 8192, wrt_a); })
          ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
    }
  }
}

template <class F>
void add_row(const std::string& name, F f) {
  bench::register_guarded(name.c_str(), f)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}

/// The tensor-network rows: small batches with their bound,
/// every small tile forced on 4096 x 64^3, batched argmax, beta, backward.
void register_network_rows() {
  add_row("networks/gemm_batched/maxplus/f32/4096x64", [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 4096, 64); });
  add_row("networks/gemm_batched/maxplus/f32/16384x32", [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 16384, 32); });
  add_row("networks/gemm_batched/maxplus/f32/65536x16", [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 65536, 16); });
  for (const char* tile : {"64x64", "32x32", "16x16"}) {
    add_row(std::string("networks/gemm_batched/maxplus/f32/4096x64/tile") + tile,
            [tile](benchmark::State& s) { run_batched<MaxPlus, float>(s, 4096, 64, false, tile); });
  }
  // Every small tile of the f32 MaxPlus batched products, forced, on products
  // of its own size (64^3 for the 64 x 64 tiles).
  for (const bool argmax : {false, true}) {
    const auto base = argmax ? kernel_id<MaxPlus, float, Op::kGemmBatchedArgmax>()
                             : kernel_id<MaxPlus, float, Op::kGemmBatched>();
    for (const auto& info : catalog::kInfo) {
      if (info.base != base || info.variant.empty()) continue;
      const std::int64_t n = info.launch.tile_m < 64 ? info.launch.tile_m : 64;
      const std::int64_t batch = 4096 * (64 / n) * (64 / n) * (64 / n);
      const std::string variant(info.variant);
      add_row(std::string("networks/tiles/") + (argmax ? "gemm_batched_argmax" : "gemm_batched") + "/maxplus/f32/" +
                  std::to_string(batch) + "x" + std::to_string(n) + "/tile" + variant,
              [variant, batch, n, argmax](benchmark::State& s) {
                run_batched<MaxPlus, float>(s, batch, n, argmax, variant);
              });
    }
  }
  add_row("networks/gemm_batched_argmax/maxplus/f32/4096x64",
          [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 4096, 64, true); });
  add_row("networks/gemm_batched_argmax/maxplus/f32/16384x32",
          [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 16384, 32, true); });
  add_row("networks/gemm_batched_argmax/maxplus/f32/65536x16",
          [](benchmark::State& s) { run_batched<MaxPlus, float>(s, 65536, 16, true); });
  add_row("networks/gemm_beta_zero/maxplus/f32/8192", [](benchmark::State& s) { run_beta<MaxPlus, float>(s, 8192, false); });
  add_row("networks/gemm_beta_one/maxplus/f32/8192", [](benchmark::State& s) { run_beta<MaxPlus, float>(s, 8192, true); });
  add_row("networks/gemm/maxmin/f32/8192", [](benchmark::State& s) { run_gemm<MaxMin, float>(s, 8192, false); });
  add_row("networks/gemm/andor/u8/8192", [](benchmark::State& s) { run_gemm<AndOr, std::uint8_t>(s, 8192, false); });
  add_row("networks/gemm_deep/maxplus/f32/1024x65536",
          [](benchmark::State& s) { run_gemm<MaxPlus, float>(s, 1024, false, false, 65536); });
  add_row("networks/gemm_deep/maxplus/f32/256x65536",
          [](benchmark::State& s) { run_gemm<MaxPlus, float>(s, 256, false, false, 65536); });
  for (const bool wrt_a : {true, false}) {
    add_row(std::string("networks/backward_") + (wrt_a ? "a" : "b") + "_batched/maxplus/f32/4096x64",
            [wrt_a](benchmark::State& s) { run_backward_batched<MaxPlus, float>(s, 4096, 64, wrt_a); });
  }
}

template <class S>
void register_semiring() {
  register_pair<S, float>();
  register_pair<S, std::int32_t>();
  register_pair<S, double>();
  register_pair<S, std::int64_t>();
  // int16: the DPX products of MaxPlus and MinPlus; the other semirings' are the generic tile.
  if constexpr (S::kMul == MulKind::kAdd) register_pair<S, std::int16_t>();
}

void register_all() {
  for (const auto& kernel : kCeilings) {
    const std::string type = kernel.type;
    bench::register_guarded((std::string("ceiling/") + kernel.name).c_str(), [&kernel, type](benchmark::State& s) {
      if (!need_gpu(s)) return;
      if (type == "float") run_ceiling<float>(s, kernel);
      else if (type == "double") run_ceiling<double>(s, kernel);
      else if (type == "int") run_ceiling<int>(s, kernel);
      else if (type == "unsigned char") run_ceiling<unsigned char>(s, kernel);
      else if (type == "unsigned int") run_ceiling<unsigned int>(s, kernel);
      else run_ceiling<long long>(s, kernel);
    })->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  bench::register_guarded("ceiling/memory_copy", run_bandwidth)
      ->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  register_semiring<MaxPlus>();
  register_semiring<MinPlus>();
  register_semiring<MaxMul>();
  register_semiring<MaxMin>();
  register_semiring<MinMax>();
  register_pair<AndOr, std::uint8_t>();
  // CountingTropical after f32 MaxPlus, whose 8192^3 rate its rows divide by.
  add_row("counting/gemm/f32/8192", [](benchmark::State& s) { run_counting<float>(s, 8192, false); });
  add_row("counting/gemm/f32/8192/tied", [](benchmark::State& s) { run_counting<float>(s, 8192, true); });
  add_row("counting/gemm/f64/4096", [](benchmark::State& s) { run_counting<double>(s, 4096, false); });
  register_network_rows();
  // The einsum's permutes, 2^26 f32 elements: a transpose, a rotation of three axes (tiled), a swap of two
  // outer axes under a contiguous inner one (plain) and a shuffle of eight axes, against ceiling/memory_copy.
  add_row("permute/f32/8192x8192/10", [](benchmark::State& s) { run_permute(s, {8192, 8192}, {1, 0}); });
  add_row("permute/f32/256x512x512/201", [](benchmark::State& s) { run_permute(s, {256, 512, 512}, {2, 0, 1}); });
  add_row("permute/f32/512x512x256/102", [](benchmark::State& s) { run_permute(s, {512, 512, 256}, {1, 0, 2}); });
  add_row("permute/f32/rank8/63072514", [](benchmark::State& s) {
    run_permute(s, {8, 4, 8, 16, 4, 8, 32, 16}, {6, 3, 0, 7, 2, 5, 1, 4});
  });
  // An intermediate of an independent-set network: 26 axes of 2, axis a to 7a mod 26 (no two axes adjacent on
  // both sides), the boxed mode's case.
  add_row("permute/f32/rank26/7a", [](benchmark::State& s) {
    std::vector<int> perm(26);
    for (int a = 0; a < 26; ++a) perm[static_cast<std::size_t>(a)] = 7 * a % 26;
    run_permute(s, std::vector<std::int64_t>(26, 2), perm);
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Every row times the tuned kernel: tiered, a kernel not yet in the cache serves its quick fragment
  // while the tuned one compiles, and a row's first samples would time that. TROPICAL_TIERED set by the
  // caller wins.
  setenv("TROPICAL_TIERED", "0", 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
