// Host packing of boolean matrices into the bit layout of tropical/cpu/bits.hpp,
// unpacking, and the transpose that turns B packed by rows into B^T packed by rows.

#include "tropical/cpu/bits.hpp"

#include <algorithm>
#include <cstring>

#include "bits_checks.hpp"
#include "tropical/error.hpp"

namespace tropical {

using detail::check_extent;
using detail::check_ld;
using detail::check_pointer;
using detail::check_size;

void pack_bits(std::int64_t rows, std::int64_t k, const std::uint8_t* a, std::int64_t lda,
               std::uint32_t* words, std::int64_t ldw) {
  check_size("rows", rows);
  check_size("k", k);
  check_ld("lda", lda, k);
  check_ld("ldw", ldw, bits_words(k));
  check_extent("a", rows, lda, k);
  check_extent("words", rows, ldw, bits_words(k));
  check_pointer("a", a, rows == 0 || k == 0);
  check_pointer("words", words, rows == 0);
  const std::int64_t used = bits_words(k), zeroed = std::min(ldw, bits_ld(k));
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::uint8_t* row = a + i * lda;
    std::uint32_t* out = words + i * ldw;
    for (std::int64_t w = 0; w < used; ++w) {
      const std::int64_t base = w * 32, bits = std::min<std::int64_t>(32, k - base);
      std::uint32_t word = 0;
      for (std::int64_t b = 0; b < bits; ++b) word |= static_cast<std::uint32_t>(row[base + b] != 0) << b;
      out[w] = word;
    }
    if (zeroed > used)
      std::memset(out + used, 0, static_cast<std::size_t>(zeroed - used) * sizeof(std::uint32_t));
  }
}

void unpack_bits(std::int64_t rows, std::int64_t k, const std::uint32_t* words, std::int64_t ldw,
                 std::uint8_t* a, std::int64_t lda) {
  check_size("rows", rows);
  check_size("k", k);
  check_ld("ldw", ldw, bits_words(k));
  check_ld("lda", lda, k);
  check_extent("words", rows, ldw, bits_words(k));
  check_extent("a", rows, lda, k);
  check_pointer("words", words, rows == 0 || k == 0);
  check_pointer("a", a, rows == 0 || k == 0);
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::uint32_t* in = words + i * ldw;
    std::uint8_t* row = a + i * lda;
    for (std::int64_t j = 0; j < k; ++j) row[j] = static_cast<std::uint8_t>((in[j / 32] >> (j % 32)) & 1u);
  }
}

void transpose_bits(std::int64_t rows, std::int64_t cols, const std::uint32_t* in, std::int64_t ldin,
                    std::uint32_t* out, std::int64_t ldout) {
  check_size("rows", rows);
  check_size("cols", cols);
  check_ld("ldin", ldin, bits_words(cols));
  check_ld("ldout", ldout, bits_words(rows));
  check_extent("in", rows, ldin, bits_words(cols));
  check_extent("out", cols, ldout, bits_words(rows));
  check_pointer("in", in, rows == 0 || cols == 0);
  check_pointer("out", out, rows == 0 || cols == 0);
  if (in == out && rows > 0 && cols > 0)
    throw InvalidArgument("tropical: transpose_bits: out is in (not in place)");
  const std::int64_t out_words = bits_words(rows);
  for (std::int64_t j = 0; j < cols; ++j) {
    std::memset(out + j * ldout, 0, static_cast<std::size_t>(out_words) * sizeof(std::uint32_t));
  }
  // Row by row, walking only the set bits: sparse adjacency matrices cost their edges.
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::uint32_t* row = in + i * ldin;
    const std::uint32_t bit = 1u << (i % 32);
    for (std::int64_t w = 0; w < bits_words(cols); ++w) {
      std::uint32_t word = row[w];
      if (w == bits_words(cols) - 1 && cols % 32 != 0) word &= (1u << (cols % 32)) - 1u;
      while (word != 0) {
        const int b = __builtin_ctz(word);
        word &= word - 1;
        out[(w * 32 + b) * ldout + i / 32] |= bit;
      }
    }
  }
}

}  // namespace tropical
