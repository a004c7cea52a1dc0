// bits_lab: times variants of the bit-packed AndOr product C = OR_k A(i, k) AND B(k, j) on the binary tensor
// cores (mma.sync m16n8k256 .b1 .and.popc) side by side in one run, so that the catalog's tile
// (templates/bits_gemm.cu.j2) is chosen on measurements. A packed by rows, B packed by columns (B^T by rows),
// 32-bit words, bit j % 32 of word j / 32. The lab asks m, n of the block tile and k of a stage's multiple.
//
//   nvcc -O3 -arch=sm_90 -o bits_lab tools/bits_lab.cu   [-DLAB_FRAGMENTS='"tiles.cuh"']
//   bits_lab [N ...]            (default 16384 8192; N^3; LAB_DENSITY=p sets the bit density, 0.01 as bench/bits.py)
// tools/bits_lab.sh does both, with LAB_FRAGMENTS from tools/bits_lab_fragments.py: the library's own kernel
// once per candidate tile of codegen/spec.py (variants "lib <name>", with its bounds checks and batch loop).
//
// Per variant and output form (packed bits, int32 witness counts): registers and spill (ptxas), resident blocks
// per SM, ms (CUDA events, median of 7 after 2 warm-ups), P booleans/s (m n k / s), whether a hash of C equals
// variant 0's, and whether 64 sampled elements equal a CPU computation. Also a pure-mma ceiling kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__device__ __forceinline__ void mma_b1(int (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                       unsigned b1) {
  // Fragments (g = lane / 4, t = lane % 4): a0 row g, k 32t..; a1 row g + 8; a2 row g, k 128 + 32t..; a3 row
  // g + 8, k 128 + 32t..; b0 column g, k 32t..; b1 column g, k 128 + 32t..; d row g (d0, d1) and g + 8
  // (d2, d3), columns 2t, 2t + 1.
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
      "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const unsigned* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void cp16(unsigned* smem, const unsigned* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Variant parameters. BM x BN block tile of WARPS_M x WARPS_N warps; KW 32-bit words of k a stage (16 = 512
// bits), STAGES in the cp.async ring; MINB the __launch_bounds__ minimum blocks per SM. FRAG 0: the library's
// fragment loads (one 128-bit ld.shared per lane and row covers two k-steps: A and B share the permutation
// of k); FRAG 1: ldmatrix.x4 (b16 matrices of 8 rows x 128 bits), one k-step at a time; FRAG 2: ldmatrix,
// the next k-step's fragments loaded before this one's mma, across the stage's barrier too. Shared rows are
// XOR-swizzled in 16-byte chunks so that either load pattern is free of bank conflicts. EPI 0: packed C by
// atomicOr into shared words (the library), counts by 32-bit stores; EPI 1: packed words reduced across the
// quad by shuffles and stored directly, counts by 64-bit streaming stores. GROUP: block rows per raster group
// (0: row-major order of blocks).
template <int BM, int BN, int WARPS_M, int WARPS_N, int KW, int STAGES, int MINB, int FRAG, int EPI, int GROUP>
struct Cfg {
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N, kWM = BM / WARPS_M, kWN = BN / WARPS_N;
  static constexpr int kMM = kWM / 16, kMN = kWN / 8, kChunks = KW / 4;
  static constexpr int kSmem = STAGES * (BM + BN) * KW * 4;
  static_assert(kWM % 16 == 0 && kWN % 32 == 0 && KW % 16 == 0, "tile");
  static_assert((BM * kChunks) % kThreads == 0 && (BN * kChunks) % kThreads == 0, "staging");
  // Physical 16-byte chunk of logical chunk c of row r.
  static __device__ __forceinline__ int swz(int r, int c) {
    if (FRAG == 0) return kChunks >= 8 ? c ^ ((r & 1) << 2) : c;  // a quarter warp: rows 2q, 2q + 1
    return kChunks == 4 ? c ^ ((r >> 1) & 3) : c ^ (r & 7);       // ldmatrix: 8 rows, one logical chunk
  }
};

