// The CountingTropical launcher (include/tropical/counting.hpp): every
// argument checked before any driver call but the device check, then one
// launch of whichever tier of the kernel the registry serves.
#include "checks.hpp"
#include "counting_checks.hpp"
#include "launch.hpp"
#include "tropical/counting.hpp"

namespace tropical::detail {

void launch_gemm_counting(catalog::KernelId id, std::size_t elem_size, Trans ta, Trans tb, std::int64_t m,
                          std::int64_t n, std::int64_t k, const CountingMatrix<const void>& a,
                          const CountingMatrix<const void>& b, const CountingMatrix<void>& c, std::int64_t batch,
                          CUstream stream) {
  const auto index = static_cast<std::size_t>(id);
  const bool batched = catalog::kInfo[index].op == Op::kGemmBatched;
  const CountingArrays arrays = check_counting(ta, tb, m, n, k, a, b, c, batch, batched, elem_size);
  if (arrays.array[4].bytes == 0) return;
  const Extent extent{m, n, k, batch};
  check_grid(id, extent);
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
  int ta_flag = trans_flag(ta), tb_flag = trans_flag(tb);
  void* args[] = {&av,   &ac,   &bv,      &bc,      &cv,  &cc,  &mm,  &nn,  &kk,  &ldav, &ldac, &ldbv,
                  &ldbc, &ldcv, &ldcc,    &ta_flag, &tb_flag, &sav, &sac, &sbv, &sbc, &scv,  &scc,  &nb};
  launch(id, device, extent, stream, args);
}

}  // namespace tropical::detail
