// bits_wgmma_ops: the PTX that tools/bits_wgmma_lab.cu's Hopper kernels are made of (sm_90a: wgmma and
// setmaxnreg exist only there): cp.async into shared memory, mbarriers, the warpgroup's wgmma fence, commit and
// wait, shared-memory matrix descriptors and wgmma.mma_async m64nNk256 .s32.b1.b1.and.popc.
#pragma once

#include <cstdint>

namespace wg {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, the last 16 - bytes of them zeros (bytes 0: all zeros; gmem must still
// be a valid address).
__device__ __forceinline__ void copy16(std::uint32_t dst, const void* gmem, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kNewest>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kNewest) : "memory");
}
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// The mbarrier at `bar` counts one arrival once every cp.async this thread has issued so far has landed (noinc:
// the arrival is one of those the barrier's phase expects).
__device__ __forceinline__ void copy_arrive(std::uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

// Shared-memory writes of the generic proxy (ordinary stores, cp.async) made visible to the async proxy
// (wgmma's operand reads).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void bar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Waits until the phase of parity `parity` of the mbarrier has completed (a fresh barrier: parity 1 at once);
// traps after a second of waiting (far past any wait of a working pipeline): a deadlock shows as a launch
// failure, not a hang.
__device__ __forceinline__ void bar_wait(std::uint32_t bar, unsigned parity) {
  unsigned done = 0, tries = 0;
  unsigned long long since = 0;
  for (;;) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (++tries % 4096 == 0) {
      const unsigned long long now = global_ns();
      if (since == 0) since = now;
      else if (now - since > 1000000000ull) __trap();
    }
  }
}

// The mbarrier expects `bytes` more of asynchronous (TMA) writes in its current phase, and this thread arrives.
__device__ __forceinline__ void bar_arrive_expect(std::uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Arrives on the mbarrier at the same shared offset in the cluster's block `rank` (this block's own included).
__device__ __forceinline__ void bar_arrive_cluster(std::uint32_t bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
// mbarrier.init made visible to the cluster (other blocks' TMA and arrivals), before the cluster's barrier.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Every thread of every block of the cluster (release, then acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// TMA: the box of the 2-d tensor map `map` (a __grid_constant__ parameter's address) at (x: words, y: rows) into
// shared memory at dst (swizzled as the map says), its bytes counted on the mbarrier `bar`; multicast: into
// dst and `bar` of every block of the cluster in `mask`.
__device__ __forceinline__ void tma_load(std::uint32_t dst, const void* map, int x, int y, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_multicast(std::uint32_t dst, const void* map, int x, int y, std::uint32_t bar,
                                                   unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}

// The warpgroup's registers: a new allocation per thread (setmaxnreg; a multiple of 8 in 24 .. 256).
template <int kRegs>
__device__ __forceinline__ void registers_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void registers_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// wgmma.fence before the first wgmma that reads accumulators written otherwise; commit closes the
// warpgroup's batch of wgmma issued since the last commit; wait<N>: all but the N newest batches are done
// (their accumulators written, their shared memory read).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving reads or writes of an accumulator across the asynchronous wgmma.
template <int kN>
__device__ __forceinline__ void fence_registers(int (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format" of wgmma): bits 0-13 the start
// address / 16, 16-29 the leading byte offset / 16, 32-45 the stride byte offset / 16, 49-51 the base offset
// (0: the swizzle pattern's 1024- or 512-byte blocks aligned), 62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32).
// Here K-major with a swizzle: rows of `row_bytes` (128 or 64, the swizzle's width) one after the other, 8
// rows a swizzle block (stride byte offset 8 row_bytes between the blocks of 8 rows); the leading byte offset
// is unused by the swizzled K-major layouts (1, as CUTLASS sets it). Advancing along k inside the row moves
// the start address by the bytes of k (32 a k256 step), the swizzle applying to the address as a whole.
__device__ __forceinline__ unsigned long long descriptor(std::uint32_t address, int row_bytes) {
  const unsigned long long layout = row_bytes == 128 ? 1ull : row_bytes == 64 ? 2ull : 3ull;
  return (unsigned long long)((address & 0x3ffffu) >> 4) | (1ull << 16) |
         ((unsigned long long)((8 * row_bytes) >> 4) << 32) | (layout << 62);
}
// The unswizzled K-major layout's descriptor (layout 0): core matrices of 8 rows x 16 bytes (128 bytes, rows
// 16 bytes apart), the next 8 rows' 128 bytes on (stride byte offset 128), the next 16 bytes of k
// `leading_bytes` on (the leading byte offset).
__device__ __forceinline__ unsigned long long descriptor_interleaved(std::uint32_t address, int leading_bytes) {
  return (unsigned long long)((address & 0x3ffffu) >> 4) | ((unsigned long long)((leading_bytes >> 4) & 0x3fff) << 16) |
         ((unsigned long long)(128 >> 4) << 32);
}
// The physical byte offset of logical offset `off` (from a 1024-byte aligned base) of a K-major swizzled
// layout of rows of row_bytes: the 16-byte chunk (bits 4-6) XORed with bits 7-9 (128 bytes: the row within
// its block of 8), 4-5 with 7-8 (64 bytes: rows two by two), 4 with 7 (32 bytes) (CUTLASS's Swizzle<3|2|1,4,3>).
__device__ __forceinline__ std::uint32_t swizzle(std::uint32_t off, int row_bytes) {
  const std::uint32_t mask = row_bytes == 128 ? 7u : row_bytes == 64 ? 3u : 1u;
  return off ^ (((off >> 7) & mask) << 4);
}

// wgmma.mma_async.sync.aligned.m64nNk256.s32.b1.b1.and.popc, A and B from shared memory (K-major, the only
// layout of .b1): d of the warpgroup's 64 x N tile += popc(A AND B) over 256 bits of k. The accumulator
// fragment (PTX ISA, "wgmma .m64nNk*: D"): warp w of the warpgroup holds rows 16 w .. 16 w + 15; with
// g = lane / 4, t = lane % 4, d[4 j + 2 h + e] is row 16 w + g + 8 h, column 8 j + 2 t + e.
// d (64 x 128 int32, 64 a thread) += popc(A AND B) over 256 k: A from a_desc (64 rows), B from b_desc (128 rows).
__device__ __forceinline__ void wgmma_n128(int (&d)[64], unsigned long long a_desc, unsigned long long b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(a_desc), "l"(b_desc), "n"(1));
}

// d (64 x 256 int32, 128 a thread) += popc(A AND B) over 256 k: A from a_desc (64 rows), B from b_desc (256 rows).
__device__ __forceinline__ void wgmma_n256(int (&d)[128], unsigned long long a_desc, unsigned long long b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]),
        "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
        "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
        "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]),
        "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
        "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
        "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
        "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
        "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
      : "l"(a_desc), "l"(b_desc), "n"(1));
}

}  // namespace wg