template <int BM, int BN, int WARPS_M, int WARPS_N, int KW, int STAGES, int MINB, int FRAG, int EPI, int GROUP>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N, MINB)
    bits_kernel(const unsigned* __restrict__ a, const unsigned* __restrict__ bt, void* __restrict__ c, int m, int n,
                int k, int lda, int ldb, int ldc, int output) {
  using K = Cfg<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>;
  constexpr int T = K::kThreads, MM = K::kMM, MN = K::kMN, CH = K::kChunks;
  extern __shared__ __align__(128) unsigned smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
  const int wm = (warp / WARPS_N) * K::kWM, wn = (warp % WARPS_N) * K::kWN;
  const int tiles_n = n / BN, tiles_m = m / BM, bid = blockIdx.x;
  int tm, tn;
  if (GROUP == 0) {
    tm = bid / tiles_n, tn = bid % tiles_n;
  } else {
    const int per = GROUP * tiles_n, first = (bid / per) * GROUP, rows = min(tiles_m - first, GROUP);
    tm = first + (bid % per) % rows, tn = (bid % per) / rows;
  }
  const int m0 = tm * BM, n0 = tn * BN;
  const int stages = k / (32 * KW);
  const unsigned* pa = a + (long long)m0 * lda;
  const unsigned* pb = bt + (long long)n0 * ldb;
  auto stage = [&](int buf, int s) {
    unsigned* sa = smem + buf * (BM + BN) * KW;
    unsigned* sb = sa + BM * KW;
    const int w0 = s * KW;
#pragma unroll
    for (int i = 0; i < BM * CH / T; ++i) {
      const int v = tid + i * T, r = v / CH, ch = v % CH;
      cp16(sa + r * KW + 4 * K::swz(r, ch), pa + (long long)r * lda + w0 + 4 * ch);
    }
#pragma unroll
    for (int i = 0; i < BN * CH / T; ++i) {
      const int v = tid + i * T, r = v / CH, ch = v % CH;
      cp16(sb + r * KW + 4 * K::swz(r, ch), pb + (long long)r * ldb + w0 + 4 * ch);
    }
  };
  int acc[MM][MN][4];
#pragma unroll
  for (int i = 0; i < MM; ++i)
#pragma unroll
    for (int j = 0; j < MN; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
  if constexpr (FRAG == 2) {
    // ldmatrix, the fragments of the next k-step loaded while the mma of this one run, across stages too:
    // the barrier sits at a stage's last k-step, after its fragments are in registers, so that the next
    // stage's first fragments load before this stage's last mma (the barrier's bubble overlaps them) and the
    // whole ring is in flight (stage s + STAGES goes into stage s's slot).
    constexpr int KS = KW / 8;
    static_assert(KS % 2 == 0, "a stage's first k-step reads buffer 0");
    unsigned af[2][MM][4], bf[2][MN][2];
    auto frags = [&](int buf, const unsigned* sa, const unsigned* sb, int ks) {
#pragma unroll
      for (int i = 0; i < MM; ++i) {
        const int r = wm + 16 * i + (lane & 7) + 8 * ((lane >> 3) & 1), ch = 2 * ks + (lane >> 4);
        ldsm_x4(af[buf][i], sa + r * KW + 4 * K::swz(r, ch));
      }
#pragma unroll
      for (int j = 0; j < MN; j += 2) {
        const int r = wn + 8 * (j + (lane >> 4)) + (lane & 7), ch = 2 * ks + ((lane >> 3) & 1);
        unsigned q[4];
        ldsm_x4(q, sb + r * KW + 4 * K::swz(r, ch));
        bf[buf][j][0] = q[0], bf[buf][j][1] = q[1], bf[buf][j + 1][0] = q[2], bf[buf][j + 1][1] = q[3];
      }
    };
#pragma unroll
    for (int q = 0; q < STAGES; ++q) {
      if (q < stages) stage(q, q);
      cp_commit();
    }
    cp_wait<STAGES - 1>();
    __syncthreads();
    frags(0, smem, smem + BM * KW, 0);
    int slot = 0;
    for (int s = 0; s < stages; ++s) {
      const unsigned* sa = smem + slot * (BM + BN) * KW;
      const unsigned* sb = sa + BM * KW;
      const int next = slot + 1 == STAGES ? 0 : slot + 1;
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        if (ks == KS - 1) {
          cp_wait<STAGES - 2>();  // stage s + 1 landed (this thread's copies) ...
          __syncthreads();        // ... and every thread's; every warp holds stage s's last fragments
          if (s + STAGES < stages) stage(slot, s + STAGES);
          cp_commit();
          if (s + 1 < stages) frags((ks + 1) & 1, smem + next * (BM + BN) * KW, smem + next * (BM + BN) * KW + BM * KW, 0);
        } else {
          frags((ks + 1) & 1, sa, sb, ks + 1);
        }
#pragma unroll
        for (int i = 0; i < MM; ++i)
#pragma unroll
          for (int j = 0; j < MN; ++j)
            mma_b1(acc[i][j], af[ks & 1][i][0], af[ks & 1][i][1], af[ks & 1][i][2], af[ks & 1][i][3], bf[ks & 1][j][0],
                   bf[ks & 1][j][1]);
      }
      slot = next;
    }
  } else {
  #pragma unroll
    for (int q = 0; q < STAGES - 1; ++q) {
      if (q < stages) stage(q, q);
      cp_commit();
    }
    for (int s = 0; s < stages; ++s) {
      cp_wait<STAGES - 2>();
      __syncthreads();
      if (s + STAGES - 1 < stages) stage((s + STAGES - 1) % STAGES, s + STAGES - 1);
      cp_commit();
      const unsigned* sa = smem + (s % STAGES) * (BM + BN) * KW;
      const unsigned* sb = sa + BM * KW;
      if (FRAG == 0) {
  #pragma unroll
        for (int h = 0; h < CH / 4; ++h) {
          uint4 fb[MN];
  #pragma unroll
          for (int j = 0; j < MN; ++j) {
            const int r = wn + 8 * j + g;
            fb[j] = *reinterpret_cast<const uint4*>(sb + r * KW + 4 * K::swz(r, 4 * h + t));
          }
  #pragma unroll
          for (int i = 0; i < MM; ++i) {
            const int r = wm + 16 * i + g;
            const uint4 lo = *reinterpret_cast<const uint4*>(sa + r * KW + 4 * K::swz(r, 4 * h + t));
            const uint4 hi = *reinterpret_cast<const uint4*>(sa + (r + 8) * KW + 4 * K::swz(r + 8, 4 * h + t));
  #pragma unroll
            for (int j = 0; j < MN; ++j) {
              mma_b1(acc[i][j], lo.x, hi.x, lo.y, hi.y, fb[j].x, fb[j].y);
              mma_b1(acc[i][j], lo.z, hi.z, lo.w, hi.w, fb[j].z, fb[j].w);
            }
          }
        }
      } else {
  #pragma unroll
        for (int ks = 0; ks < KW / 8; ++ks) {
          unsigned af[MM][4], bf[MN][2];
  #pragma unroll
          for (int i = 0; i < MM; ++i) {  // matrices: rows 0-7 | 8-15 of chunk 2ks, then of chunk 2ks + 1
            const int r = wm + 16 * i + (lane & 7) + 8 * ((lane >> 3) & 1), ch = 2 * ks + (lane >> 4);
            ldsm_x4(af[i], sa + r * KW + 4 * K::swz(r, ch));
          }
  #pragma unroll
          for (int j = 0; j < MN; j += 2) {  // matrices: n8 tile j chunk 2ks | 2ks + 1, then tile j + 1
            const int r = wn + 8 * (j + (lane >> 4)) + (lane & 7), ch = 2 * ks + ((lane >> 3) & 1);
            unsigned q[4];
            ldsm_x4(q, sb + r * KW + 4 * K::swz(r, ch));
            bf[j][0] = q[0], bf[j][1] = q[1], bf[j + 1][0] = q[2], bf[j + 1][1] = q[3];
          }
  #pragma unroll
          for (int i = 0; i < MM; ++i)
  #pragma unroll
            for (int j = 0; j < MN; ++j) mma_b1(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bf[j][0], bf[j][1]);
        }
      }
    }
  }
  if (output == 0) {
    unsigned* pc = static_cast<unsigned*>(c);
    if (EPI == 0) {
      constexpr int W = BN / 32;
      cp_wait<0>();
      __syncthreads();
      for (int q = tid; q < BM * W; q += T) smem[q] = 0u;
      __syncthreads();
#pragma unroll
      for (int i = 0; i < MM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned word[MN / 4] = {};
#pragma unroll
          for (int j = 0; j < MN; ++j) {
            const int bit = (8 * j + 2 * t) % 32;
            word[j / 4] |= ((unsigned)(acc[i][j][2 * h] != 0) << bit) | ((unsigned)(acc[i][j][2 * h + 1] != 0) << (bit + 1));
          }
#pragma unroll
          for (int w = 0; w < MN / 4; ++w) atomicOr(&smem[(wm + 16 * i + g + 8 * h) * W + wn / 32 + w], word[w]);
        }
      __syncthreads();
      for (int q = tid; q < BM * W; q += T) pc[(long long)(m0 + q / W) * ldc + n0 / 32 + q % W] = smem[q];
    } else {
#pragma unroll
      for (int i = 0; i < MM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int w = 0; w < MN / 4; ++w) {
            unsigned word = 0;
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
              const int j = 4 * w + jj, bit = 8 * jj + 2 * t;
              word |= ((unsigned)(acc[i][j][2 * h] != 0) << bit) | ((unsigned)(acc[i][j][2 * h + 1] != 0) << (bit + 1));
            }
            word |= __shfl_xor_sync(0xffffffffu, word, 1);
            word |= __shfl_xor_sync(0xffffffffu, word, 2);
            if (t == (w & 3)) pc[(long long)(m0 + wm + 16 * i + g + 8 * h) * ldc + (n0 + wn) / 32 + w] = word;
          }
    }
  } else {
    int* pc = static_cast<int*>(c);
#pragma unroll
    for (int i = 0; i < MM; ++i)
#pragma unroll
      for (int j = 0; j < MN; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          int* p = pc + (long long)(m0 + wm + 16 * i + g + 8 * h) * ldc + n0 + wn + 8 * j + 2 * t;
          if (EPI == 0) {
            p[0] = acc[i][j][2 * h], p[1] = acc[i][j][2 * h + 1];
          } else {
            __stcs(reinterpret_cast<int2*>(p), make_int2(acc[i][j][2 * h], acc[i][j][2 * h + 1]));
          }
        }
  }
}

