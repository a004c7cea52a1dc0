// kernel_lab: times one compiled catalog fragment (a cubin) on the GPU and
// hashes its outputs, so that variants of a kernel can be compared side by side
// in one device call before any of them goes into the catalog.
//
//   nvcc -O2 -arch=sm_90 -o kernel_lab tools/kernel_lab.cu -lcuda
//   tools/nvrtc_cubin.py <libnvrtc.so> <fragment>.cu k.cubin    (the library's compile: NVRTC, its options)
//   (or nvcc -cubin -arch=sm_90 -std=c++17 --fmad=false --ftz=false -o k.cubin <fragment>.cu, which can
//   differ in speed from the library's NVRTC build of the same source)
//   kernel_lab k.cubin <kernel> <kind> <type> <tile_m> <tile_n> <block_x> <block_y> <m> <n> <k> [batch] [data]
//
// kind: gemm | argmax | batched | bargmax | counting (the catalog's argument lists);
// type: f32 | i16; data: rand (f32 in [-1000, 1000), i16 in [-2^13, 2^13)),
// full (i16 over its whole range) or tied (counting: values integers in [-2, 2],
// as kernels_bench's tied row; counts are uniform in [0, 2) for every data). Prints one line: median and spread of 15
// timed launches (events), T MAC/s, and an FNV-1a hash of C (and the argmax, or C's counts).
// Fragments come from `codegen/generate.py --fragments DIR`. LAB_GRID_Z caps
// the batched kernels' grid z (the library launches min(batch, 65535)); LAB_SMEM gives a kernel its dynamic
// shared memory (the catalog's smem_bytes, from codegen/spec.py's launch()).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CU(x)                                                      \
  do {                                                                   \
    CUresult r_ = (x);                                                   \
    if (r_ != CUDA_SUCCESS) {                                            \
      const char* s_ = nullptr;                                          \
      cuGetErrorString(r_, &s_);                                         \
      std::fprintf(stderr, "%s failed: %s\n", #x, s_ ? s_ : "?");        \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)
#define CHECK_RT(x)                                                                        \
  do {                                                                                     \
    cudaError_t r_ = (x);                                                                  \
    if (r_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(r_));                 \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

__device__ unsigned long long lab_mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__global__ void fill_f32(float* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = -1000.0f + 2000.0f * (float)(lab_mix(seed ^ (unsigned long long)i) >> 40) / (float)(1ull << 24);
}
__global__ void fill_counts(float* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = 2.0f * (float)(lab_mix(seed ^ (unsigned long long)i) >> 40) / (float)(1ull << 24);
}
__global__ void fill_f32_tied(float* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = (float)((long long)(lab_mix(seed ^ (unsigned long long)i) % 5) - 2);
}
__global__ void fill_i16(short* p, long long n, unsigned long long seed, int full) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = lab_mix(seed ^ (unsigned long long)i);
    p[i] = full ? (short)r : (short)((long long)(r % 16384) - 8192);
  }
}

static unsigned long long fnv(const void* data, size_t bytes, unsigned long long h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static unsigned long long device_hash(const void* dev, size_t bytes) {
  std::vector<unsigned char> host(bytes);
  CHECK_RT(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost));
  return fnv(host.data(), bytes);
}

int main(int argc, char** argv) {
  if (argc < 12) {
    std::fprintf(stderr, "usage: %s cubin kernel kind type tile_m tile_n block_x block_y m n k [batch] [data]\n", argv[0]);
    return 2;
  }
  const std::string cubin = argv[1], name = argv[2], kind = argv[3], type = argv[4];
  const int tile_m = std::atoi(argv[5]), tile_n = std::atoi(argv[6]);
  const int block_x = std::atoi(argv[7]), block_y = std::atoi(argv[8]);
  long long m = std::atoll(argv[9]), n = std::atoll(argv[10]), kk = std::atoll(argv[11]);
  long long batch = argc > 12 ? std::atoll(argv[12]) : 1;
  const std::string data = argc > 13 ? argv[13] : "rand";
  const bool batched = kind == "batched" || kind == "bargmax";
  const bool argmax = kind == "argmax" || kind == "bargmax";
  const bool counting = kind == "counting";
  if (counting && type != "f32") {
    std::fprintf(stderr, "the counting kind runs f32 kernels only\n");
    return 2;
  }
  const size_t elem = type == "i16" ? 2 : 4;

  CHECK_RT(cudaFree(nullptr));  // the runtime's primary context, shared with the driver calls
  CUmodule module;
  CHECK_CU(cuModuleLoad(&module, cubin.c_str()));
  CUfunction fn;
  CHECK_CU(cuModuleGetFunction(&fn, module, name.c_str()));

  long long lda = kk, ldb = n, ldc = n, ldi = n;
  long long sa = m * kk, sb = kk * n, sc = m * n, si = m * n;
  void *a, *b, *c, *idx = nullptr;
  CHECK_RT(cudaMalloc(&a, sa * batch * elem));
  CHECK_RT(cudaMalloc(&b, sb * batch * elem));
  CHECK_RT(cudaMalloc(&c, sc * batch * elem));
  if (argmax) CHECK_RT(cudaMalloc(&idx, si * batch * 4));
  // counting: A, B, C are the values; ac, bc, cc their counts.
  void *ac = nullptr, *bc = nullptr, *cc = nullptr;
  if (counting) {
    CHECK_RT(cudaMalloc(&ac, sa * batch * elem));
    CHECK_RT(cudaMalloc(&bc, sb * batch * elem));
    CHECK_RT(cudaMalloc(&cc, sc * batch * elem));
    fill_counts<<<1024, 256>>>((float*)ac, sa * batch, 11);
    fill_counts<<<1024, 256>>>((float*)bc, sb * batch, 12);
  }
  if (counting && data == "tied") {
    fill_f32_tied<<<1024, 256>>>((float*)a, sa * batch, 1);
    fill_f32_tied<<<1024, 256>>>((float*)b, sb * batch, 2);
  } else if (type == "i16") {
    const int full = data == "full";
    fill_i16<<<1024, 256>>>((short*)a, sa * batch, 1, full);
    fill_i16<<<1024, 256>>>((short*)b, sb * batch, 2, full);
  } else {
    fill_f32<<<1024, 256>>>((float*)a, sa * batch, 1);
    fill_f32<<<1024, 256>>>((float*)b, sb * batch, 2);
  }
  CHECK_RT(cudaDeviceSynchronize());

  int ta = 0, tb = 0, flags = 0;
  float alpha_f = 0, beta_f = 0;
  short alpha_s = 0, beta_s = 0;
  void* alpha = type == "i16" ? (void*)&alpha_s : (void*)&alpha_f;
  void* beta = type == "i16" ? (void*)&beta_s : (void*)&beta_f;
  // The gemm's split of k (templates/gemm_split.cu.j2): LAB_SPLIT="whole_rows parts" launches the kernel on the
  // first whole_rows rows of tiles and <name>_split (from the cubin LAB_SPLIT_CUBIN, else the kernel's own) on
  // the rest, `parts` blocks a tile, as its programmatic dependent (LAB_PDL=0: a plain launch after it), with a
  // workspace whose tickets are zeroed before each
  // launch (as src/split_k.cpp does); unset, parts = 0. A kernel without those parameters ignores them.
  void* work = nullptr;
  long long whole_rows = 0;
  int parts = 0;
  const unsigned gy_tiles = (unsigned)((m + tile_m - 1) / tile_m), gx_tiles = (unsigned)((n + tile_n - 1) / tile_n);
  size_t ticket_bytes = 0;
  if (const char* split = std::getenv("LAB_SPLIT")) {
    std::sscanf(split, "%lld %d", &whole_rows, &parts);
    const long long split_tiles = ((long long)gy_tiles - whole_rows) * gx_tiles;
    ticket_bytes = (size_t)(split_tiles * 4 + 255) / 256 * 256;
    CHECK_RT(cudaMalloc(&work, ticket_bytes + (size_t)split_tiles * parts * tile_m * tile_n * elem));
    CHECK_RT(cudaMemset(work, 0, ticket_bytes));
  }
  std::vector<void*> args;
  if (kind == "gemm") {
    args = {&a, &b, &c, &m, &n, &kk, &lda, &ldb, &ldc, &ta, &tb, alpha, beta, &flags, &work, &whole_rows, &parts};
  } else if (kind == "argmax") {
    args = {&a, &b, &c, &idx, &m, &n, &kk, &lda, &ldb, &ldc, &ldi, &ta, &tb};
  } else if (kind == "batched") {
    args = {&a, &b, &c, &m, &n, &kk, &lda, &ldb, &ldc, &ta, &tb, &sa, &sb, &sc, &batch, alpha, beta, &flags};
  } else if (kind == "counting") {
    args = {&a, &ac, &b, &bc, &c, &cc, &m, &n, &kk, &lda, &lda, &ldb, &ldb, &ldc, &ldc, &ta, &tb,
            &sa, &sa, &sb, &sb, &sc, &sc, &batch};
  } else if (kind == "bargmax") {
    args = {&a, &b, &c, &idx, &m, &n, &kk, &lda, &ldb, &ldc, &ldi, &ta, &tb, &sa, &sb, &sc, &si, &batch};
  } else {
    std::fprintf(stderr, "unknown kind %s\n", kind.c_str());
    return 2;
  }
  const unsigned gx = gx_tiles, gy = parts > 0 ? (unsigned)whole_rows : gy_tiles;
  CUfunction split_fn = nullptr;
  const bool pdl = !std::getenv("LAB_PDL") || std::atoi(std::getenv("LAB_PDL")) != 0;
  if (parts > 0) {
    CUmodule split_module = module;
    if (const char* split_cubin = std::getenv("LAB_SPLIT_CUBIN")) CHECK_CU(cuModuleLoad(&split_module, split_cubin));
    CHECK_CU(cuModuleGetFunction(&split_fn, split_module, (name + "_split").c_str()));
  }
  // LAB_GRID_Z: fewer blocks along the batch, each looping over several products.
  const long long gz_cap = std::getenv("LAB_GRID_Z") ? std::atoll(std::getenv("LAB_GRID_Z")) : 65535;
  const unsigned gz = batched || counting ? (unsigned)std::min<long long>(batch, gz_cap) : 1;
  // LAB_SMEM: bytes of dynamic shared memory, the kernel's smem_bytes in the catalog (codegen/spec.py's launch();
  // 0 for most kernels), allowed past 48 KB first as the library does (src/launch.cpp).
  const unsigned smem = std::getenv("LAB_SMEM") ? (unsigned)std::atoll(std::getenv("LAB_SMEM")) : 0;
  if (smem > 48 * 1024) CHECK_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
  auto launch = [&] {
    if (work != nullptr) CHECK_RT(cudaMemsetAsync(work, 0, ticket_bytes));
    if (gy > 0) CHECK_CU(cuLaunchKernel(fn, gx, gy, gz, block_x, block_y, 1, smem, nullptr, args.data(), nullptr));
    if (split_fn != nullptr) {
      CUlaunchConfig config{};
      config.gridDimX = gx;
      config.gridDimY = (unsigned)((gy_tiles - whole_rows) * parts);
      config.gridDimZ = 1;
      config.blockDimX = block_x;
      config.blockDimY = block_y;
      config.blockDimZ = 1;
      config.sharedMemBytes = smem;
      CUlaunchAttribute attribute{};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = pdl ? 1 : 0;
      CHECK_CU(cuLaunchKernelEx(&config, split_fn, args.data(), nullptr));
    }
  };
  launch();
  launch();
  CHECK_RT(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CHECK_RT(cudaEventCreate(&e0));
  CHECK_RT(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < 15; ++r) {
    CHECK_RT(cudaEventRecord(e0));
    launch();
    CHECK_RT(cudaEventRecord(e1));
    CHECK_RT(cudaEventSynchronize(e1));
    float t = 0;
    CHECK_RT(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CHECK_RT(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double macs = (double)m * n * kk * batch;
  unsigned long long hc = device_hash(c, sc * batch * elem);
  unsigned long long hi = argmax ? device_hash(idx, si * batch * 4) : counting ? device_hash(cc, sc * batch * elem) : 0;
  std::printf("%-52s %6lldx%lldx%lldx%lld %-4s %9.3f ms (%.3f-%.3f) %7.3f T  C %016llx  idx %016llx\n",
              cubin.c_str(), batch, m, n, kk, data.c_str(), med, ms.front(), ms.back(), macs / (med * 1e-3) / 1e12, hc, hi);
  return 0;
}
