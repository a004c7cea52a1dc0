// The permute kernels (templates/permute.cu.j2) on the CPU, launched as src/permute.cpp launches them (its axis
// merging and order, its grid), against a host loop: random ranks, shapes, permutations and strides (padded,
// broadcast, sizes off the tiles' edges), every element width, and grids smaller than the work (the kernel loops).
// Also the host half alone: what it merges, when it tiles, what it rejects.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "launch_kernel.hpp"
#include "permute_cases.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using detail::PermuteLaunch;
using detail::PermuteMode;
using detail::StridedCopy;
using emulation::Dim3;
using permute_test::Case;

/// Runs `c` on the emulated kernel of T's width (grid: permute_blocks() / shrink blocks) and checks every element
/// of the destination against the host loop (elements outside the copy keep their sentinel).
template <class T>
void check(const Case& c, const char* kernel, std::mt19937_64& rng, std::int64_t shrink = 1) {
  std::vector<T> src(static_cast<std::size_t>(c.src_elements));
  for (T& x : src) x = static_cast<T>(rng());
  std::vector<T> want(static_cast<std::size_t>(c.dst_elements), static_cast<T>(0x5a)), got = want;
  permute_test::copy_on_host(src.data(), want.data(), c.copy);
  const PermuteLaunch launch = detail::permute_launch(c.copy);
  ASSERT_GT(launch.elements, 0) << c.what;
  const std::int64_t blocks = detail::permute_blocks(launch, sizeof(T));
  const Dim3 grid{static_cast<unsigned>(std::max<std::int64_t>(1, blocks / shrink)), 1, 1};
  if (launch.mode == PermuteMode::kBoxed) {  // the boxed mode's kernel of the same width
    const std::string boxed = "tropical_permute_boxed_" + std::string(kernel).substr(std::string("tropical_permute_").size());
    catalog::PermuteBoxedArgs args{.src = src.data(), .dst = got.data(), .copy = launch.copy};
    emulation::launch_kernel(emulation::id_of(boxed.c_str()), "tuned", {1, 1, 0, 1}, args, &grid);
  } else {
    catalog::PermuteArgs args{.src = src.data(), .dst = got.data(), .copy = launch.copy, .mode = static_cast<int>(launch.mode)};
    emulation::launch_kernel(emulation::id_of(kernel), "tuned", {1, 1, 0, 1}, args, &grid);
  }
  ASSERT_EQ(got, want) << kernel << " " << c.what << " (mode " << static_cast<int>(launch.mode) << ")";
}

template <class T>
void check_random(const char* kernel, std::uint64_t seed, int cases) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < cases; ++i) {
    const Case c = permute_test::random_case(rng, 6, 6000);
    check<T>(c, kernel, rng, i % 3 == 0 ? 3 : 1);
  }
}

TEST(EmulatedPermute, random_copies_of_1_byte_match_the_host_loop) {
  check_random<std::uint8_t>("tropical_permute_u8", 1, 25);
}
TEST(EmulatedPermute, random_copies_of_2_bytes_match_the_host_loop) {
  check_random<std::int16_t>("tropical_permute_i16", 2, 25);
}
TEST(EmulatedPermute, random_copies_of_4_bytes_match_the_host_loop) {
  check_random<std::int32_t>("tropical_permute_i32", 3, 60);
}
TEST(EmulatedPermute, random_copies_of_8_bytes_match_the_host_loop) {
  check_random<std::int64_t>("tropical_permute_i64", 4, 25);
}

TEST(EmulatedPermute, random_copies_of_many_short_axes_match_the_host_loop) {
  // Up to 20 axes, most of them 1-5 long once the element count is capped: the boxed mode's ground.
  std::mt19937_64 rng(6);
  for (int i = 0; i < 40; ++i) {
    const Case c = permute_test::random_case(rng, 20, 20000);
    if (i % 2 == 0) check<std::int32_t>(c, "tropical_permute_i32", rng, i % 3 == 0 ? 5 : 1);
    else check<std::int64_t>(c, "tropical_permute_i64", rng, i % 3 == 0 ? 5 : 1);
    check<std::uint8_t>(c, "tropical_permute_u8", rng);
    check<std::int16_t>(c, "tropical_permute_i16", rng, 2);
  }
}

