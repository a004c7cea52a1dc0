// The packed transpose's reference for its tests (emulated and on a GPU): random packed rows whose padding bits are
// set, and the transpose bit by bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "tropical/cpu/bits.hpp"

namespace tropical::bits_transpose_test {

/// What the kernel must leave in a destination word it does not write.
inline constexpr std::uint32_t kSentinel = 0xa5a5a5a5u;

/// rows x cols random bits (density p) in rows of ld words, every bit past `cols` set (never read).
inline std::vector<std::uint32_t> random_words(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols,
                                               std::int64_t ld, double p) {
  std::bernoulli_distribution bit(p);
  std::vector<std::uint32_t> w(static_cast<std::size_t>(rows * ld), ~0u);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      if (!bit(rng)) w[i * ld + j / 32] &= ~(1u << (j % 32));
    }
  }
  return w;
}

/// The transpose (cols rows of ldd words, ORed with the identity where `identity`) of src, bit by bit: words
/// past bits_words(rows) kSentinel; adds its set bits to *pairs.
inline std::vector<std::uint32_t> transposed(const std::vector<std::uint32_t>& src, std::int64_t rows,
                                             std::int64_t cols, std::int64_t lds, std::int64_t ldd, bool identity,
                                             std::uint64_t* pairs) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(cols * ldd), kSentinel);
  for (std::int64_t j = 0; j < cols; ++j) {
    for (std::int64_t v = 0; v < bits_words(rows); ++v) {
      std::uint32_t word = 0;
      for (std::int64_t i = 32 * v; i < std::min(32 * v + 32, rows); ++i) {
        if (((src[i * lds + j / 32] >> (j % 32)) & 1u) != 0 || (identity && i == j)) word |= 1u << (i % 32);
      }
      out[j * ldd + v] = word;
      *pairs += static_cast<std::uint64_t>(__builtin_popcount(word));
    }
  }
  return out;
}

}  // namespace tropical::bits_transpose_test
