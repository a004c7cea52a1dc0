// bits_wgmma_tma: bits_wgmma_kernel's product with the ring filled by TMA (cp.async.bulk.tensor, 2-d tensor maps
// of the packed operands with the 128- or 64-byte swizzle wgmma reads, zeros past the tensor's edges) by one
// producer thread, and optionally clusters of 2 blocks stacked along m that share B's tile: each block's TMA
// brings half of B's rows to both blocks (multicast), halving B's reads from L2.
#pragma once

#include <cuda.h>  // CUtensorMap (the type only: the maps are encoded through the runtime's driver entry point)

#include "bits_wgmma_kernel.cuh"

// WgCfg's tile (two consumer warpgroups, a producer warpgroup) with CLUSTER blocks a cluster along m.
// PERSIST: a grid of as many clusters as fit on the GPU at once, each walking tiles, instead of one a tile.
template <int WGM, int BN, int KB, int STAGES, int CLUSTER, int GROUP, int PREGS, int PERSIST>
struct TmaCfg : WgCfg<WGM, BN, KB, STAGES, 1, GROUP, 1, PREGS> {
  using Base = WgCfg<WGM, BN, KB, STAGES, 1, GROUP, 1, PREGS>;
  static constexpr int kCluster = CLUSTER, kPersistent = PERSIST;
  static constexpr int kBoxB = BN / CLUSTER;  // rows of B one block's TMA brings (to every block of the cluster)
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of 1 or 2 blocks");
  static_assert((kBoxB * Base::kRowBytes) % 1024 == 0 && Base::kBM <= 256 && kBoxB <= 256, "TMA boxes");
};

// The block's tile of C: clusters (kCluster blocks, kCluster kBM rows, one B tile) taken kGroup cluster rows at
// a time, down the rows before across the columns; rank: the block's place in its cluster.
template <class C>
__device__ __forceinline__ void tma_tile(int tile, int m, int n, unsigned rank, int& m0, int& n0) {
  const int span = C::kCluster * C::kBM, tiles_m = (m + span - 1) / span, tiles_n = (n + C::kBN - 1) / C::kBN;
  const int per = C::kGroup * tiles_n, first = (tile / per) * C::kGroup, rows = min(tiles_m - first, C::kGroup);
  m0 = (first + (tile % per) % rows) * span + (int)rank * C::kBM;
  n0 = ((tile % per) / rows) * C::kBN;
}

