// Which tile a CountingTropical product runs on (src/gemm_counting.cpp): the default tile of its kernel or, for
// a product of few blocks, the kernel's fewtiles variant (codegen/spec.py, COUNTING_FEW_TILES).
#pragma once

#include <cstdint>
#include <string_view>

#include "tropical/catalog.hpp"

namespace tropical::detail {

/// A product on a default tile over fewer blocks than this per SM runs on the fewtiles variant: about three
/// waves of the f32 default's 3 blocks an SM, where the two tiles cross over (H200, bench/RESULTS.md).
inline constexpr std::int64_t kFewTilesPerSm = 9;

/// The fewtiles variant of kernel `id` (variant "fewtiles", base id), or id if it has none. A default tile's
/// variants follow it in the catalog (codegen/spec.py, catalog()), so only those are read.
constexpr catalog::KernelId few_tiles_of(catalog::KernelId id) {
  for (auto i = static_cast<std::size_t>(id) + 1; i < catalog::kInfo.size() && catalog::kInfo[i].base == id; ++i) {
    if (catalog::kInfo[i].variant == std::string_view("fewtiles")) return catalog::kInfo[i].id;
  }
  return id;
}

/// The kernel that runs counting kernel `id` over `batch` products of m x n elements of C (m, n, batch >= 1)
/// on a device of `sms` SMs: id's fewtiles variant where id is a default tile with one and its grid has fewer
/// than kFewTilesPerSm blocks per SM, else id.
constexpr catalog::KernelId counting_tile(catalog::KernelId id, std::int64_t m, std::int64_t n, std::int64_t batch,
                                          int sms) {
  const catalog::KernelInfo& info = catalog::kInfo[static_cast<std::size_t>(id)];
  if (!info.variant.empty()) return id;
  const catalog::KernelId few = few_tiles_of(id);
  if (few == id) return id;
  const std::int64_t tile_m = info.launch.tile_m, tile_n = info.launch.tile_n;
  const std::int64_t rows = (m - 1) / tile_m + 1, cols = (n - 1) / tile_n + 1;
  const std::int64_t limit = kFewTilesPerSm * (sms > 0 ? sms : 1);
  // rows * cols * batch < limit, without overflow for any m, n and batch.
  return rows * cols < limit && batch < limit && rows * cols * batch < limit ? few : id;
}

}  // namespace tropical::detail