// The tensor pipe alone: kChains independent accumulators per warp, operands in registers.
__global__ void __launch_bounds__(256) ceiling_kernel(int* out, int iters) {
  constexpr int kChains = 16;
  int acc[kChains][4] = {};
  unsigned a0 = threadIdx.x * 0x9e3779b9u, a1 = a0 ^ 0x55555555u, a2 = a0 * 3u, a3 = ~a0, b0 = a0 + 7u, b1 = a1 - 3u;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int q = 0; q < kChains; ++q) mma_b1(acc[q], a0, a1, a2, a3, b0, b1);
  }
  int s = 0;
#pragma unroll
  for (int q = 0; q < kChains; ++q) s += acc[q][0] + acc[q][1] + acc[q][2] + acc[q][3];
  if (s == 0x7fffffff) out[0] = s;
}

__device__ __host__ inline unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Words of random bits, each 1 with probability p (2^-24 steps).
__global__ void fill_bits(unsigned* w, long long words, unsigned long long seed, double p) {
  const unsigned long long cut = (unsigned long long)(p * (double)(1ull << 24));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x) {
    unsigned v = 0;
    for (int b = 0; b < 32; ++b) v |= (unsigned)((mix(seed ^ (unsigned long long)(32 * i + b)) >> 40) < cut) << b;
    w[i] = v;
  }
}
// An order-free hash of words (a sum of mixed (index, value) pairs).
__global__ void hash_words(const unsigned* w, long long words, unsigned long long* out) {
  unsigned long long h = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    h += mix(((unsigned long long)i << 32) ^ w[i]);
  atomicAdd(out, h);
}