// map_a: A as kw words x m rows, box kWords x kBM; map_b: B^T as kw words x n rows, box kWords x kBoxB; both
// swizzled as the descriptors say, zeros outside. C as bits_wgmma_kernel's. Each cluster walks the cluster tiles
// blockIdx.x / kCluster, + gridDim.x / kCluster, ... (one of them where the grid covers them all; persistent
// otherwise, the ring running on across tiles: the producer fills the next tile's first stages while the
// consumers store this one's C).
template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    bits_wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          void* __restrict__ c, int m, int n, int k, int ldc, int output) {
  extern __shared__ __align__(1024) unsigned char wg_smem[];
  __shared__ __align__(8) unsigned long long bars[2 * C::kStages];  // full[STAGES], then empty[STAGES]
  const std::uint32_t ring = (wg::smem_address(wg_smem) + 1023u) & ~1023u;
  const std::uint32_t full = wg::smem_address(bars), empty = full + 8 * C::kStages;
  const int tid = threadIdx.x;
  const unsigned rank = C::kCluster > 1 ? wg::cluster_rank() : 0u;
  const int span = C::kCluster * C::kBM;
  const int tiles = ((m + span - 1) / span) * ((n + C::kBN - 1) / C::kBN);
  const int first_tile = blockIdx.x / C::kCluster, tile_step = gridDim.x / C::kCluster;
  const int kw = (k + 31) / 32, stages = (kw + C::kWords - 1) / C::kWords;
  // Arrivals that free a slot: lane 0 of each consumer warp (8) of every block whose data goes there.
  constexpr int kReleases = 8 * C::kCluster;
  if (tid == 0) {
    for (int q = 0; q < C::kStages; ++q) {
      wg::bar_init(full + 8 * q, 1);  // the producer's arrival with the stage's bytes
      wg::bar_init(empty + 8 * q, kReleases);
    }
    wg::fence_barrier_init();
  }
  if constexpr (C::kCluster > 1)
    wg::cluster_sync();
  else
    __syncthreads();

  if (tid < 128) {  // the producer warpgroup: one thread issues the copies
    if constexpr (C::kProducerRegs > 0) wg::registers_down<C::kProducerRegs>();
    if (tid == 0) {
      int slot = 0;
      unsigned phase = 0;
      for (int tile = first_tile; tile < tiles; tile += tile_step) {
        int m0, n0;
        tma_tile<C>(tile, m, n, rank, m0, n0);
        for (int s = 0; s < stages; ++s) {
          const std::uint32_t base = ring + slot * C::kStageBytes, bar = full + 8 * slot;
          wg::bar_wait(empty + 8 * slot, phase ^ 1u);  // a fresh barrier passes parity 1 at once
          wg::bar_arrive_expect(bar, C::kStageBytes);   // A's box and every block's half of B
          wg::tma_load(base, &map_a, s * C::kWords, m0, bar);
          if constexpr (C::kCluster == 1)
            wg::tma_load(base + C::kBM * C::kRowBytes, &map_b, s * C::kWords, n0, bar);
          else
            wg::tma_load_multicast(base + (C::kBM + (int)rank * C::kBoxB) * C::kRowBytes, &map_b, s * C::kWords,
                                   n0 + (int)rank * C::kBoxB, bar, (unsigned short)((1u << C::kCluster) - 1));
          if (++slot == C::kStages) slot = 0, phase ^= 1u;
        }
      }
    }
    __syncwarp();
  } else {
    if constexpr (C::kProducerRegs > 0) wg::registers_up<C::kConsumerRegs>();
    const int ct = tid - 128, cw = ct / 128;
    // Frees a slot in every block of the cluster whose data it holds (lane 0 of each warp, its wgmma done).
    const auto release = [&](int slot) {
      if (ct % 32 == 0) {
        if constexpr (C::kCluster == 1) {
          wg::bar_arrive(empty + 8 * slot);
        } else {
#pragma unroll
          for (int r = 0; r < C::kCluster; ++r) wg::bar_arrive_cluster(empty + 8 * slot, r);
        }
      }
      __syncwarp();
    };
    unsigned long long da[C::kWgm];
#pragma unroll
    for (int i = 0; i < C::kWgm; ++i)
      da[i] = C::descriptor_a(ring, 64 * (C::kWgm * cw + i));
    const unsigned long long db = C::descriptor_b(ring);
    int slot = 0;
    unsigned phase = 0;
    for (int tile = first_tile; tile < tiles; tile += tile_step) {
      int m0, n0;
      tma_tile<C>(tile, m, n, rank, m0, n0);
      int acc[C::kWgm][C::kAcc];
#pragma unroll
      for (int i = 0; i < C::kWgm; ++i)
#pragma unroll
        for (int e = 0; e < C::kAcc; ++e) acc[i][e] = 0;
      int prev = -1;
      for (int s = 0; s < stages; ++s) {
        wg::bar_wait(full + 8 * slot, phase);
        __syncwarp();  // the warp converged again for the .aligned wgmma instructions
        wg_fence_all<C>(acc);
        wg::wgmma_fence();
        wg_mma_stage<C>(acc, da, db, slot * C::kStageBytes);
        wg::wgmma_commit();
        wg_fence_all<C>(acc);
        wg::wgmma_wait<1>();  // the previous stage's wgmma done: its slot may be refilled, in every block
        wg_fence_all<C>(acc);
        if (prev >= 0) release(prev);
        prev = slot;
        if (++slot == C::kStages) slot = 0, phase ^= 1u;
      }
      wg::wgmma_wait<0>();
      wg_fence_all<C>(acc);
      if (prev >= 0) release(prev);  // the tile's last slot, before the stores: the producer runs on
      wg_epilogue<C>(acc, c, m, n, ldc, output, m0 + 64 * C::kWgm * cw, n0, ct % 128);
      __syncwarp();
    }
  }
  // No block leaves while another of its cluster may still write into its shared memory or arrive on its
  // barriers.
  if constexpr (C::kCluster > 1) wg::cluster_sync();
}
