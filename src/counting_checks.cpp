#include "counting_checks.hpp"

#include <string>

namespace tropical::detail {

CountingArrays check_counting(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              const CountingMatrix<const void>& a, const CountingMatrix<const void>& b,
                              const CountingMatrix<void>& c, std::int64_t batch, bool batched,
                              std::size_t elem_size) {
  check_sizes(ta, tb, m, n, k);
  if (batch < 0) invalid("negative batch " + std::to_string(batch));
  struct Layout {
    const char* operand;
    const char* part;
    const void* ptr;
    Stored shape;
    std::int64_t ld, stride;
  };
  const Stored sa = stored(ta, m, k), sb = stored(tb, k, n), sc{m, n};
  const Layout arrays[6] = {
      {"a", "values", a.values, sa, a.ld_values, a.stride_values},
      {"a", "counts", a.counts, sa, a.ld_counts, a.stride_counts},
      {"b", "values", b.values, sb, b.ld_values, b.stride_values},
      {"b", "counts", b.counts, sb, b.ld_counts, b.stride_counts},
      {"c", "values", c.values, sc, c.ld_values, c.stride_values},
      {"c", "counts", c.counts, sc, c.ld_counts, c.stride_counts},
  };
  static const char* const kNames[6] = {"a.values", "a.counts", "b.values", "b.counts", "c.values", "c.counts"};
  for (int i = 0; i < 6; ++i) {
    const Layout& x = arrays[i];
    const std::string prefix = std::string(x.operand) + ".";
    check_ld((prefix + "ld_" + x.part).c_str(), x.ld, x.shape);
    const std::int64_t e = extent(kNames[i], x.shape, x.ld, elem_size);
    // A and B are not read when k = 0; C's products must not overlap.
    if (batched) check_batch((prefix + "stride_" + x.part).c_str(), x.stride, i < 4 && k == 0 ? 0 : e, batch, elem_size, i >= 4);
  }
  CountingArrays out{};
  const bool any = m > 0 && n > 0 && batch > 0;
  for (int i = 0; i < 6; ++i) {
    const Layout& x = arrays[i];
    if (!any || (i < 4 && k == 0)) continue;
    check_non_null(x.ptr, kNames[i]);
    out.array[i] = span(kNames[i], x.ptr, x.shape, x.ld, batched ? x.stride : 0, batched ? batch : 1, elem_size);
  }
  for (int o = 4; o < 6; ++o) {
    for (int i = 0; i < o; ++i) {
      if (overlap(out.array[o], out.array[i])) {
        invalid(std::string(kNames[o]) + " shares memory with " + kNames[i] +
                ": an output must share no element with an input or with the other output");
      }
    }
  }
  return out;
}

}  // namespace tropical::detail
