#pragma once

// The argument checks of the bit-packed operations (tropical/bits.hpp), shared by
// the host pack/unpack, the CPU backend and the GPU launchers: every one throws
// InvalidArgument naming the argument before anything is written.

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

#include "spans.hpp"
#include "tropical/cpu/bits.hpp"

namespace tropical::detail {

/// Throws unless value >= 0.
inline void check_size(const char* name, std::int64_t value) {
  if (value < 0)
    invalid(std::string(name) + " = " + std::to_string(value) + " is negative");
}

/// Throws unless ld >= at_least (and ld >= 1).
inline void check_ld(const char* name, std::int64_t ld, std::int64_t at_least) {
  if (ld < at_least || ld < 1) {
    invalid(std::string(name) + " = " + std::to_string(ld) +
                          " is smaller than " + std::to_string(at_least < 1 ? 1 : at_least));
  }
}

/// Throws if p is null while the operand it points to is not empty.
inline void check_pointer(const char* name, const void* p, bool empty) {
  if (p == nullptr && !empty) invalid(std::string(name) + " is null");
}

/// The elements spanned by `rows` rows of `ld` (the last one `last` long); throws if that overflows.
inline std::int64_t check_extent(const char* name, std::int64_t rows, std::int64_t ld, std::int64_t last) {
  if (rows == 0 || last == 0) return 0;
  if (rows - 1 > (std::numeric_limits<std::int64_t>::max() - last) / ld) {
    invalid(std::string(name) + ": its size overflows 64 bits");
  }
  return (rows - 1) * ld + last;
}

/// Bytes of one element of C in the given output form; throws on an unknown form.
inline std::int64_t bits_output_bytes(BitsOutput output) {
  switch (output) {
    case BitsOutput::kBits:
      return 4;
    case BitsOutput::kBytes:
      return 1;
    case BitsOutput::kCounts:
      return 4;
  }
  invalid("output = " + std::to_string(static_cast<int>(output)) +
                        " is not one of bits (0), bytes (1), counts (2)");
}

/// C's elements per row in the given output form (n bits are bits_words(n) words).
inline std::int64_t bits_output_cols(BitsOutput output, std::int64_t n) {
  return output == BitsOutput::kBits ? bits_words(n) : n;
}

/// A batched packed product's shape, checked: sizes, leading dimensions, pointers, strides
/// (an output stride must keep the products apart). Returns false where there is nothing to do.
inline bool check_bits_product(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k,
                               const void* a, std::int64_t lda, std::int64_t stride_a, const void* bt,
                               std::int64_t ldb, std::int64_t stride_b, const void* c, std::int64_t ldc,
                               std::int64_t stride_c, std::int64_t batch) {
  bits_output_bytes(output);
  check_size("m", m);
  check_size("n", n);
  check_size("k", k);
  check_size("batch", batch);
  check_ld("lda", lda, bits_words(k));
  check_ld("ldb", ldb, bits_words(k));
  const std::int64_t cols = bits_output_cols(output, n);
  check_ld("ldc", ldc, cols);
  if (output == BitsOutput::kCounts && k > std::numeric_limits<std::int32_t>::max()) {
    invalid("k = " + std::to_string(k) + ": witness counts need k < 2^31");
  }
  const std::int64_t ea = check_extent("A", m, lda, bits_words(k));
  const std::int64_t eb = check_extent("B", n, ldb, bits_words(k));
  const std::int64_t ec = check_extent("C", m, ldc, cols);
  const bool empty = m == 0 || n == 0 || batch == 0;
  check_pointer("c", c, empty);
  check_pointer("a", a, empty || k == 0);
  check_pointer("bt", bt, empty || k == 0);
  if (stride_a < 0 || stride_b < 0)
    invalid("stride_a and stride_b must not be negative");
  if (batch > 1 && stride_c < ec) {
    invalid("stride_c = " + std::to_string(stride_c) + " would overlap products of " +
                          std::to_string(ec) + " elements");
  }
  for (const auto& [name, stride, extent] :
       {std::tuple{"A", stride_a, ea}, std::tuple{"B", stride_b, eb}, std::tuple{"C", stride_c, ec}}) {
    if (batch > 1 && stride > 0 && batch - 1 > (std::numeric_limits<std::int64_t>::max() - extent) / stride) {
      invalid(std::string(name) + ": the batch's size overflows 64 bits");
    }
  }
  return !empty;
}

}  // namespace tropical::detail
