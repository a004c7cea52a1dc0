// bits_wgmma_kernel: the packed AndOr product on wgmma m64nNk256 .b1.and.popc (sm_90a), one kernel over a
// configuration (WgCfg) for tools/bits_wgmma_lab.cu. A (m x k bits) packed by rows, B^T (n x k bits) by rows,
// rows lda / ldb 32-bit words (a multiple of 4), bits past k zero; C packed bits (output 0, ldc words a row,
// bits past n zero) or int32 witness counts (output 2, ldc int32 a row, ldc even). Any m, n, k.
#pragma once

#include "bits_wgmma_ops.cuh"

// WGM m64 tiles per consumer warpgroup (two of them: BM = 128 WGM rows), BN columns (the wgmma's N: 128 or 256),
// KB bits of k a stage (1024: rows of 128 bytes, the 128-byte swizzle; 512: 64 bytes, the 64-byte swizzle),
// STAGES in the ring, WS (0: every thread copies and __syncthreads hands the stages over; 1: a producer
// warpgroup copies, full / empty mbarriers hand them over), GROUP block rows per raster group, MINB the
// __launch_bounds__ minimum blocks per SM, PREGS the producer warpgroup's registers (WS; setmaxnreg, the
// consumers taking the rest of the 64K, 0: no setmaxnreg, every thread at __launch_bounds__' 168), SWZ 1: the
// swizzled K-major layout of the row width, 0: no swizzle (a diagnostic: the interleaved layout of 8-row x
// 16-byte core matrices, which tells a swizzle misread from anything else).
template <int WGM, int BN, int KB, int STAGES, int WS, int GROUP, int MINB, int PREGS = 0, int SWZ = 1>
struct WgCfg {
  static constexpr int kWgm = WGM, kBN = BN, kBM = 128 * WGM, kStages = STAGES, kWs = WS, kGroup = GROUP;
  static constexpr int kMinBlocks = MINB;
  static constexpr int kRowBytes = KB / 8, kChunks = kRowBytes / 16, kWords = KB / 32, kSteps = KB / 256;
  static constexpr int kStageBytes = (kBM + BN) * kRowBytes;
  static constexpr int kSmem = STAGES * kStageBytes + 1024;  // + the slack to align the ring to 1024 bytes
  static constexpr int kThreads = WS ? 384 : 256, kLoaders = WS ? 128 : 256;
  static constexpr int kAcc = BN / 2;  // int32 accumulators a thread per m64 tile
  static constexpr int kProducerRegs = PREGS, kConsumerRegs = (65536 - 128 * PREGS) / 256 / 8 * 8;
  static_assert(PREGS == 0 || (PREGS % 8 == 0 && PREGS >= 24 && kConsumerRegs <= 256), "setmaxnreg's counts");
  static_assert(BN == 128 || BN == 256, "wgmma wrappers exist for n128 and n256");
  static_assert(KB == 512 || KB == 1024, "rows of 64 or 128 bytes (the swizzle's width)");
  static_assert(WGM * BN <= 256, "at most 128 accumulators a thread");
  static_assert(STAGES >= (WS ? 2 : 3), "the ring");
  static_assert((kBM * kChunks) % kLoaders == 0 && (BN * kChunks) % kLoaders == 0, "whole copies a thread");
  static_assert(kStageBytes % 1024 == 0 && (kBM * kRowBytes) % 1024 == 0, "stages and B's rows 1024-aligned");
  static constexpr int kSwizzled = SWZ;
  // Bytes between a stage's consecutive rows (within a core matrix when not swizzled), and the descriptors'
  // start-address steps (16-byte units) from one k256 step to the next for A and B: 32 bytes along a swizzled
  // row; two core-matrix columns of the operand's rows unswizzled.
  static constexpr int kRowStride = SWZ ? kRowBytes : 16;
  static constexpr int kStepA = SWZ ? 2 : 2 * kBM, kStepB = SWZ ? 2 : 2 * BN;
  // The byte offset within a stage of 16-byte chunk ch of logical row r (A's rows 0 .. kBM - 1, then B's):
  // swizzled, rows of kRowBytes one after the other, chunks XORed (wg::swizzle); unswizzled, each operand's
  // chunk columns one after the other, rows 16 bytes apart within them (core matrices 8 rows x 16 bytes,
  // consecutive: the stride byte offset 128, the leading byte offset a column, rows x 16 bytes).
  static __device__ __forceinline__ std::uint32_t offset(int r, int ch) {
    if (SWZ) return wg::swizzle(r * kRowBytes + 16 * ch, kRowBytes);
    return r < kBM ? ch * kBM * 16 + r * 16 : kBM * kRowBytes + ch * BN * 16 + (r - kBM) * 16;
  }
  // The descriptors of A's rows from `row` on (64 of them) and of B's, at a slot based at `ring`.
  static __device__ __forceinline__ unsigned long long descriptor_a(std::uint32_t ring, int row) {
    return SWZ ? wg::descriptor(ring + offset(row, 0), kRowBytes) : wg::descriptor_interleaved(ring + offset(row, 0), kBM * 16);
  }
  static __device__ __forceinline__ unsigned long long descriptor_b(std::uint32_t ring) {
    return SWZ ? wg::descriptor(ring + kBM * kRowBytes, kRowBytes) : wg::descriptor_interleaved(ring + kBM * kRowBytes, BN * 16);
  }
};

