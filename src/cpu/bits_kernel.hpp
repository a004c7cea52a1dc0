#pragma once

// The packed boolean product's register tile (bits_kernel.cpp, one per
// instruction set) as the CPU backend's bits.cpp calls it.

#include <cstdint>

namespace tropical::cpu::detail {

/// Rows of A and of B^T one tile combines (a 4 x 4 block of C).
constexpr int kBitsTile = 4;
/// Packed rows hold a multiple of this many 64-bit words (one AVX-512 vector), 64-byte aligned.
constexpr std::int64_t kBitsRowPad = 8;

/// out[r * 4 + c] = popcount (count) or "any bit" (!count) of AND(a row r, b row c) over `words`
/// 64-bit words (a multiple of kBitsRowPad); rows a + r * stride, b + c * stride.
using BitsTileFn = void (*)(const std::uint64_t* a, const std::uint64_t* b, std::int64_t stride,
                            std::int64_t words, bool count, std::int64_t* out);

/// The tile of the instruction set the other microkernels use (TROPICAL_CPU_ISA's cap included).
BitsTileFn bits_tile();

}  // namespace tropical::cpu::detail
