#pragma once

// The closure's repeated squaring on packed words (tropical/bits.hpp), written once over two steps so that the
// GPU (src/bits_gemm.cpp) and the emulated kernels (tests/emulation/) run the same loop.

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace tropical::detail {

/// The reflexive-transitive closure of the n x n packed matrix `words` (rows ld words apart; n is the steps'),
/// written back there (words 0 .. bits_words(n) - 1 of each row, bits past n zero); returns the squarings, the
/// last one the square that changed nothing. x, xt and y: three n x n workspaces, rows lx words apart. The steps:
/// transpose(src, lds, dst, ldd, identity, counted) writes dst = src^T (ORed with I where identity), bits past n
/// zero, and returns dst's set bits where counted (else anything); square(x, xt, y) writes y = x x, given xt = x^T
/// (the product's B^T). Reachability only grows from I or A, so a square with as many pairs as its operand is
/// the closure: one product and one transpose a squaring, and one count read. Each square doubles the path
/// lengths covered, so kMaxSquarings cover any n below 2^63: a loop past them (steps that disagree) throws
/// std::logic_error rather than wait on.
inline constexpr std::int64_t kMaxSquarings = 64;

template <class Transpose, class Square>
std::int64_t closure_by_squaring(std::uint32_t* words, std::int64_t ld, std::uint32_t* x,
                                 std::uint32_t* xt, std::uint32_t* y, std::int64_t lx, Transpose&& transpose,
                                 Square&& square) {
  // X^T = (I or A)^T straight from the caller's words (their padding never read), then X from it.
  std::int64_t reached = transpose(words, ld, xt, lx, true, true);
  transpose(xt, lx, x, lx, false, false);
  std::int64_t iterations = 0;
  for (;;) {
    square(x, xt, y);
    ++iterations;
    // Y^T: the next square's B^T (xt is free once Y is written), and Y's pairs.
    const std::int64_t pairs = transpose(y, lx, xt, lx, false, true);
    std::swap(x, y);
    if (pairs == reached) break;
    if (iterations == kMaxSquarings) throw std::logic_error("tropical: the closure's squares kept growing");
    reached = pairs;
  }
  transpose(xt, lx, words, ld, false, false);
  return iterations;
}

}  // namespace tropical::detail
