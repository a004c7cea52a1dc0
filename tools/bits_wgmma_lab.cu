// bits_wgmma_lab: the bit-packed AndOr product C = OR_k A(i, k) AND B(k, j) on Hopper's warpgroup binary
// tensor cores (wgmma.mma_async m64nNk256 .s32.b1.b1.and.popc, sm_90a only), variants side by side, each
// checked bit for bit against a plain CUDA-core reference on odd sizes and on the timed ones. A packed by rows,
// B by columns (B^T by rows), 32-bit words, bit j % 32 of word j / 32, rows lda / ldb words (a multiple of 4:
// 16-byte copies), bits past k zero. Outputs: packed bits (ldc words a row) or int32 witness counts.
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o bits_wgmma_lab tools/bits_wgmma_lab.cu
//   bits_wgmma_lab [N ...]   (timed sizes, N^3; default 16384 8192; LAB_DENSITY=p, default 0.01)
// (nvcc 13's -arch=sm_90a still emits compute_90 PTX, which has no wgmma: name compute_90a.)
// tools/bits_wgmma_lab.sh builds, prints ptxas' registers and spills, and runs each variant on its own.
//
// The kernels: a block computes BM x BN of C (BM = 128 WGM: two consumer warpgroups of WGM m64 tiles each,
// wgmma m64nBNk256 from shared memory), walking k through a ring of STAGES stages of KB bits (rows of KB / 8
// bytes, 128 or 64: the swizzle's width). Variants w (bits_wgmma_kernel.cuh): the ring filled by cp.async; WS 0
// ("sync"): every thread copies and the block's barrier hands the stages over; WS 1 ("producer wg"): a
// producer warpgroup copies, mbarriers (full, empty) hand the stages over. Variants t (bits_wgmma_tma.cuh): one
// producer thread fills the ring by TMA; clusters of 2 along m share B's tile (multicast); persistent: as many
// clusters as fit, walking tiles. First a diagonal problem (C = I: a layout error shows where the ones land),
// then odd sizes, both checked; then the timed N^3, checked too.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include "bits_wgmma_check.cuh"
#include "bits_wgmma_kernel.cuh"
#include "bits_wgmma_tma.cuh"

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// The tensor pipe alone: two warpgroups a block, each wgmma m64n256k256 over one stage of zeros, back to back.
__global__ void __launch_bounds__(256) ceiling_kernel(int* out, int iters) {
  extern __shared__ __align__(1024) unsigned char ceiling_smem[];
  const std::uint32_t ring = (wg::smem_address(ceiling_smem) + 1023u) & ~1023u;
  unsigned char* base = ceiling_smem + (ring - wg::smem_address(ceiling_smem));
  for (int q = threadIdx.x; q < 384 * 128 / 4; q += blockDim.x) reinterpret_cast<unsigned*>(base)[q] = 0u;
  wg::fence_proxy_async();
  __syncthreads();
  int acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0;
  const unsigned long long da = wg::descriptor(ring + (threadIdx.x / 128) * 64 * 128, 128);
  const unsigned long long db = wg::descriptor(ring + 128 * 128, 128);
  for (int it = 0; it < iters; ++it) {
    wg::fence_registers(acc);
    wg::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wg::wgmma_n256(acc, da + 2 * kk, db + 2 * kk);
    wg::wgmma_commit();
    wg::wgmma_wait<1>();
    wg::fence_registers(acc);
  }
  wg::wgmma_wait<0>();
  wg::fence_registers(acc);
  int s = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += acc[i];
  if (s != 0) out[0] = s;  // zeros in, zeros out: anything else is a broken instruction
}

struct Problem {
  int m, n, k, lda, ldb;
  unsigned *a, *bt;
  int* ref;  // m x n reference counts, ld n
  void* c;   // m x ldc of the output (room for counts with ldc = n rounded up to 4)
};
typedef cudaError_t (*LaunchFn)(const Problem&, int output, int ldc);
struct Variant {
  const char* name;
  const void* fn;
  LaunchFn launch;
  int threads, smem;
};
template <class C>
cudaError_t launch(const Problem& p, int output, int ldc) {
  const int tiles = ((p.m + C::kBM - 1) / C::kBM) * ((p.n + C::kBN - 1) / C::kBN);
  bits_wgmma_kernel<C><<<tiles, C::kThreads, C::kSmem>>>(p.a, p.bt, p.c, p.m, p.n, p.k, p.lda, p.ldb, ldc, output);
  return cudaGetLastError();
}

