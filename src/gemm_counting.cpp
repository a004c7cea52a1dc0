// The CountingTropical launcher (include/tropical/counting.hpp): every
// argument checked before any driver call but the device check, then one
// launch of whichever tier of the kernel the registry serves.
#include "checks.hpp"
#include "counting_checks.hpp"
#include "counting_tile.hpp"
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
  // Few rows and many columns run on the skinny tile of the batched kernel (a single product as a batch of one).
  id = batched ? catalog::pick_tile(id, m, n) : catalog::pick_product(id, m, n);
  const Extent extent{m, n, k, batch};
  check_grid(id, extent);
  DeviceCheck devices;
  for (const Span& x : arrays.array) devices.add(x);  // its device and allocation; nothing if not touched
  const int device = devices.device(stream);
  id = counting_tile(id, m, n, batch, multiprocessors(device));  // a product of few blocks: the fewtiles tile

  // gemm_counting is a batch of one: its strides are not read.
  catalog::CountingArgs args{.a_values = a.values, .a_counts = a.counts, .b_values = b.values, .b_counts = b.counts,
                             .c_values = c.values, .c_counts = c.counts, .m = m, .n = n, .kk = k,
                             .lda_values = a.ld_values, .lda_counts = a.ld_counts, .ldb_values = b.ld_values,
                             .ldb_counts = b.ld_counts, .ldc_values = c.ld_values, .ldc_counts = c.ld_counts,
                             .trans_a = trans_flag(ta), .trans_b = trans_flag(tb),
                             .stride_a_values = batched ? a.stride_values : 0,
                             .stride_a_counts = batched ? a.stride_counts : 0,
                             .stride_b_values = batched ? b.stride_values : 0,
                             .stride_b_counts = batched ? b.stride_counts : 0,
                             .stride_c_values = batched ? c.stride_values : 0,
                             .stride_c_counts = batched ? c.stride_counts : 0, .batch = batch};
  launch(id, device, extent, stream, args);
}

}  // namespace tropical::detail