// One stage (k words from s kWords on) of the block's rows of A then B into the ring's slot at `slot_base`
// (shared address), by loader thread lt of C::kLoaders: rows r < BM are A's m0 + r, the others B's
// n0 + r - BM; 16-byte chunks past the row's words or rows past m / n are zeros.
template <class C>
__device__ __forceinline__ void wg_stage(std::uint32_t slot_base, int s, int lt, const unsigned* __restrict__ a,
                                         const unsigned* __restrict__ bt, int m, int n, int kw, int lda, int ldb,
                                         int m0, int n0) {
  constexpr int kPerA = C::kBM * C::kChunks / C::kLoaders, kPerB = C::kBN * C::kChunks / C::kLoaders;
#pragma unroll
  for (int q = 0; q < kPerA + kPerB; ++q) {
    const bool is_a = q < kPerA;
    const int v = lt + q * C::kLoaders, r = v / C::kChunks, ch = v % C::kChunks;
    const int row = is_a ? m0 + r : n0 + r - C::kBM, w = s * C::kWords + 4 * ch;
    int bytes = row < (is_a ? m : n) ? min(16, 4 * (kw - w)) : 0;
    bytes = max(bytes, 0);
    const unsigned* src = bytes > 0 ? (is_a ? a + (size_t)row * lda : bt + (size_t)row * ldb) + w : a;
    wg::copy16(slot_base + C::offset(r, ch), src, bytes);
  }
}

// wg_stage without the checks, for a block inside m and n and a stage inside the rows' words: loader thread lt
// copies chunk lt % kChunks of rows lt / kChunks + q kRowStep, which share one swizzle (kRowStep a multiple
// of 8), from one pointer per operand (ga, gb: the thread's first row, chunk and stage 0) and a row stride, to
// soff_a, soff_b (its first rows' offsets in the stage) + q kRowStep kRowStride.
template <class C>
__device__ __forceinline__ void wg_stage_whole(std::uint32_t slot_base, std::uint32_t soff_a, std::uint32_t soff_b,
                                               const unsigned* ga, const unsigned* gb, long long step_a,
                                               long long step_b, int s) {
  constexpr int kRowStep = C::kLoaders / C::kChunks;
  constexpr int kPerA = C::kBM / kRowStep, kPerB = C::kBN / kRowStep;
  static_assert(kRowStep % 8 == 0 && C::kBM % kRowStep == 0 && C::kBN % kRowStep == 0,
                "one swizzle for a thread's rows, whole rows a thread");
  ga += s * C::kWords;
  gb += s * C::kWords;
#pragma unroll
  for (int q = 0; q < kPerA; ++q) wg::copy16(slot_base + soff_a + q * kRowStep * C::kRowStride, ga + q * step_a, 16);
#pragma unroll
  for (int q = 0; q < kPerB; ++q) wg::copy16(slot_base + soff_b + q * kRowStep * C::kRowStride, gb + q * step_b, 16);
}

// One stage's wgmma of a consumer warpgroup: kSteps k256 steps, each WGM m64 tiles (A's descriptors da) by B
// (db), the descriptors' start addresses moved to the slot (slot_off / 16) and the step (kStepA, kStepB).
template <class C>
__device__ __forceinline__ void wg_mma_stage(int (&acc)[C::kWgm][C::kAcc], const unsigned long long (&da)[C::kWgm],
                                             unsigned long long db, std::uint32_t slot_off) {
#pragma unroll
  for (int kk = 0; kk < C::kSteps; ++kk)
#pragma unroll
    for (int i = 0; i < C::kWgm; ++i) {
      const unsigned long long step_a = (slot_off >> 4) + kk * C::kStepA, step_b = (slot_off >> 4) + kk * C::kStepB;
      if constexpr (C::kBN == 256)
        wg::wgmma_n256(acc[i], da[i] + step_a, db + step_b);
      else
        wg::wgmma_n128(acc[i], da[i] + step_a, db + step_b);
    }
}