// A 2-d tensor map of packed rows (kw words x rows, ld words apart), box box_words x box_rows, the swizzle of
// rows of box_words words (128 or 64 bytes), zeros outside; cuTensorMapEncodeTiled through the runtime's
// driver entry point (no link to the driver library).
static bool tensor_map(CUtensorMap* map, const unsigned* base, int rows, int kw, int ld, int box_words, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (!encode) return false;
  const cuuint64_t dims[2] = {(cuuint64_t)kw, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)ld * 4};
  const cuuint32_t box[2] = {(cuuint32_t)box_words, (cuuint32_t)box_rows}, steps[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, const_cast<unsigned*>(base), dims, strides, box, steps,
                            CU_TENSOR_MAP_INTERLEAVE_NONE,
                            box_words == 32 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) std::printf("cuTensorMapEncodeTiled: error %d\n", (int)r);
  return r == CUDA_SUCCESS;
}
template <class C>
cudaError_t launch_tma(const Problem& p, int output, int ldc) {
  const int kw = (p.k + 31) / 32;
  CUtensorMap ma, mb;
  if (!tensor_map(&ma, p.a, p.m, kw, p.lda, C::kWords, C::kBM) ||
      !tensor_map(&mb, p.bt, p.n, kw, p.ldb, C::kWords, C::kBoxB))
    return cudaErrorNotSupported;
  const int span = C::kCluster * C::kBM, tiles = ((p.m + span - 1) / span) * ((p.n + C::kBN - 1) / C::kBN);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(tiles * C::kCluster);
  cfg.blockDim = dim3(C::kThreads);
  cfg.dynamicSmemBytes = C::kSmem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C::kCluster, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (C::kPersistent) {  // as many clusters as fit at once (a GPC's odd SM may hold none of a pair)
    static int fit = 0;
    if (fit == 0 && cudaOccupancyMaxActiveClusters(&fit, bits_wgmma_tma_kernel<C>, &cfg) != cudaSuccess) {
      cudaGetLastError();
      fit = 0;
    }
    if (fit <= 0) return cudaErrorNotSupported;
    cfg.gridDim = dim3(std::min(tiles, fit) * C::kCluster);
  }
  return cudaLaunchKernelEx(&cfg, bits_wgmma_tma_kernel<C>, ma, mb, p.c, p.m, p.n, p.k, ldc, output);
}
template <int WGM, int BN, int KB, int STAGES, int WS, int GROUP, int MINB, int PREGS = 0, int SWZ = 1>
Variant make(const char* name) {
  using C = WgCfg<WGM, BN, KB, STAGES, WS, GROUP, MINB, PREGS, SWZ>;
  return {name, (const void*)bits_wgmma_kernel<C>, launch<C>, C::kThreads, C::kSmem};
}

