// The packed transpose (src/bits_transpose.hpp): its tiles counted on the host, one launch of the catalog's kernel.
#include "bits_transpose.hpp"

#include <algorithm>
#include <cstdint>

#include "tropical/cpu/bits.hpp"
#include "tropical/kernel_args.hpp"

namespace tropical::detail {

std::int64_t bits_transpose_tiles(std::int64_t rows, std::int64_t cols) {
  using G = catalog::BitsTransposeGeometry;
  if (rows <= 0 || cols <= 0) return 0;
  // A matrix in memory has fewer tiles than words; past 2^63 (no such matrix) the count saturates.
  std::int64_t tiles = 0;
  if (__builtin_mul_overflow((rows - 1) / G::kTileM + 1, (bits_words(cols) - 1) / G::kTileN + 1, &tiles)) {
    return INT64_MAX;
  }
  return tiles;
}

Grid bits_transpose_grid(std::int64_t rows, std::int64_t cols) {
  return Grid{static_cast<unsigned>(std::min<std::int64_t>(bits_transpose_tiles(rows, cols), 0x7fffffff)), 1, 1};
}

void bits_transpose(int device, std::int64_t rows, std::int64_t cols, const std::uint32_t* src, std::int64_t lds,
                    std::uint32_t* dst, std::int64_t ldd, bool identity, unsigned long long* count, CUstream stream) {
  const Grid grid = bits_transpose_grid(rows, cols);
  if (grid.x == 0) return;
  catalog::BitsTransposeArgs args{.src = src, .dst = dst, .count = count, .rows = rows, .cols = cols, .lds = lds,
                                  .ldd = ldd, .identity = identity ? 1 : 0};
  launch_device_op<Op::kBitsTranspose, std::uint32_t>(device, grid, stream, args);
}

}  // namespace tropical::detail
