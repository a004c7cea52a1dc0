// Both tiers of the catalog on GPU 0, side by side in one process: a registry
// that serves only quick kernels and one that serves only tuned kernels (they
// share the disk cache), and direct launches of either. Used by the GPU tier
// tests and bench/tiers.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tropical/catalog_sources.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/gemm.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/registry.hpp"

namespace tropical::testing {

/// Launches one tier of a product kernel on GPU 0 with the arguments the public API would pass.
class TierLauncher {
 public:
  TierLauncher() : quick_(catalog::kKernels, storage::CacheConfig::from_env(), config(jit::TierMode::kQuickOnly)),
                   tuned_(catalog::kKernels, storage::CacheConfig::from_env(), config(jit::TierMode::kTunedOnly)) {}

  /// The loaded kernel of one tier (compiled or read from the cache on first use).
  const jit::Resolved& kernel(catalog::KernelId id, jit::Tier tier) {
    const auto index = static_cast<std::uint32_t>(id);
    return tier == jit::Tier::kQuick ? quick_.kernel(index, 0) : tuned_.kernel(index, 0);
  }

  /// C = alpha (x) (op(A) (x) op(B)) (+) beta (x) C as `scaling` says (default: C = the product),
  /// asynchronously on `stream`.
  void gemm(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k, const void* a, long long lda,
            const void* b, long long ldb, void* c, long long ldc, int ta = 0, int tb = 0, CUstream stream = nullptr,
            const detail::Scaling& scaling = {}) {
    std::uint64_t alpha = 0, beta = 0;
    int flags = scaling.flags;
    void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, element(scaling.alpha, alpha),
                    element(scaling.beta, beta), &flags};
    launch(kernel(id, tier), m, n, 1, args, stream);
  }

  /// C and argmax, asynchronously on `stream`.
  void gemm_argmax(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k, const void* a,
                   long long lda, const void* b, long long ldb, void* c, long long ldc, std::int32_t* argmax,
                   long long ldx, int ta = 0, int tb = 0, CUstream stream = nullptr) {
    void* args[] = {&a, &b, &c, &argmax, &m, &n, &k, &lda, &ldb, &ldc, &ldx, &ta, &tb};
    launch(kernel(id, tier), m, n, 1, args, stream);
  }

  /// The strided batch of products, asynchronously on `stream`.
  void gemm_batched(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k, const void* a,
                    long long lda, long long sa, const void* b, long long ldb, long long sb, void* c, long long ldc,
                    long long sc, long long batch, CUstream stream = nullptr, const detail::Scaling& scaling = {}) {
    int ta = 0, tb = 0, flags = scaling.flags;
    std::uint64_t alpha = 0, beta = 0;
    void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, &sa, &sb, &sc, &batch,
                    element(scaling.alpha, alpha), element(scaling.beta, beta), &flags};
    launch(kernel(id, tier), m, n, batch, args, stream);
  }

  /// CountingTropical (gemm or gemm_batched `id`): `batch` products of values and counts, each array with
  /// its leading dimension and stride (0s for one product), asynchronously on `stream`.
  template <class T>
  void counting(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k,
                const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c,
                long long batch, int ta = 0, int tb = 0, CUstream stream = nullptr) {
    const void *av = a.values, *ac = a.counts, *bv = b.values, *bc = b.counts;
    void *cv = c.values, *cc = c.counts;
    long long ldav = a.ld_values, ldac = a.ld_counts, ldbv = b.ld_values, ldbc = b.ld_counts, ldcv = c.ld_values,
              ldcc = c.ld_counts, sav = a.stride_values, sac = a.stride_counts, sbv = b.stride_values,
              sbc = b.stride_counts, scv = c.stride_values, scc = c.stride_counts;
    void* args[] = {&av,   &ac,   &bv, &bc, &cv,  &cc,  &m,   &n,   &k,   &ldav, &ldac, &ldbv,
                    &ldbc, &ldcv, &ldcc, &ta, &tb, &sav, &sac, &sbv, &sbc, &scv,  &scc,  &batch};
    launch(kernel(id, tier), m, n, batch, args, stream);
  }

  /// The strided batch of products with their argmax, asynchronously on `stream`.
  void gemm_batched_argmax(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k,
                           const void* a, long long lda, long long sa, const void* b, long long ldb, long long sb,
                           void* c, long long ldc, long long sc, std::int32_t* argmax, long long ldx, long long sx,
                           long long batch, CUstream stream = nullptr) {
    int ta = 0, tb = 0;
    void* args[] = {&a, &b, &c, &argmax, &m, &n, &k, &lda, &ldb, &ldc, &ldx, &ta, &tb, &sa, &sb, &sc, &sx, &batch};
    launch(kernel(id, tier), m, n, batch, args, stream);
  }

 private:
  // alpha or beta as the kernel's parameter: the caller's element, else an unused one of 8 zero bytes.
  static void* element(const void* given, std::uint64_t& unused) {
    return const_cast<void*>(given != nullptr ? given : static_cast<const void*>(&unused));
  }

  static jit::TierConfig config(jit::TierMode mode) {
    jit::TierConfig tiers;
    tiers.table = catalog::kTiers;
    tiers.mode = mode;
    tiers.ptx = catalog::kShippedPtx;  // as the library's registry: quick and one-tier kernels by the driver's JIT
    return tiers;
  }

  static void launch(const jit::Resolved& r, long long m, long long n, long long batch, void** args, CUstream stream) {
    if (m == 0 || n == 0 || batch == 0) return;
    const auto& api = jit::driver::api();
    jit::driver::ScopedContext context(0);
    const unsigned gx = static_cast<unsigned>((n - 1) / r.launch.tile_n + 1);
    const unsigned gy = static_cast<unsigned>((m - 1) / r.launch.tile_m + 1);
    const unsigned gz = static_cast<unsigned>(std::min<long long>(batch, 65535));
    jit::driver::check(api.cuLaunchKernel(r.function, gx, gy, gz, r.launch.block_x, r.launch.block_y, 1,
                                          r.launch.smem_bytes, stream, args, nullptr),
                       "cuLaunchKernel");
  }

  jit::Registry quick_, tuned_;
};

}  // namespace tropical::testing