template <class C>
__device__ __forceinline__ void wg_fence_all(int (&acc)[C::kWgm][C::kAcc]) {
#pragma unroll
  for (int i = 0; i < C::kWgm; ++i) wg::fence_registers(acc[i]);
}

// A consumer warpgroup's tile of C (rows m0.. of its WGM m64 tiles, columns n0..; thread wt of the warpgroup)
// from its accumulators: d[4 j + 2 h + e] of m64 tile i is row 64 i + 16 warp + g + 8 h, column 8 j + 2 t + e.
template <class C>
__device__ __forceinline__ void wg_epilogue(const int (&acc)[C::kWgm][C::kAcc], void* __restrict__ c, int m, int n,
                                            int ldc, int output, int m0, int n0, int wt) {
  const int warp = wt / 32, lane = wt % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < C::kWgm; ++i) {
    const int row0 = m0 + 64 * i + 16 * warp + g;
    if (output == 0) {
      // Packed word w of a row: columns 32 w .. 32 w + 31, 8 bits in each lane of the quad, ORed by shuffles;
      // lane t stores the words w with w % 4 == t.
      unsigned* pc = static_cast<unsigned*>(c);
      const int words = (n + 31) / 32;
#pragma unroll
      for (int w = 0; w < C::kBN / 32; ++w)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned word = 0;
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              word |= (unsigned)(acc[i][4 * (4 * w + jj) + 2 * h + e] != 0) << (8 * jj + 2 * t + e);
          word |= __shfl_xor_sync(0xffffffffu, word, 1);
          word |= __shfl_xor_sync(0xffffffffu, word, 2);
          const int row = row0 + 8 * h, cw32 = n0 / 32 + w;
          if (t == (w & 3) && row < m && cw32 < words) pc[(size_t)row * ldc + cw32] = word;
        }
    } else {
      int* pc = static_cast<int*>(c);
#pragma unroll
      for (int j = 0; j < C::kBN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 8 * h, col = n0 + 8 * j + 2 * t;
          if (row >= m) continue;
          int* p = pc + (size_t)row * ldc + col;
          if (col + 1 < n) {
            __stcs(reinterpret_cast<int2*>(p), make_int2(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]));
          } else if (col < n) {
            p[0] = acc[i][4 * j + 2 * h];
          }
        }
    }
  }
}