#ifdef LAB_FRAGMENTS
// The library's own kernel once per candidate tile of codegen/spec.py (tools/bits_lab_fragments.py), built
// here by nvcc rather than NVRTC.
#include LAB_FRAGMENTS
#endif

struct Problem {
  int m, n, k, lda, ldb;
  unsigned *a, *bt;
  void* c;
  std::vector<unsigned> ha, hb;
};
typedef void (*LaunchFn)(const Problem&, int output, int ldc);
struct Variant {
  const char* name;
  const void* fn;
  LaunchFn launch;
  int threads, bm, bn, smem, kbits;
};
template <int BM, int BN, int WARPS_M, int WARPS_N, int KW, int STAGES, int MINB, int FRAG, int EPI, int GROUP>
void launch_lab(const Problem& p, int output, int ldc) {
  using K = Cfg<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>;
  bits_kernel<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>
      <<<(p.m / BM) * (p.n / BN), K::kThreads, K::kSmem>>>(p.a, p.bt, p.c, p.m, p.n, p.k, p.lda, p.ldb, ldc, output);
}
template <int BM, int BN, int WARPS_M, int WARPS_N, int KW, int STAGES, int MINB, int FRAG, int EPI, int GROUP>
Variant make(const char* name) {
  using K = Cfg<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>;
  return {name, (const void*)bits_kernel<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>,
          launch_lab<BM, BN, WARPS_M, WARPS_N, KW, STAGES, MINB, FRAG, EPI, GROUP>, K::kThreads, BM, BN, K::kSmem,
          32 * KW};
}
#ifdef LAB_FRAGMENTS
// The library's grid (n / tile_n, m / tile_m), its block and dynamic shared memory, no batch.
#define LAB_LAUNCHER(name)                                                                                     \
  void launch_lib_##name(const Problem& p, int output, int ldc) {                                              \
    lib_##name::tropical_gemm_bits_b32_##name<<<dim3(p.n / lib_##name::kTileN, p.m / lib_##name::kTileM, 1), \
                                                lib_##name::kThreads, lib_##name::kLabSmem>>>(                 \
        p.a, p.bt, p.c, p.m, p.n, p.k, p.lda, p.ldb, ldc, output, 0, 0, 0, 1);                                 \
  }
