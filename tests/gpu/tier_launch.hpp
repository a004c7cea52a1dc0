// Both tiers of the catalog on GPU 0, side by side in one process: a registry
// that serves only quick kernels and one that serves only tuned kernels (they
// share the disk cache), and direct launches of either. Used by the GPU tier
// tests and bench/tiers.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../../src/launch.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/gemm.hpp"
#include "tropical/kernel_args.hpp"
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
    const std::uint64_t unused = 0;
    catalog::GemmArgs args{.a = a, .b = b, .c = c, .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                           .trans_a = ta, .trans_b = tb, .alpha = element(scaling.alpha, unused),
                           .beta = element(scaling.beta, unused), .flags = scaling.flags, .work = nullptr,
                           .whole_rows = 0, .parts = 0};
    launch(id, kernel(id, tier), m, n, 1, args, stream);
  }

  /// C and argmax, asynchronously on `stream`.
  void gemm_argmax(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k, const void* a,
                   long long lda, const void* b, long long ldb, void* c, long long ldc, std::int32_t* argmax,
                   long long ldx, int ta = 0, int tb = 0, CUstream stream = nullptr) {
    catalog::GemmArgmaxArgs args{.a = a, .b = b, .c = c, .argmax = argmax, .m = m, .n = n, .kk = k, .lda = lda,
                                 .ldb = ldb, .ldc = ldc, .ldargmax = ldx, .trans_a = ta, .trans_b = tb};
    launch(id, kernel(id, tier), m, n, 1, args, stream);
  }

  /// The strided batch of products, asynchronously on `stream`.
  void gemm_batched(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k, const void* a,
                    long long lda, long long sa, const void* b, long long ldb, long long sb, void* c, long long ldc,
                    long long sc, long long batch, CUstream stream = nullptr, const detail::Scaling& scaling = {}) {
    const std::uint64_t unused = 0;
    catalog::GemmBatchedArgs args{.a = a, .b = b, .c = c, .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb,
                                  .ldc = ldc, .trans_a = 0, .trans_b = 0, .stride_a = sa, .stride_b = sb,
                                  .stride_c = sc, .batch = batch, .alpha = element(scaling.alpha, unused),
                                  .beta = element(scaling.beta, unused), .flags = scaling.flags};
    launch(id, kernel(id, tier), m, n, batch, args, stream);
  }

  /// CountingTropical (gemm or gemm_batched `id`): `batch` products of values and counts, each array with
  /// its leading dimension and stride (0s for one product), asynchronously on `stream`.
  template <class T>
  void counting(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k,
                const CountingMatrix<const T>& a, const CountingMatrix<const T>& b, const CountingMatrix<T>& c,
                long long batch, int ta = 0, int tb = 0, CUstream stream = nullptr) {
    catalog::CountingArgs args{.a_values = a.values, .a_counts = a.counts, .b_values = b.values,
                               .b_counts = b.counts, .c_values = c.values, .c_counts = c.counts, .m = m, .n = n,
                               .kk = k, .lda_values = a.ld_values, .lda_counts = a.ld_counts,
                               .ldb_values = b.ld_values, .ldb_counts = b.ld_counts, .ldc_values = c.ld_values,
                               .ldc_counts = c.ld_counts, .trans_a = ta, .trans_b = tb,
                               .stride_a_values = a.stride_values, .stride_a_counts = a.stride_counts,
                               .stride_b_values = b.stride_values, .stride_b_counts = b.stride_counts,
                               .stride_c_values = c.stride_values, .stride_c_counts = c.stride_counts,
                               .batch = batch};
    launch(id, kernel(id, tier), m, n, batch, args, stream);
  }

  /// The strided batch of products with their argmax, asynchronously on `stream`.
  void gemm_batched_argmax(catalog::KernelId id, jit::Tier tier, long long m, long long n, long long k,
                           const void* a, long long lda, long long sa, const void* b, long long ldb, long long sb,
                           void* c, long long ldc, long long sc, std::int32_t* argmax, long long ldx, long long sx,
                           long long batch, CUstream stream = nullptr) {
    catalog::GemmBatchedArgmaxArgs args{.a = a, .b = b, .c = c, .argmax = argmax, .m = m, .n = n, .kk = k,
                                        .lda = lda, .ldb = ldb, .ldc = ldc, .ldargmax = ldx, .trans_a = 0,
                                        .trans_b = 0, .stride_a = sa, .stride_b = sb, .stride_c = sc,
                                        .stride_argmax = sx, .batch = batch};
    launch(id, kernel(id, tier), m, n, batch, args, stream);
  }

 private:
  // alpha or beta as the kernel's parameter: the caller's element, else an unused one of 8 zero bytes.
  static const void* element(const void* given, const std::uint64_t& unused) {
    return given != nullptr ? given : &unused;
  }

  static jit::TierConfig config(jit::TierMode mode) {
    jit::TierConfig tiers;
    tiers.table = catalog::kTiers;
    tiers.mode = mode;
    tiers.ptx = catalog::kShippedPtx;  // as the library's registry: quick and one-tier kernels by the driver's JIT
    return tiers;
  }

  // Launches kernel `id` (resolved as r) with an argument struct of tropical/kernel_args.hpp, checked against
  // the kernel's parameter list as the library checks it.
  template <class Args>
  static void launch(catalog::KernelId id, const jit::Resolved& r, long long m, long long n, long long batch,
                     Args& args, CUstream stream) {
    detail::check_signature(id, Args::kSignature);
    auto pointers = args.pointers();
    if (m == 0 || n == 0 || batch == 0) return;
    const auto& api = jit::driver::api();
    jit::driver::ScopedContext context(0);
    const unsigned gx = static_cast<unsigned>((n - 1) / r.launch.tile_n + 1);
    const unsigned gy = static_cast<unsigned>((m - 1) / r.launch.tile_m + 1);
    const unsigned gz = static_cast<unsigned>(std::min<long long>(batch, 65535));
    if (r.launch.smem_bytes > 48 * 1024) {  // past the static limit a launch must ask (as src/launch.cpp does)
      jit::driver::check(api.cuFuncSetAttribute(r.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                static_cast<int>(r.launch.smem_bytes)),
                         "cuFuncSetAttribute");
    }
    jit::driver::check(api.cuLaunchKernel(r.function, gx, gy, gz, r.launch.block_x, r.launch.block_y, 1,
                                          r.launch.smem_bytes, stream, pointers.data(), nullptr),
                       "cuLaunchKernel");
  }

  jit::Registry quick_, tuned_;
};

}  // namespace tropical::testing
