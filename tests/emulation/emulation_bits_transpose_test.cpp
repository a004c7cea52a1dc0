// The packed transpose kernel (templates/bits_transpose.cu.j2) on the CPU, launched on src/bits_transpose.cpp's
// grid (and on smaller ones: the kernel loops), against a loop over the bits: odd shapes, padded rows whose
// padding bits are set (never read), the identity ORed in, the pairs counted, the destination's padding words
// untouched. Then the closure's loop (src/bits_closure.hpp) over the emulated transpose and packed product, as
// the GPU runs it, against the CPU backend's closure: the same words and the same number of squarings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "../../src/bits_closure.hpp"
#include "../../src/bits_transpose.hpp"
#include "bits_transpose_cases.hpp"
#include "launch_kernel.hpp"
#include "tropical/bits.hpp"

namespace tropical {
namespace {

using bits_transpose_test::kSentinel;
using bits_transpose_test::random_words;

/// Runs the emulated kernel on a grid of the launch's blocks / shrink; returns the count it adds to 0.
std::uint64_t transpose(std::int64_t rows, std::int64_t cols, const std::uint32_t* src, std::int64_t lds,
                        std::uint32_t* dst, std::int64_t ldd, bool identity, std::int64_t shrink = 1) {
  const detail::Grid g = detail::bits_transpose_grid(rows, cols);
  const emulation::Dim3 grid{std::max(1u, g.x / static_cast<unsigned>(shrink)), 1, 1};
  unsigned long long count = 0;
  catalog::BitsTransposeArgs args{.src = src, .dst = dst, .count = &count, .rows = rows, .cols = cols, .lds = lds,
                                  .ldd = ldd, .identity = identity ? 1 : 0};
  emulation::launch_kernel(emulation::id_of("tropical_bits_transpose_b32"), "tuned", {1, 1, 0, 1}, args, &grid);
  return count;
}

struct Shape {
  std::int64_t rows, cols, pad_src, pad_dst;
  double p;
};

TEST(EmulatedBitsTranspose, equals_the_bitwise_transpose_with_and_without_the_identity) {
  std::mt19937_64 rng(11);
  for (const Shape& s : {Shape{1, 1, 0, 0, 0.5}, Shape{33, 70, 1, 2, 0.5}, Shape{300, 257, 3, 0, 0.1},
                         Shape{513, 40, 0, 5, 0.3}, Shape{40, 513, 7, 1, 0.3}, Shape{256, 256, 0, 0, 0.02},
                         Shape{257, 31, 2, 3, 0.6}, Shape{600, 600, 0, 0, 0.01}}) {
    const std::int64_t lds = bits_words(s.cols) + s.pad_src, ldd = bits_words(s.rows) + s.pad_dst;
    const auto src = random_words(rng, s.rows, s.cols, lds, s.p);
    for (const bool identity : {false, true}) {
      std::uint64_t pairs = 0;
      const auto want = bits_transpose_test::transposed(src, s.rows, s.cols, lds, ldd, identity, &pairs);
      for (const std::int64_t shrink : {1, 3}) {
        std::vector<std::uint32_t> got(want.size(), kSentinel);
        const std::uint64_t count = transpose(s.rows, s.cols, src.data(), lds, got.data(), ldd, identity, shrink);
        EXPECT_EQ(got, want) << s.rows << " x " << s.cols << " identity " << identity << " shrink " << shrink;
        EXPECT_EQ(count, pairs) << s.rows << " x " << s.cols << " identity " << identity << " shrink " << shrink;
      }
    }
  }
}

TEST(BitsTransposeLaunch, a_block_a_tile_of_256_rows_by_8_words) {
  using detail::bits_transpose_grid;
  using detail::bits_transpose_tiles;
  EXPECT_EQ(catalog::BitsTransposeGeometry::kTileM, 256);
  EXPECT_EQ(catalog::BitsTransposeGeometry::kTileN, 8);
  EXPECT_EQ(bits_transpose_tiles(0, 5), 0);
  EXPECT_EQ(bits_transpose_tiles(5, 0), 0);
  EXPECT_EQ(bits_transpose_grid(0, 5).x, 0u);
  EXPECT_EQ(bits_transpose_tiles(1, 1), 1);
  EXPECT_EQ(bits_transpose_tiles(256, 256), 1);
  EXPECT_EQ(bits_transpose_tiles(257, 256), 2);
  EXPECT_EQ(bits_transpose_tiles(256, 257), 2);  // 9 words: two word tiles
  EXPECT_EQ(bits_transpose_tiles(65536, 65536), 256 * 256);
  EXPECT_EQ(bits_transpose_tiles(600, 70), 3);
  EXPECT_EQ(bits_transpose_grid(65536, 65536).x, 65536u);
  // Past a grid's 2^31 - 1 blocks the grid stops there (the kernel loops); past 2^63 tiles the count saturates.
  EXPECT_EQ(bits_transpose_tiles(std::int64_t{1} << 30, std::int64_t{1} << 30), std::int64_t{1} << 44);
  EXPECT_EQ(bits_transpose_grid(std::int64_t{1} << 30, std::int64_t{1} << 30).x, 0x7fffffffu);
  EXPECT_EQ(bits_transpose_tiles(std::int64_t{1} << 40, std::int64_t{1} << 40), INT64_MAX);
  EXPECT_EQ(bits_transpose_tiles(INT64_MAX, INT64_MAX), INT64_MAX);
  EXPECT_EQ(bits_transpose_grid(INT64_MAX, INT64_MAX).y, 1u);
}

/// The closure as src/bits_gemm.cpp runs it, on the emulated kernels (the product's tier alternating).
std::int64_t emulated_closure(std::int64_t n, std::uint32_t* words, std::int64_t ld) {
  const std::int64_t lx = bits_ld(n);
  std::vector<std::uint32_t> x(static_cast<std::size_t>(n * lx), kSentinel), xt(x), y(x);
  int squares = 0;
  const auto step_transpose = [&](const std::uint32_t* src, std::int64_t lds, std::uint32_t* dst, std::int64_t ldd,
                                  bool identity, bool) {
    return static_cast<std::int64_t>(transpose(n, n, src, lds, dst, ldd, identity));
  };
  const auto square = [&](const std::uint32_t* a, const std::uint32_t* at, std::uint32_t* c) {
    long long m = n, lda = lx;
    catalog::BitsArgs args{.a = a, .bt = at, .c = c, .m = m, .n = m, .kk = m, .lda = lda, .ldb = lda, .ldc = lda,
                           .output = static_cast<int>(BitsOutput::kBits), .stride_a = 0, .stride_b = 0,
                           .stride_c = 0, .batch = 1};
    emulation::launch_kernel(emulation::id_of("tropical_gemm_bits_b32"), squares++ % 2 == 0 ? "tuned" : "quick",
                             {m, m, m, 1}, args);
  };
  return detail::closure_by_squaring(words, ld, x.data(), xt.data(), y.data(), lx, step_transpose, square);
}

TEST(EmulatedBitsClosure, equals_the_cpu_closure_words_and_squarings) {
  std::mt19937_64 rng(12);
  for (const auto& [n, degree, pad] : std::vector<std::tuple<std::int64_t, double, std::int64_t>>{
           {1, 0.0, 0}, {2, 1.0, 1}, {33, 1.5, 0}, {300, 1.2, 3}, {520, 1.1, 0}, {257, 0.0, 1}}) {
    const std::int64_t ld = bits_words(n) + pad;
    auto want = random_words(rng, n, n, ld, degree / static_cast<double>(n));
    auto got = want;
    const std::int64_t cpu_iterations = cpu::bits_closure(n, want.data(), ld);
    const std::int64_t iterations = emulated_closure(n, got.data(), ld);
    EXPECT_EQ(got, want) << "n = " << n;
    EXPECT_EQ(iterations, cpu_iterations) << "n = " << n;
  }
}

TEST(BitsClosureLoop, stops_after_the_most_squarings_any_n_needs) {
  // Steps whose counts never settle (a step's bug) end the loop with an error, not an endless wait.
  std::uint32_t w[8] = {};
  std::int64_t counted = 0, squares = 0;
  const auto growing = [&](const std::uint32_t*, std::int64_t, std::uint32_t*, std::int64_t, bool, bool) {
    return ++counted;
  };
  const auto square = [&](const std::uint32_t*, const std::uint32_t*, std::uint32_t*) { ++squares; };
  EXPECT_THROW(detail::closure_by_squaring(w, 8, w, w, w, 8, growing, square), std::logic_error);
  EXPECT_EQ(squares, detail::kMaxSquarings);
}

}  // namespace
}  // namespace tropical
