// The CountingTropical launcher (include/tropical/counting.hpp): every
// argument checked before any driver call but the device check, then one
// launch of whichever tier of the kernel the registry serves.
#include <string>

#include "checks.hpp"
#include "counting_checks.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/counting.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
namespace {

constexpr std::int64_t kMaxGridY = 65535, kMaxGridZ = 65535;

/// The grid of one block per tile of C of `launch`; rejects one the device cannot launch.
void grid_for(const jit::LaunchShape& launch, std::int64_t m, std::int64_t n, std::int64_t batch, unsigned (&grid)[3]) {
  const std::int64_t gx = (n - 1) / launch.tile_n + 1, gy = (m - 1) / launch.tile_m + 1;
  if (gy > kMaxGridY) {
    invalid("m = " + std::to_string(m) + " needs more than " + std::to_string(kMaxGridY) + " row tiles; split the product");
  }
  if (gx > 0x7fffffff) invalid("n = " + std::to_string(n) + " is too large for one launch");
  grid[0] = static_cast<unsigned>(gx);
  grid[1] = static_cast<unsigned>(gy);
  grid[2] = static_cast<unsigned>(batch < kMaxGridZ ? batch : kMaxGridZ);
}

}  // namespace

void launch_gemm_counting(catalog::KernelId id, std::size_t elem_size, Trans ta, Trans tb, std::int64_t m,
                          std::int64_t n, std::int64_t k, const CountingMatrix<const void>& a,
                          const CountingMatrix<const void>& b, const CountingMatrix<void>& c, std::int64_t batch,
                          CUstream stream) {
  const auto index = static_cast<std::size_t>(id);
  const bool batched = catalog::kInfo[index].op == Op::kGemmBatched;
  const CountingArrays arrays = check_counting(ta, tb, m, n, k, a, b, c, batch, batched, elem_size);
  if (arrays.array[4].bytes == 0) return;
  unsigned tuned_grid[3];
  grid_for(catalog::kTunedLaunch[index], m, n, batch, tuned_grid);
  DeviceCheck devices;
  for (const Span& x : arrays.array) devices.add(x);  // its device and allocation; nothing if not touched
  const int device = devices.device(stream);

  const void *av = a.values, *ac = a.counts, *bv = b.values, *bc = b.counts;
  void *cv = c.values, *cc = c.counts;
  long long mm = m, nn = n, kk = k, ldav = a.ld_values, ldac = a.ld_counts, ldbv = b.ld_values, ldbc = b.ld_counts,
            ldcv = c.ld_values, ldcc = c.ld_counts, nb = batch;
  // gemm_counting is a batch of one: its strides are not read.
  long long sav = batched ? a.stride_values : 0, sac = batched ? a.stride_counts : 0,
            sbv = batched ? b.stride_values : 0, sbc = batched ? b.stride_counts : 0,
            scv = batched ? c.stride_values : 0, scc = batched ? c.stride_counts : 0;
  int ta_flag = ta == Trans::kYes ? 1 : 0, tb_flag = tb == Trans::kYes ? 1 : 0;
  void* args[] = {&av,   &ac,   &bv,      &bc,      &cv,  &cc,  &mm,  &nn,  &kk,  &ldav, &ldac, &ldbv,
                  &ldbc, &ldcv, &ldcc,    &ta_flag, &tb_flag, &sav, &sac, &sbv, &sbc, &scv,  &scc,  &nb};

  const auto& api = jit::driver::api();
  jit::Registry& reg = registry();
  jit::driver::ScopedContext context(device);
  // Once the tuned kernel is published this is the whole lookup; until then the
  // request carries the cost model's facts (the quick tiles are smaller, so
  // they may need more row tiles than a launch allows: then only the tuned one).
  const jit::Resolved* kernel = reg.settled(static_cast<std::uint32_t>(index), device);
  if (kernel == nullptr) {
    const bool quick_fits = (m - 1) / catalog::kQuickLaunch[index].tile_m + 1 <= kMaxGridY;
    const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                        static_cast<double>(batch);
    kernel = &reg.kernel(static_cast<std::uint32_t>(index), device, jit::Request{macs, stream, quick_fits});
  }
  unsigned grid[3] = {tuned_grid[0], tuned_grid[1], tuned_grid[2]};
  if (kernel->tier != jit::Tier::kTuned) grid_for(kernel->launch, m, n, batch, grid);
  jit::driver::check(api.cuLaunchKernel(kernel->function, grid[0], grid[1], grid[2], kernel->launch.block_x,
                                        kernel->launch.block_y, 1, kernel->launch.smem_bytes, stream, args, nullptr),
                     "cuLaunchKernel");
}

}  // namespace tropical::detail
