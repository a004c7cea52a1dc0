// The packed AndOr kernel's two tiers on the CPU build of their fragments (tests/emulation/): the tuned
// tile's binary mma through the scalar model of mma.sync m16n8k256 .b1 .and.popc (device_functions.inc) and
// the quick tile's and + popc, against the CPU backend's packed product (itself checked against the byte-wise
// reference by tests/cpu/bits_test.cpp), bit for bit: every output form, odd sizes, padding ones past k,
// leading dimensions that do and do not allow 128-bit loads, a batch. Also the tuned tier on the other candidate
// tiles that tests/emulation/meson.build builds (bits_tiles.h: the pipelined fragments), on their own grids, as
// witness counts; and the wgmma kernel (templates/bits_wgmma.cu.j2, through the scalar models of wgmma and the
// mbarriers in device_functions.inc) on the library's grid for it, every output form, with the operands' rows
// repacked 16-byte aligned (its launcher's condition).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../../src/bits_wgmma.hpp"
#include "bits_tiles.h"
#include "launch_kernel.hpp"
#include "tropical/bits.hpp"

namespace tropical {
namespace {

/// rows x k random bits (density p) packed with leading dimension ld, the padding bits all ones (never read).
std::vector<std::uint32_t> random_words(std::mt19937_64& rng, std::int64_t rows, std::int64_t k,
                                        std::int64_t ld, double p, std::int64_t batch) {
  std::bernoulli_distribution bit(p);
  std::vector<std::uint32_t> w(static_cast<std::size_t>(batch * rows * ld + 4), ~0u);
  for (std::int64_t r = 0; r < batch * rows; ++r) {
    for (std::int64_t j = 0; j < bits_words(k) * 32; ++j) {
      if (j < k && !bit(rng)) w[r * ld + j / 32] &= ~(1u << (j % 32));
    }
  }
  return w;
}

/// A kernel to run: the catalog's tier `name` (tile_m 0), or candidate tile kernel `name` of tile_m x tile_n and
/// `threads` threads a block.
struct Run {
  const char* name;
  int tile_m, tile_n, threads;
};

std::vector<Run> runs() {
  std::vector<Run> all{{"tuned", 0, 0, 0}, {"quick", 0, 0, 0}};
#define TROPICAL_EMU_BITS_TILE(name, tile_m, tile_n, threads) all.push_back({#name, tile_m, tile_n, threads});
  TROPICAL_EMU_BITS_TILES(TROPICAL_EMU_BITS_TILE)
#undef TROPICAL_EMU_BITS_TILE
  return all;
}

/// `rows` rows of `words` packed ld apart, repacked ld4 apart (a multiple of 4 words), the new padding all ones.
std::vector<std::uint32_t> repack(const std::vector<std::uint32_t>& w, std::int64_t rows, std::int64_t ld,
                                  std::int64_t ld4) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(rows * ld4 + 4), ~0u);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < ld; ++j) out[r * ld4 + j] = w[r * ld + j];
  }
  return out;
}

/// The wgmma kernel's C of the product (the operands repacked, rows a multiple of 4 words apart) on its grid.
std::vector<unsigned char> wgmma_product(const catalog::BitsArgs& args, std::size_t bytes) {
  const long long ld4a = (args.lda + 3) / 4 * 4, ld4b = (args.ldb + 3) / 4 * 4;
  const auto a = repack(std::vector<std::uint32_t>(args.a, args.a + args.batch * args.m * args.lda),
                        args.batch * args.m, args.lda, ld4a);
  const auto b = repack(std::vector<std::uint32_t>(args.bt, args.bt + args.batch * args.n * args.ldb),
                        args.batch * args.n, args.ldb, ld4b);
  std::vector<unsigned char> got(bytes + 4, 0x5a);
  catalog::BitsWgmmaArgs wargs{.a = a.data(), .bt = b.data(), .c = got.data(), .m = args.m, .n = args.n,
                               .kk = args.kk, .lda = ld4a, .ldb = ld4b, .ldc = args.ldc, .output = args.output,
                               .stride_a = args.m * ld4a, .stride_b = args.n * ld4b, .stride_c = args.stride_c,
                               .batch = args.batch};
  catalog::BitsArgs fits = args;
  fits.a = a.data(), fits.bt = b.data(), fits.lda = ld4a, fits.ldb = ld4b, fits.stride_a = wargs.stride_a;
  fits.stride_b = wargs.stride_b;
  EXPECT_EQ(detail::bits_wgmma_fits(fits), args.kk > 0) << "the launcher would not take the wgmma kernel";
  const detail::Grid g = detail::bits_wgmma_grid(args.m, args.n, args.batch);
  const emulation::Dim3 grid{g.x, g.y, g.z};
  emulation::launch_kernel(catalog::KernelId::kBitsWgmmaB32, "tuned", {args.m, args.n, args.kk, args.batch}, wargs,
                           &grid);
  return got;
}

