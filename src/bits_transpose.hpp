#pragma once

// The transpose of a bit-packed matrix on the device (the closure's step between squarings): the catalog's
// bits_transpose kernel (templates/bits_transpose.cu.j2), its grid computed on the host.

#include <cuda.h>

#include <cstdint>

#include "launch.hpp"

namespace tropical::detail {

/// The tiles of the bits_transpose kernel over a rows x cols matrix (BitsTransposeGeometry: kTileM rows by kTileN
/// words of bits_words(cols)), 0 where either is 0.
std::int64_t bits_transpose_tiles(std::int64_t rows, std::int64_t cols);

/// The kernel's grid: a block a tile, at most 2^31 - 1 blocks (the kernel loops past them); x 0 for no tiles.
Grid bits_transpose_grid(std::int64_t rows, std::int64_t cols);

/// Queues on `stream` of `device` dst (cols x rows bits, ldd words a row) = src (rows x cols bits, lds words a
/// row) transposed, ORed with the identity where `identity`: words 0 .. bits_words(rows) - 1 of each row of dst,
/// its bits past `rows` zero, the rest of its rows untouched; source bits past `cols` are never read. Where count
/// is not null (device memory) the set bits written are added to *count. Unchecked beyond rows, cols >= 0 (the
/// library's own workspaces): dst must not overlap src. Throws CudaError, CompileError, Unavailable.
void bits_transpose(int device, std::int64_t rows, std::int64_t cols, const std::uint32_t* src, std::int64_t lds,
                    std::uint32_t* dst, std::int64_t ldd, bool identity, unsigned long long* count, CUstream stream);

}  // namespace tropical::detail