LAB_LIBRARY_VARIANTS(LAB_LAUNCHER)
#endif

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times one variant on one output form; returns ms (negative where it cannot run) and fills the hash and check.
static float run(const Variant& v, Problem& p, int output, unsigned long long* hash, bool* cpu_ok) {
  if (p.m % v.bm || p.n % v.bn || p.k % v.kbits) return -1.0f;
  if (v.smem > 0 && cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem) != cudaSuccess) {
    cudaGetLastError();
    return -2.0f;
  }
  const int ldc = output == 0 ? p.n / 32 : p.n;
  const long long words = (long long)p.m * ldc;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  CK(cudaMemset(p.c, 0, words * 4));
  for (int r = 0; r < 9; ++r) {
    CK(cudaEventRecord(e0));
    v.launch(p, output, ldc);
    CK(cudaEventRecord(e1));
    if (cudaGetLastError() != cudaSuccess) return -3.0f;
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (r >= 2) ms.push_back(t);
  }
  unsigned long long* dh;
  CK(cudaMalloc(&dh, 8));
  CK(cudaMemset(dh, 0, 8));
  hash_words<<<1024, 256>>>(static_cast<unsigned*>(p.c), words, dh);
  CK(cudaMemcpy(hash, dh, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(dh));
  // 64 sampled elements against the CPU.
  *cpu_ok = true;
  const int kw = p.k / 32;
  for (int s = 0; s < 64; ++s) {
    const int i = (int)(mix(1000 + s) % p.m), j = (int)(mix(2000 + s) % p.n);
    int count = 0;
    for (int w = 0; w < kw; ++w) count += __builtin_popcount(p.ha[(size_t)i * p.lda + w] & p.hb[(size_t)j * p.ldb + w]);
    unsigned got = 0;
    const long long at = output == 0 ? (long long)i * ldc + j / 32 : (long long)i * ldc + j;
    CK(cudaMemcpy(&got, static_cast<unsigned*>(p.c) + at, 4, cudaMemcpyDeviceToHost));
    const bool ok = output == 0 ? ((got >> (j % 32)) & 1u) == (unsigned)(count != 0) : (int)got == count;
    if (!ok) *cpu_ok = false;
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return median(ms);
}

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {16384, 8192};
  const double density = getenv("LAB_DENSITY") ? std::atof(getenv("LAB_DENSITY")) : 0.01;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("bits_lab on %s, %d SMs, density %.4g\n", prop.name, prop.multiProcessorCount, density);

  // Ceiling: the tensor pipe alone at 8 and 16 warps per SM.
  {
    int* dout;
    CK(cudaMalloc(&dout, 4));
    const int iters = 4096;
    for (int per_sm : {1, 2, 4}) {
      const int blocks = prop.multiProcessorCount * per_sm;
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      std::vector<float> ms;
      for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(e0));
        ceiling_kernel<<<blocks, 256>>>(dout, iters);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (r >= 2) ms.push_back(t);
      }
      const double macs = (double)blocks * 8 * iters * 16 * 16.0 * 8 * 256;
      const float t = median(ms);
      std::printf("ceiling mma.sync m16n8k256 and.popc, %2d warps/SM: %8.3f ms  %.3f P/s\n", 8 * per_sm, t,
                  macs / (t * 1e-3) / 1e15);
    }
    CK(cudaFree(dout));
  }

  // name: block tile, warps (warp tile), stage bits x stages, fragment loads, epilogue, raster group.
  std::vector<Variant> variants = {
      make<128, 128, 4, 2, 16, 3, 1, 0, 0, 0>("v0 library 128x128 8w(32x64) 512bx3 lds128"),
      make<128, 128, 4, 2, 16, 3, 1, 0, 0, 8>("v1 v0 + raster group 8"),
      make<128, 128, 4, 2, 16, 6, 1, 0, 0, 8>("v2 v1 + 6 stages (96KB)"),
      make<128, 128, 4, 2, 32, 3, 1, 0, 0, 8>("v3 v1 + 1024b stages x3 (96KB, swz)"),
      make<128, 128, 4, 2, 16, 4, 1, 1, 0, 8>("v4 128x128 8w(32x64) 512bx4 ldmatrix"),
      make<128, 128, 4, 2, 16, 3, 2, 1, 0, 8>("v5 128x128 8w(32x64) 512bx3 ldsm 2blk/SM"),
      make<128, 128, 2, 2, 16, 4, 2, 1, 0, 8>("v6 128x128 4w(64x64) 512bx4 ldsm 2blk/SM"),
      make<128, 256, 2, 4, 16, 6, 1, 1, 0, 8>("v7 128x256 8w(64x64) 512bx6 ldsm"),
      make<128, 256, 2, 4, 32, 4, 1, 1, 0, 8>("v8 128x256 8w(64x64) 1024bx4 ldsm"),
      make<256, 128, 4, 2, 32, 4, 1, 1, 0, 8>("v9 256x128 8w(64x64) 1024bx4 ldsm"),
      make<256, 128, 4, 2, 16, 8, 1, 1, 0, 8>("v10 256x128 8w(64x64) 512bx8 ldsm"),
      make<128, 256, 2, 4, 16, 6, 1, 0, 0, 8>("v11 128x256 8w(64x64) 512bx6 lds128"),
      make<256, 128, 4, 4, 32, 4, 1, 1, 0, 8>("v12 256x128 16w(64x32) 1024bx4 ldsm"),
      make<128, 256, 2, 4, 32, 4, 1, 1, 1, 8>("v14 v8 + shuffle/streaming epilogue"),
      make<256, 128, 4, 2, 32, 4, 1, 1, 1, 8>("v15 v9 + shuffle/streaming epilogue"),
      make<128, 256, 2, 4, 32, 4, 1, 1, 0, 0>("v16 v8 without raster group"),
      make<256, 128, 4, 2, 32, 3, 1, 1, 0, 8>("v17 v9 with 3 stages (144KB)"),
      make<256, 128, 4, 2, 32, 4, 1, 1, 0, 16>("v18 v9 with raster group 16"),
      make<128, 128, 2, 2, 16, 4, 2, 1, 1, 8>("v19 v6 + shuffle/streaming epilogue"),
      make<256, 128, 4, 2, 32, 4, 1, 2, 1, 8>("v20 v15 + fragments pipelined over stages"),
      make<128, 256, 2, 4, 32, 4, 1, 2, 1, 8>("v21 v14 + fragments pipelined over stages"),
      make<128, 128, 2, 2, 16, 4, 2, 2, 1, 8>("v22 v19 + fragments pipelined over stages"),
      make<128, 128, 2, 2, 32, 3, 2, 2, 1, 8>("v23 v22 with 1024b stages x3 (96KB)"),
  };