void check(std::int64_t m_, std::int64_t n_, std::int64_t k_, std::int64_t batch_, std::int64_t pad, double p,
           std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  long long m = m_, n = n_, k = k_, batch = batch_, lda = bits_words(k) + pad, ldb = bits_words(k) + pad;
  const auto a = random_words(rng, m, k, lda, p, batch), b = random_words(rng, n, k, ldb, p, batch);
  long long sa = m * lda, sb = n * ldb;
  const auto id = emulation::id_of("tropical_gemm_bits_b32");
  for (const int output : {0, 1, 2}) {
    long long ldc = output == 0 ? bits_words(n) + 1 : n + 3, sc = m * ldc;
    const std::size_t bytes = static_cast<std::size_t>(batch * sc) * (output == 1 ? 1 : 4);
    std::vector<unsigned char> want(bytes + 4, 0x5a);
    cpu::bits_gemm_batched(static_cast<BitsOutput>(output), m, n, k, a.data(), lda, sa, b.data(), ldb, sb,
                           want.data(), ldc, sc, batch);
    for (const Run& run : runs()) {
      // A candidate tile differs from the catalog's in its main loop alone: its exact counts check that (the
      // epilogues are the catalog tile's, checked in every form), at a third of the emulation's time.
      if (run.tile_m != 0 && output != 2) continue;
      std::vector<unsigned char> got(bytes + 4, 0x5a);
      catalog::BitsArgs args{.a = a.data(), .bt = b.data(), .c = got.data(), .m = m, .n = n, .kk = k, .lda = lda,
                             .ldb = ldb, .ldc = ldc, .output = output, .stride_a = sa, .stride_b = sb,
                             .stride_c = sc, .batch = batch};
      if (run.tile_m == 0) {
        emulation::launch_kernel(id, run.name, {m, n, k, batch}, args);
      } else {
        // The library's grid (src/launch.cpp) of this tile: one block per tile of C, grid z the batch.
        const emulation::Entry entry = emulation::find_kernel(run.name, "tuned");
        ASSERT_NE(entry, nullptr) << run.name << " is not built for the CPU";
        auto pointers = args.pointers();
        const auto blocks = [](long long x, int tile) { return static_cast<unsigned>((x + tile - 1) / tile); };
        emulation::launch(entry, pointers.data(),
                          {blocks(n, run.tile_n), blocks(m, run.tile_m), static_cast<unsigned>(batch)},
                          {static_cast<unsigned>(run.threads), 1, 1});
      }
      EXPECT_EQ(got, want) << run.name << " output " << output << " " << m << "x" << n << "x" << k << " batch "
                           << batch << " pad " << pad;
    }
    catalog::BitsArgs args{.a = a.data(), .bt = b.data(), .c = nullptr, .m = m, .n = n, .kk = k, .lda = lda,
                           .ldb = ldb, .ldc = ldc, .output = output, .stride_a = sa, .stride_b = sb,
                           .stride_c = sc, .batch = batch};
    EXPECT_EQ(wgmma_product(args, bytes), want) << "wgmma output " << output << " " << m << "x" << n << "x" << k
                                                << " batch " << batch << " pad " << pad;
  }
}

TEST(Bits, both_tiers_and_the_candidate_tiles_equal_the_cpu_backend) {
  check(1, 1, 1, 1, 0, 0.5, 1);
  check(17, 33, 31, 1, 0, 0.5, 2);       // one word, unaligned rows
  check(130, 129, 300, 1, 4, 0.1, 3);    // tiles cut at m and n, k past a stage, 128-bit loads
  check(70, 200, 513, 2, 3, 0.02, 4);    // a batch, two tiles along n, sparse
  check(20, 40, 0, 1, 1, 0.5, 5);        // k = 0: all false
  check(40, 130, 3000, 2, 0, 0.002, 6);  // six stages around the ring of three, 128-bit copies, a batch
  check(33, 70, 2500, 1, 1, 0.003, 7);   // five stages, words loaded one by one
  check(600, 530, 100, 1, 0, 0.05, 8);   // several block rows and columns, taken in raster groups
  // A block inside m and n with whole stages copied unchecked (the tuned tiles are at most 256 x 256 and
  // their stages at most 2048 bits): stages before the row's cut last word, then the cut one; and k of whole
  // words past the ring's end, a batch, C's rows even (paired count stores) and odd.
  check(260, 260, 4700, 1, 1, 0.05, 9);
  check(257, 259, 5120, 2, 0, 0.01, 10);
  // k of whole 1024-bit stages but a cut last word: the wgmma kernel masks it in a stage it copied unchecked.
  check(259, 261, 1019, 1, 2, 0.05, 11);
}

TEST(Bits, the_launcher_takes_the_wgmma_kernel_for_16_byte_rows_of_a_nonempty_product_alone) {
  alignas(16) static std::uint32_t words[64] = {};
  const catalog::BitsArgs fits{.a = words, .bt = words + 4, .c = nullptr, .m = 300, .n = 5, .kk = 100, .lda = 4,
                               .ldb = 8, .ldc = 1, .output = 0, .stride_a = 0, .stride_b = 12, .stride_c = 0,
                               .batch = 3};
  EXPECT_TRUE(detail::bits_wgmma_fits(fits));
  const auto without = [&](auto change) {
    catalog::BitsArgs args = fits;
    change(args);
    return detail::bits_wgmma_fits(args);
  };
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.lda = 5; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.ldb = 6; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.stride_a = 2; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.stride_b = 1; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.a = words + 1; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.bt = words + 2; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.kk = 0; }));
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.m = 0; }));
  // More tiles than one grid dimension holds.
  EXPECT_FALSE(without([](catalog::BitsArgs& a) { a.m = a.n = std::int64_t{1} << 30; }));
  const detail::Grid grid = detail::bits_wgmma_grid(300, 257, 70000);
  EXPECT_EQ(grid.x, 3u * 2u);
  EXPECT_EQ(grid.z, 65535u);
}

}  // namespace
}  // namespace tropical