TEST(EmulatedPermute, sixteen_axes_of_two_shuffled_run_boxed_and_match_the_host_loop) {
  std::vector<int> perm(16);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4; ++round) {
    std::shuffle(perm.begin(), perm.end(), rng);
    const Case c = permute_test::permuted(std::vector<std::int64_t>(16, 2), perm);
    const PermuteLaunch l = detail::permute_launch(c.copy);
    if (perm.back() != 15) {  // the fastest axis moved: no run of two axes on both sides
      EXPECT_EQ(l.mode, PermuteMode::kBoxed) << c.what;
      std::int64_t box = 1;
      for (int a = 0; a < l.copy.inner; ++a) box *= l.copy.size[a];
      EXPECT_LE(box, catalog::PermuteBoxedGeometry::kBoxPerThread * catalog::PermuteBoxedGeometry::kBlockX *
                         catalog::PermuteBoxedGeometry::kBlockY);
      EXPECT_GE(box, 256) << c.what;
    }
    check<float>(c, "tropical_permute_i32", rng, round + 1);
    check<double>(c, "tropical_permute_i64", rng, 7);
  }
}

TEST(EmulatedPermute, transposes_off_the_tile_edges_and_long_rows_match_the_host_loop) {
  std::mt19937_64 rng(5);
  for (const Case& c : {permute_test::permuted({130, 67}, {1, 0}), permute_test::permuted({64, 64}, {1, 0}),
                        permute_test::permuted({1, 3000}, {1, 0}), permute_test::permuted({3, 2500}, {0, 1}),
                        permute_test::permuted({5, 129, 70}, {2, 1, 0}),
                        permute_test::permuted({3, 70, 129}, {0, 2, 1}), permute_test::permuted({7, 2, 300}, {1, 0, 2}),
                        permute_test::permuted({2, 2, 2, 2, 2, 2, 2, 2}, {7, 0, 6, 1, 5, 2, 4, 3})}) {
    check<float>(c, "tropical_permute_i32", rng);
    check<double>(c, "tropical_permute_i64", rng, 2);
  }
}