template <class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    bits_wgmma_kernel(const unsigned* __restrict__ a, const unsigned* __restrict__ bt, void* __restrict__ c, int m,
                      int n, int k, int lda, int ldb, int ldc, int output) {
  extern __shared__ __align__(1024) unsigned char wg_smem[];
  __shared__ __align__(8) unsigned long long bars[2 * C::kStages];  // full[STAGES], then empty[STAGES] (WS)
  const std::uint32_t ring = (wg::smem_address(wg_smem) + 1023u) & ~1023u;
  const std::uint32_t full = wg::smem_address(bars), empty = full + 8 * C::kStages;
  const int tid = threadIdx.x;
  // Blocks C::kGroup block rows at a time, down the rows before across the columns (the last group shorter).
  const int tiles_m = (m + C::kBM - 1) / C::kBM, tiles_n = (n + C::kBN - 1) / C::kBN, bid = blockIdx.x;
  const int per = C::kGroup * tiles_n, first = (bid / per) * C::kGroup, rows = min(tiles_m - first, C::kGroup);
  const int m0 = (first + (bid % per) % rows) * C::kBM, n0 = ((bid % per) / rows) * C::kBN;
  const int kw = (k + 31) / 32, stages = (kw + C::kWords - 1) / C::kWords;
  // Stages before `whole` are copied by wg_stage_whole (the block inside m and n, the stage inside the words).
  const int whole = m0 + C::kBM <= m && n0 + C::kBN <= n ? kw / C::kWords : 0;
  auto stage = [&](std::uint32_t slot_base, int s, int lt) {
    if (s < whole) {
      const int r0 = lt / C::kChunks, ch = lt % C::kChunks;
      constexpr int kRowStep = C::kLoaders / C::kChunks;
      wg_stage_whole<C>(slot_base, C::offset(r0, ch), C::offset(C::kBM + r0, ch),
                        a + (size_t)(m0 + r0) * lda + 4 * ch, bt + (size_t)(n0 + r0) * ldb + 4 * ch,
                        (long long)kRowStep * lda, (long long)kRowStep * ldb, s);
    } else {
      wg_stage<C>(slot_base, s, lt, a, bt, m, n, kw, lda, ldb, m0, n0);
    }
  };

  if constexpr (C::kWs) {
    if (tid == 0) {
      for (int q = 0; q < C::kStages; ++q) {
        wg::bar_init(full + 8 * q, C::kLoaders);  // every producer thread's copies landed
        wg::bar_init(empty + 8 * q, 256);         // every consumer thread past its wgmma of the slot
      }
    }
    __syncthreads();
    if (tid < 128) {  // the producer warpgroup
      if constexpr (C::kProducerRegs > 0) wg::registers_down<C::kProducerRegs>();
      int slot = 0;
      unsigned phase = 0;
      for (int s = 0; s < stages; ++s) {
        wg::bar_wait(empty + 8 * slot, phase ^ 1u);  // a fresh barrier passes parity 1 at once
        stage(ring + slot * C::kStageBytes, s, tid);
        wg::copy_arrive(full + 8 * slot);
        if (++slot == C::kStages) slot = 0, phase ^= 1u;
      }
      wg::copy_wait_all();
      return;
    }
    if constexpr (C::kProducerRegs > 0) wg::registers_up<C::kConsumerRegs>();
  }
  const int ct = C::kWs ? tid - 128 : tid;  // thread of the two consumer warpgroups
  const int cw = ct / 128;
  int acc[C::kWgm][C::kAcc];
#pragma unroll
  for (int i = 0; i < C::kWgm; ++i)
#pragma unroll
    for (int e = 0; e < C::kAcc; ++e) acc[i][e] = 0;
  unsigned long long da[C::kWgm];
#pragma unroll
  for (int i = 0; i < C::kWgm; ++i) da[i] = C::descriptor_a(ring, 64 * (C::kWgm * cw + i));
  const unsigned long long db = C::descriptor_b(ring);

  if constexpr (C::kWs) {
    int slot = 0, prev = C::kStages - 1;
    unsigned phase = 0;
    for (int s = 0; s < stages; ++s) {
      wg::bar_wait(full + 8 * slot, phase);
      __syncwarp();             // the warp converged again for the .aligned wgmma instructions
      wg::fence_proxy_async();  // the cp.async writes (generic proxy) before wgmma's reads (async proxy)
      wg_fence_all<C>(acc);
      wg::wgmma_fence();
      wg_mma_stage<C>(acc, da, db, slot * C::kStageBytes);
      wg::wgmma_commit();
      wg_fence_all<C>(acc);
      wg::wgmma_wait<1>();  // the previous stage's wgmma done: its slot may be refilled
      wg_fence_all<C>(acc);
      if (s > 0) wg::bar_arrive(empty + 8 * prev);
      prev = slot;
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
  } else {
    // Stage s + STAGES - 2 goes into the slot of stage s - 2, whose wgmma every warpgroup has waited for
    // (wait<1> at the end of iteration s - 1) before the barrier of iteration s.
#pragma unroll
    for (int q = 0; q < C::kStages - 2; ++q) {
      if (q < stages) stage(ring + q * C::kStageBytes, q, tid);
      wg::copy_commit();
    }
    int slot = 0, fill = C::kStages - 2;
    for (int s = 0; s < stages; ++s) {
      wg::copy_wait<C::kStages - 3>();  // this thread's copies of stage s landed ...
      wg::fence_proxy_async();          // ... visible to the async proxy ...
      __syncthreads();                  // ... and every thread's
      if (s + C::kStages - 2 < stages)
        stage(ring + fill * C::kStageBytes, s + C::kStages - 2, tid);
      wg::copy_commit();
      wg_fence_all<C>(acc);
      wg::wgmma_fence();
      wg_mma_stage<C>(acc, da, db, slot * C::kStageBytes);
      wg::wgmma_commit();
      wg_fence_all<C>(acc);
      wg::wgmma_wait<1>();
      wg_fence_all<C>(acc);
      if (++slot == C::kStages) slot = 0;
      if (++fill == C::kStages) fill = 0;
    }
  }
  wg::wgmma_wait<0>();
  wg_fence_all<C>(acc);

  wg_epilogue<C>(acc, c, m, n, ldc, output, m0 + 64 * C::kWgm * cw, n0, ct % 128);
}