template <int WGM, int BN, int KB, int STAGES, int CLUSTER, int GROUP, int PERSIST = 0, int PREGS = 40>
Variant make_tma(const char* name) {
  using C = TmaCfg<WGM, BN, KB, STAGES, CLUSTER, GROUP, PREGS, PERSIST>;
  return {name, (const void*)bits_wgmma_tma_kernel<C>, launch_tma<C>, C::kThreads, C::kSmem};
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs one variant on one output form `reps` times (2 warm-ups first when timed), checks C against the
// reference and prints one line.
static void run(const Variant& v, Problem& p, int output, int reps) {
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, v.fn));
  int per_sm = -1;
  if (cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, v.threads, v.smem) != cudaSuccess) {
    cudaGetLastError();
    per_sm = -1;
  }
  const int ldc = output == 0 ? (p.n + 31) / 32 : (p.n + 3) / 4 * 4;
  CK(cudaMemset(p.c, 0xff, (size_t)p.m * ldc * 4));  // unwritten elements show as mismatches
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  const char* fail = nullptr;
  bool fault = false;
  for (int r = 0; r < reps + (reps > 1 ? 2 : 0); ++r) {
    CK(cudaEventRecord(e0));
    cudaError_t e = v.launch(p, output, ldc);  // a launch refused (resources, tensor map): the context lives on
    if (e == cudaSuccess) {
      CK(cudaEventRecord(e1));
      e = cudaEventSynchronize(e1);  // a fault or a trap (bar_wait's deadlock guard): the context is lost
      fault = e != cudaSuccess;
    }
    if (e != cudaSuccess) {
      fail = cudaGetErrorString(e);
      break;
    }
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (reps == 1 || r >= 2) ms.push_back(t);
  }
  const char* form = output == 0 ? "bits" : "counts";
  char size[32];
  std::snprintf(size, sizeof size, "%dx%dx%d", p.m, p.n, p.k);
  if (fail) {
    std::printf("%-46s %4d %5zu %4d %5d | %-15s %-6s FAILED: %s\n", v.name, fa.numRegs, fa.localSizeBytes, per_sm,
                v.smem / 1024, size, form, fail);
    std::fflush(stdout);
    if (fault) std::exit(2);  // the context is lost: tools/bits_wgmma_lab.sh runs each variant on its own
    cudaGetLastError();       // a refused launch: clear it for the next
    return;
  }
  unsigned long long* d;
  CK(cudaMalloc(&d, 80));
  unsigned long long h[10] = {0ull, ~0ull};
  CK(cudaMemcpy(d, h, 80, cudaMemcpyHostToDevice));
  compare<<<1024, 256>>>(p.c, p.ref, p.m, p.n, ldc, p.n, output, d);
  CK(cudaMemcpy(h, d, 80, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  char check[512];
  if (h[0] == 0) {
    std::snprintf(check, sizeof check, "ok");
  } else {
    // The first mismatch in row-major order, then up to 3 more of those found first: (i, j) C's value / the
    // reference count (bits: C's bit, its word, the count).
    const int cols = output == 0 ? 32 * ldc : p.n;
    int len = std::snprintf(check, sizeof check, "BAD %llu of %lld:", h[0], (long long)p.m * cols);
    const int found = (int)std::min<unsigned long long>(h[0], 8);
    for (int e = -1, shown = 0; e < found && shown < 4; ++e, ++shown) {
      const unsigned long long q = e < 0 ? h[1] : h[2 + e];
      if (e >= 0 && q == h[1]) {
        --shown;
        continue;
      }
      const int i = (int)(q / cols), j = (int)(q % cols);
      unsigned got = 0;
      int want = 0;
      CK(cudaMemcpy(&got, static_cast<unsigned*>(p.c) + (size_t)i * ldc + (output == 0 ? j / 32 : j), 4,
                    cudaMemcpyDeviceToHost));
      if (j < p.n) CK(cudaMemcpy(&want, p.ref + (size_t)i * p.n + j, 4, cudaMemcpyDeviceToHost));
      if (output == 0)
        len += std::snprintf(check + len, sizeof check - len, " (%d, %d) %u [0x%08x] / %d;", i, j, (got >> (j % 32)) & 1u,
                             got, want);
      else
        len += std::snprintf(check + len, sizeof check - len, " (%d, %d) %d / %d;", i, j, (int)got, want);
    }
  }
  const float t = median(ms);
  const double pps = (double)p.m * p.n * p.k / (t * 1e-3) / 1e15;
  std::printf("%-46s %4d %5zu %4d %5d | %-15s %-6s %8.3f %7.3f  %s\n", v.name, fa.numRegs, fa.localSizeBytes,
              per_sm, v.smem / 1024, size, form, t, pps, check);
  std::fflush(stdout);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

// density < 0: the diagonal operands (fill_diagonal, stride 1: C = I where k >= m, n).
static void size_block(const std::vector<Variant>& variants, int m, int n, int k, double density, int reps,
                       bool quiet) {
  Problem p;
  p.m = m, p.n = n, p.k = k;
  p.lda = p.ldb = ((k + 31) / 32 + 3) / 4 * 4;
  CK(cudaMalloc(&p.a, (size_t)m * p.lda * 4));
  CK(cudaMalloc(&p.bt, (size_t)n * p.ldb * 4));
  CK(cudaMalloc(&p.ref, (size_t)m * n * 4));
  CK(cudaMalloc(&p.c, (size_t)m * ((n + 3) / 4 * 4) * 4));
  if (density < 0) {
    fill_diagonal<<<256, 256>>>(p.a, m, p.lda, k, 1);
    fill_diagonal<<<256, 256>>>(p.bt, n, p.ldb, k, 1);
  } else {
    fill_bits<<<2048, 256>>>(p.a, m, p.lda, k, 11 + k, density);
    fill_bits<<<2048, 256>>>(p.bt, n, p.ldb, k, 23 + k, density);
  }
  reference_counts<<<dim3((n + 63) / 64, (m + 63) / 64), dim3(16, 16)>>>(p.a, p.bt, p.ref, m, n, (k + 31) / 32, p.lda,
                                                                         p.ldb, n);
  CK(cudaDeviceSynchronize());
  if (!quiet)
    std::printf("--- m %d n %d k %d, %s%.4g%s\n", m, n, k, density < 0 ? "diagonal " : "density ", density,
                reps > 1 ? ", timed" : ", checked");
  for (const Variant& v : variants)
    for (int output : {0, 2}) run(v, p, output, reps);
  CK(cudaFree(p.a));
  CK(cudaFree(p.bt));
  CK(cudaFree(p.ref));
  CK(cudaFree(p.c));
}

static void ceiling(const cudaDeviceProp& prop) {
  {  // the ceiling: 1 and 2 blocks (2 and 4 warpgroups) per SM
    int* dout;
    CK(cudaMalloc(&dout, 4));
    CK(cudaMemset(dout, 0, 4));
    const int smem = 384 * 128 + 1024, iters = 2048;
    CK(cudaFuncSetAttribute(ceiling_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (int per_sm : {1, 2}) {
      const int blocks = prop.multiProcessorCount * per_sm;
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      std::vector<float> ms;
      for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(e0));
        ceiling_kernel<<<blocks, 256, smem>>>(dout, iters);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (r >= 2) ms.push_back(t);
      }
      int bad = 0;
      CK(cudaMemcpy(&bad, dout, 4, cudaMemcpyDeviceToHost));
      const double macs = (double)blocks * 2 * iters * 4 * 64.0 * 256 * 256;
      std::printf("ceiling wgmma m64n256k256 and.popc, %d warpgroups/SM: %8.3f ms  %.3f P/s%s\n", 2 * per_sm,
                  median(ms), macs / (median(ms) * 1e-3) / 1e15, bad ? "  (NONZERO SUM: broken)" : "");
    }
    CK(cudaFree(dout));
  }
}

static std::vector<Variant> variants() {
  // name: block tile, consumer warpgroups' tiles, stage bits x stages, hand-over, raster group, blocks/SM.
  return {
      make<1, 256, 1024, 4, 0, 8, 1>("w0 128x256 2wg(64x256) 1024bx4 sync"),
      make<1, 256, 512, 8, 0, 8, 1>("w1 128x256 2wg(64x256) 512bx8 sync"),
      make<2, 128, 1024, 4, 0, 8, 1>("w2 256x128 2wg(128x128) 1024bx4 sync"),
      make<1, 128, 512, 6, 0, 8, 2>("w3 128x128 2wg(64x128) 512bx6 sync 2blk/SM"),
      make<1, 256, 1024, 4, 1, 8, 1>("w4 128x256 2wg(64x256) 1024bx4 producer wg"),
      make<1, 256, 512, 8, 1, 8, 1>("w5 128x256 2wg(64x256) 512bx8 producer wg"),
      make<2, 128, 1024, 4, 1, 8, 1>("w6 256x128 2wg(128x128) 1024bx4 producer wg"),
      make<1, 256, 1024, 4, 1, 16, 1>("w7 w4 + raster group 16"),
      make<1, 256, 1024, 4, 1, 8, 1, 40>("w8 w4 + setmaxnreg 40 / 232 (producer spills)"),
      make<1, 256, 1024, 4, 0, 8, 1, 0, 0>("w9 w0 unswizzled (diagnostic: layouts)"),
      make_tma<1, 256, 1024, 4, 1, 8>("t0 128x256 2wg(64x256) 1024bx4 TMA"),
      make_tma<1, 256, 1024, 4, 2, 8>("t1 t0 + cluster 2 along m, B multicast"),
      make_tma<2, 128, 1024, 4, 1, 8>("t2 256x128 2wg(128x128) 1024bx4 TMA"),
      make_tma<2, 128, 1024, 4, 2, 8>("t3 t2 + cluster 2 along m, B multicast"),
      make_tma<1, 256, 512, 8, 2, 8>("t4 t1 with 512bx8"),
      make_tma<1, 256, 1024, 4, 2, 16>("t5 t1 + raster group 16"),
      make_tma<1, 256, 1024, 4, 2, 8, 0, 0>("t6 t1 without setmaxnreg"),
      make_tma<1, 256, 1024, 4, 1, 8, 1>("t7 t0 persistent"),
      make_tma<1, 256, 1024, 4, 2, 8, 1>("t8 t1 persistent"),
      make_tma<2, 128, 1024, 4, 2, 8, 1>("t9 t3 persistent"),
      make_tma<1, 256, 512, 8, 2, 8, 1>("t10 t4 persistent"),
  };
}

// bits_wgmma_lab [--list | --header | --ceiling | --variant I] [--odd | --timed] [N ...]: no option runs the
// ceiling and every variant in this process; --variant I only variant I (no header), so that a variant that
// faults or deadlocks takes only its own process down (tools/bits_wgmma_lab.sh); --odd only the checked odd
// sizes, --timed only the timed N^3; --list prints the number of variants.
int main(int argc, char** argv) {
  std::vector<int> sizes;
  int only = -1;
  bool list = false, header_only = false, ceiling_only = false, odd_sizes = true, timed_sizes = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") list = true;
    else if (arg == "--header") header_only = true;
    else if (arg == "--ceiling") ceiling_only = true;
    else if (arg == "--odd") timed_sizes = false;
    else if (arg == "--timed") odd_sizes = false;
    else if (arg == "--variant" && i + 1 < argc) only = std::atoi(argv[++i]);
    else sizes.push_back(std::atoi(argv[i]));
  }
  if (sizes.empty()) sizes = {16384, 8192};
  std::vector<Variant> all = variants();
  if (list) {
    std::printf("%zu\n", all.size());
    return 0;
  }
  const double density = getenv("LAB_DENSITY") ? std::atof(getenv("LAB_DENSITY")) : 0.01;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  if (only < 0) {
    std::printf("bits_wgmma_lab on %s (sm_%d%d), %d SMs, density %.4g (odd sizes 0.05)\n", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, density);
    if (!header_only) ceiling(prop);
    std::printf("%-46s %4s %5s %4s %5s | %-15s %-6s %8s %7s  %s\n", "variant", "regs", "spill", "b/SM", "smemK",
                "m x n x k", "out", "ms", "P/s", "check against the reference (every element)");
    if (header_only || ceiling_only) return 0;
  } else {
    if (only >= (int)all.size()) return 1;
    all = {all[only]};
  }
  // Odd sizes first (edges in m, n and k: k not a multiple of 32 or of a stage), checked once each.
  const int odd[][3] = {{1000, 777, 1234}, {257, 129, 300}, {128, 256, 1024}, {4163, 2088, 4129}, {64, 40, 31}};
  if (odd_sizes) size_block(all, 256, 256, 1024, -1.0, 1, only >= 0);  // C = I: where a layout error puts the ones
  for (const auto& s : odd)
    if (odd_sizes) size_block(all, s[0], s[1], s[2], 0.05, 1, only >= 0);
  for (int size : sizes)
    if (timed_sizes) size_block(all, size, size, size, density, 7, only >= 0);
  return 0;
}