TEST(PermuteLaunch, merges_axes_contiguous_on_both_sides_and_tiles_only_a_moved_fastest_axis) {
  // A contiguous copy of any shape is one run of plain copy.
  PermuteLaunch l = detail::permute_launch(permute_test::permuted({4, 5, 6}, {0, 1, 2}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kPlain);
  EXPECT_EQ(l.copy.rank, 1);
  EXPECT_EQ(l.copy.size[0], 120);
  // (a, b, c) -> (c, a, b): a and b stay adjacent and merge; a 2-D transpose of 20 x 60, tiled.
  l = detail::permute_launch(permute_test::permuted({4, 5, 60}, {2, 0, 1}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kTiled);
  EXPECT_EQ(l.copy.rank, 2);
  EXPECT_EQ(l.copy.size[0], 60);  // the source's fastest
  EXPECT_EQ(l.copy.src_stride[0], 1);
  EXPECT_EQ(l.copy.size[1], 20);  // the destination's fastest
  EXPECT_EQ(l.copy.dst_stride[1], 1);
  // The same with an axis shorter than kMinTiledAxis: a box of both, in the threads' order the destination's run
  // (8, then 2 of the 60 to reach 16), then the rest of the 60.
  l = detail::permute_launch(permute_test::permuted({4, 2, 60}, {2, 0, 1}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kBoxed);
  EXPECT_EQ(l.copy.inner, 3);
  EXPECT_EQ(l.copy.size[0], 8);
  EXPECT_EQ(l.copy.dst_stride[0], 1);
  EXPECT_EQ(l.copy.size[1], 2);
  EXPECT_EQ(l.copy.src_stride[1], 1);
  EXPECT_EQ(l.copy.dst_stride[1], 8);
  EXPECT_EQ(l.copy.size[2], 30);
  EXPECT_EQ(l.copy.src_stride[2], 2);
  // A long axis under short ones: split, its inner part in the box (4096 = 512 x 8 after the 8 x 2 x ... taken).
  l = detail::permute_launch(permute_test::permuted({2, 2, 4096, 2}, {3, 2, 0, 1}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kBoxed);
  std::int64_t box = 1;
  for (int a = 0; a < l.copy.inner; ++a) box *= l.copy.size[a];
  EXPECT_EQ(box, catalog::PermuteBoxedGeometry::kBoxPerThread * catalog::PermuteBoxedGeometry::kBlockX *
                     catalog::PermuteBoxedGeometry::kBlockY);
  EXPECT_EQ(l.copy.rank, l.copy.inner + 1);  // the 4096's outer part
  // (a, b, c) -> (b, a, c): c is fastest on both sides: plain, rows of c (long enough to fill a block).
  l = detail::permute_launch(permute_test::permuted({40, 50, 600}, {1, 0, 2}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kPlain);
  EXPECT_EQ(l.copy.size[0], 600);
  EXPECT_EQ(l.copy.rank, 3);
  // The same small: a plain block would hold 6 x 5 elements; one box holds all 120, in the destination's order.
  l = detail::permute_launch(permute_test::permuted({4, 5, 6}, {1, 0, 2}).copy);
  EXPECT_EQ(l.mode, PermuteMode::kBoxed);
  EXPECT_EQ(l.copy.inner, 3);
  EXPECT_EQ(l.copy.size[0], 6);
  EXPECT_EQ(l.copy.dst_stride[0], 1);
  EXPECT_EQ(l.copy.size[1], 4);
  EXPECT_EQ(l.copy.size[2], 5);
  // Axes of size 1 go; no axis at all is one element; a zero size is nothing to do.
  l = detail::permute_launch(permute_test::permuted({1, 1}, {1, 0}).copy);
  EXPECT_EQ(l.elements, 1);
  EXPECT_EQ(l.copy.rank, 1);
  StridedCopy scalar{};
  EXPECT_EQ(detail::permute_launch(scalar).elements, 1);
  EXPECT_EQ(detail::permute_launch(permute_test::permuted({3, 0, 2}, {2, 1, 0}).copy).elements, 0);
}

/// The contiguous run of one side's elements (destination: dst_stride, source: src_stride) that a launch's box
/// covers: its axes that each step exactly past the ones before, from stride 1.
std::int64_t box_run(const PermuteLaunch& l, std::int64_t (StridedCopy::*stride)[32]) {
  std::int64_t run = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (int a = 0; a < l.copy.inner; ++a) {
      if ((l.copy.*stride)[a] == run && l.copy.size[a] > 1) {
        run *= l.copy.size[a];
        grew = true;
      }
    }
  }
  return run;
}

TEST(EmulatedPermute, a_box_covers_runs_of_32_elements_on_both_sides_and_matches_the_host_loop) {
  // (v, x, y, z, w) -> (x, z, y, w, v), sizes 2, 16, 512, 2, 2: the destination's fastest (v) and the source's (w)
  // are short, and y (512) follows both. Taken whole, y would fill the box with a source run of 2 elements (z, the
  // source's next, left out): a quarter of every sector read. The box takes 8 of y, then z, then fills up.
  const Case c = permute_test::permuted({2, 16, 512, 2, 2}, {1, 3, 2, 4, 0});
  const PermuteLaunch l = detail::permute_launch(c.copy);
  ASSERT_EQ(l.mode, PermuteMode::kBoxed);
  std::int64_t box = 1;
  for (int a = 0; a < l.copy.inner; ++a) box *= l.copy.size[a];
  EXPECT_EQ(box, 2048);
  EXPECT_GE(box_run(l, &StridedCopy::dst_stride), 32);
  EXPECT_GE(box_run(l, &StridedCopy::src_stride), 32);
  std::mt19937_64 rng(10);
  for (std::int64_t shrink : {1, 5}) check<std::int32_t>(c, "tropical_permute_i32", rng, shrink);
}

TEST(EmulatedPermute, a_split_box_with_a_broadcast_axis_matches_the_host_loop_on_small_grids) {
  // The 4096 axis split (its inner part in the box), axis 1 broadcast from the source: the boxed kernel's
  // odometer over the split's outer part and the other axes, with a grid of every box down to one block.
  Case c = permute_test::permuted({2, 2, 4096, 2}, {3, 2, 0, 1});
  c.copy.src_stride[1] = 0;
  c.src_elements = 1;
  for (int a = 0; a < c.copy.rank; ++a) c.src_elements += (c.copy.size[a] - 1) * c.copy.src_stride[a];
  c.what += " (axis 1 broadcast)";
  const PermuteLaunch l = detail::permute_launch(c.copy);
  ASSERT_EQ(l.mode, PermuteMode::kBoxed);
  std::mt19937_64 rng(8);
  for (std::int64_t shrink : {1, 3, 1 << 20}) check<std::int32_t>(c, "tropical_permute_i32", rng, shrink);
  check<std::uint8_t>(c, "tropical_permute_u8", rng, 2);
}

/// `outer` axes of 2, then ten of 2 and one of 3000, the source row-major in that order; the destination has the
/// inner eleven fastest (the ten 2s reversed, then the 3000) and the outer ones padded (no two axes merge).
StridedCopy mixed(int outer) {
  StridedCopy c{};
  c.rank = outer + 11;
  for (int a = 0; a < c.rank; ++a) c.size[a] = a + 1 == c.rank ? 3000 : 2;
  std::int64_t s = 1, d = 1;
  for (int a = c.rank - 1; a >= 0; --a) {
    c.src_stride[a] = s;
    s *= c.size[a];
  }
  for (int a = outer; a < c.rank; ++a) {
    c.dst_stride[a] = d;
    d *= c.size[a];
  }
  for (int a = outer - 1; a >= 0; --a) {
    c.dst_stride[a] = d;
    d *= c.size[a] + 1;
  }
  return c;
}

/// Checks that `l` copies what `c` copies at a few hundred random indices of l: each index's destination
/// offset decoded into c's index (c's destination strides sorted, each past the faster ones' reach) must give
/// the same source offset.
void expect_same_mapping(const StridedCopy& c, const PermuteLaunch& l) {
  std::vector<int> order(static_cast<std::size_t>(c.rank));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return c.dst_stride[x] > c.dst_stride[y]; });
  std::mt19937_64 rng(9);
  for (int t = 0; t < 300; ++t) {
    std::int64_t src = 0, dst = 0;
    for (int a = 0; a < l.copy.rank; ++a) {
      const std::int64_t i = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(l.copy.size[a]));
      src += i * l.copy.src_stride[a];
      dst += i * l.copy.dst_stride[a];
    }
    std::int64_t want = 0, rest = dst;
    for (int a : order) {
      const std::int64_t i = c.size[a] > 1 ? rest / c.dst_stride[a] : 0;
      ASSERT_LT(i, c.size[a]);
      rest -= i * c.dst_stride[a];
      want += i * c.src_stride[a];
    }
    ASSERT_EQ(rest, 0);
    ASSERT_EQ(src, want);
  }
}

TEST(PermuteLaunch, a_full_rank_copy_stays_at_the_rank_limit_and_a_box_s_offsets_below_2_31) {
  // 32 axes: the source's fastest (3000 long) would split past the rank limit, so it stays out of the box, which
  // takes the destination's ten 2s.
  const StridedCopy full = mixed(detail::kMaxPermuteRank - 11);
  const PermuteLaunch l = detail::permute_launch(full);
  EXPECT_EQ(l.mode, PermuteMode::kBoxed);
  EXPECT_EQ(l.copy.rank, detail::kMaxPermuteRank);
  std::int64_t elements = 1, box = 1;
  for (int a = 0; a < l.copy.rank; ++a) elements *= l.copy.size[a];
  for (int a = 0; a < l.copy.inner; ++a) box *= l.copy.size[a];
  EXPECT_EQ(elements, l.elements);
  EXPECT_EQ(box, 1024);
  expect_same_mapping(full, l);
  // One axis fewer: the 3000 splits (40 of it in the box, the smallest divisor reaching a run of 32, with the
  // destination's first five 2s, a run of 32; the next 2 would not fit).
  const StridedCopy split = mixed(detail::kMaxPermuteRank - 12);
  const PermuteLaunch s = detail::permute_launch(split);
  EXPECT_EQ(s.mode, PermuteMode::kBoxed);
  EXPECT_EQ(s.copy.rank, detail::kMaxPermuteRank);
  box = 1;
  for (int a = 0; a < s.copy.inner; ++a) box *= s.copy.size[a];
  EXPECT_EQ(box, 1280);
  expect_same_mapping(split, s);
  // An 8 x 8 transpose is a box of both, unless a box's source offsets reach 2^31 (the kernel's 32-bit
  // offsets): then a plain copy.
  StridedCopy t{};
  t.rank = 2;
  t.size[0] = t.size[1] = 8;
  t.dst_stride[0] = 8;
  t.dst_stride[1] = 1;
  t.src_stride[0] = 1;
  t.src_stride[1] = std::int64_t{1} << 20;
  EXPECT_EQ(detail::permute_launch(t).mode, PermuteMode::kBoxed);
  t.src_stride[1] = std::int64_t{1} << 31;
  const PermuteLaunch wide = detail::permute_launch(t);
  EXPECT_EQ(wide.mode, PermuteMode::kPlain);
  expect_same_mapping(t, wide);
}

TEST(PermuteLaunch, rejects_bad_ranks_sizes_strides_and_destinations_that_write_an_element_twice) {
  StridedCopy c = permute_test::permuted({4, 5}, {1, 0}).copy;
  for (int rank : {-1, detail::kMaxPermuteRank + 1}) {
    StridedCopy bad = c;
    bad.rank = rank;
    EXPECT_THROW(detail::permute_launch(bad), InvalidArgument) << rank;
  }
  StridedCopy bad = c;
  bad.size[1] = -1;
  EXPECT_THROW(detail::permute_launch(bad), InvalidArgument);
  bad = c;
  bad.src_stride[0] = -5;
  EXPECT_THROW(detail::permute_launch(bad), InvalidArgument);
  bad = c;
  bad.dst_stride[0] = 0;  // every row onto one
  EXPECT_THROW(detail::permute_launch(bad), InvalidArgument);
  bad = c;
  bad.dst_stride[1] = 2;  // axis 1 steps 2 within axis 0.s reach 3: (2, 0) and (0, 1) meet
  EXPECT_THROW(detail::permute_launch(bad), InvalidArgument);
  bad = c;
  bad.size[0] = std::int64_t{1} << 40;
  bad.src_stride[0] = std::int64_t{1} << 40;
  EXPECT_THROW(detail::permute_launch(bad), InvalidArgument);
  try {
    detail::permute_launch(StridedCopy{.rank = 33});
    ADD_FAILURE() << "rank 33 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 33"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tropical