#ifdef LAB_FRAGMENTS
  int lib_at = 0;
#define LAB_VARIANT(name)                                                                                         \
  variants.insert(variants.begin() + (++lib_at),                                                                  \
                  Variant{"lib " #name, (const void*)lib_##name::tropical_gemm_bits_b32_##name, launch_lib_##name, \
                          lib_##name::kThreads, lib_##name::kTileM, lib_##name::kTileN, lib_##name::kLabSmem, 256});
  LAB_LIBRARY_VARIANTS(LAB_VARIANT)
#endif
  std::printf("%-44s %4s %5s %4s %5s | %-6s %8s %7s %5s %4s\n", "variant", "regs", "spill", "b/SM", "smemK", "out",
              "ms", "P/s", "hash", "cpu");
  for (int size : sizes) {
    Problem p;
    p.m = p.n = p.k = size;
    p.lda = p.ldb = size / 32;
    const long long words = (long long)size * p.lda;
    CK(cudaMalloc(&p.a, words * 4));
    CK(cudaMalloc(&p.bt, words * 4));
    CK(cudaMalloc(&p.c, (long long)size * size * 4));
    fill_bits<<<2048, 256>>>(p.a, words, 11, density);
    fill_bits<<<2048, 256>>>(p.bt, words, 23, density);
    p.ha.resize(words);
    p.hb.resize(words);
    CK(cudaMemcpy(p.ha.data(), p.a, words * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(p.hb.data(), p.bt, words * 4, cudaMemcpyDeviceToHost));
    std::printf("--- %d^3\n", size);
    unsigned long long ref[2] = {0, 0};
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      const Variant& v = variants[vi];
      cudaFuncAttributes fa;
      CK(cudaFuncGetAttributes(&fa, v.fn));
      if (v.smem > 0) cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem);
      int per_sm = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, v.threads, v.smem) != cudaSuccess) {
        cudaGetLastError();
        per_sm = -1;
      }
      for (int output : {0, 2}) {
        unsigned long long h = 0;
        bool cpu_ok = false;
        const float ms = run(v, p, output, &h, &cpu_ok);
        if (vi == 0) ref[output / 2] = h;
        if (ms < 0) {
          std::printf("%-44s %4d %5zu %4d %5d | %-6s  skipped (%s)\n", v.name, fa.numRegs, fa.localSizeBytes, per_sm,
                      v.smem / 1024, output == 0 ? "bits" : "counts",
                      ms == -1.0f ? "size" : ms == -2.0f ? "smem attribute" : "launch failed");
          continue;
        }
        const double pps = (double)p.m * p.n * p.k / (ms * 1e-3) / 1e15;
        std::printf("%-44s %4d %5zu %4d %5d | %-6s %8.3f %7.3f %5s %4s\n", v.name, fa.numRegs, fa.localSizeBytes,
                    per_sm, v.smem / 1024, output == 0 ? "bits" : "counts", ms, pps,
                    h == ref[output / 2] ? "ok" : "DIFF", cpu_ok ? "ok" : "BAD");
        std::fflush(stdout);
      }
    }
    CK(cudaFree(p.a));
    CK(cudaFree(p.bt));
    CK(cudaFree(p.c));
  }
  return 0;
}
