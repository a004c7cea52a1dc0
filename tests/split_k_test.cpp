// Split k's plan (src/split_k.hpp), a pure function of a product's tiles and the device's slots: it splits
// where the unsplit grid's last wave is partly empty or the tiles do not fill one wave, never where a split
// cannot gain, and keeps its workspace and grid in bounds. No GPU needed.
#include "../src/split_k.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace tropical::detail {
namespace {

// The H200's 132 SMs at 2 blocks an SM (the f32 and int16 gemms' 128 x 128 tiles).
constexpr std::int64_t kSlots = 264;

// The model's end of a plan in whole-tile times, as plan_split() reckons it; the unsplit grid's for parts 0.
double modeled_end(const SplitShape& s, const SplitPlan& p) {
  if (p.parts == 0) return std::ceil(static_cast<double>(s.tile_rows * s.tile_cols) / s.slots);
  const double whole = static_cast<double>(p.whole_rows * s.tile_cols);
  const double part = (static_cast<double>(s.k_tiles) / p.parts + 8) / static_cast<double>(s.k_tiles);
  const double split = static_cast<double>((s.tile_rows - p.whole_rows) * s.tile_cols) * p.parts * part;
  if (!s.overlap) return std::ceil(whole / s.slots) + split / s.slots + part / 2;
  return std::max(std::ceil(whole / s.slots), (whole + split) / s.slots + part / 2);
}

void expect_in_bounds(const SplitShape& s, const SplitPlan& p) {
  if (p.parts == 0) return;
  EXPECT_GE(p.whole_rows, 0);
  EXPECT_LT(p.whole_rows, s.tile_rows);
  EXPECT_LE(p.parts, kMaxSplitParts);
  EXPECT_GE(s.k_tiles / p.parts, kMinPartSteps) << "every part takes at least kMinPartSteps k-steps";
  EXPECT_LE((s.tile_rows - p.whole_rows) * p.parts, 65535) << "the split grid's rows";
  EXPECT_LE(split_work_bytes(p, s), kMaxSplitWorkBytes);
  EXPECT_LT(modeled_end(s, p), 0.99 * modeled_end(s, {})) << "a split gains at least 1 %";
}

TEST(SplitPlan, splits_the_rows_that_leave_the_last_wave_partly_empty) {
  // f32 8192^3: 4096 tiles are 15.5 waves; the last rows' parts fill the sixteenth.
  const SplitShape f32{64, 64, 512, kSlots, 128 * 128 * 4};
  const SplitPlan p = plan_split(f32);
  expect_in_bounds(f32, p);
  EXPECT_GT(p.parts, 1);
  EXPECT_GE(p.whole_rows, 60);
  EXPECT_LT(modeled_end(f32, p), 15.8);
  // int16 8192^3: k-tiles of 32.
  const SplitShape i16{64, 64, 256, kSlots, 128 * 128 * 2};
  const SplitPlan q = plan_split(i16);
  expect_in_bounds(i16, q);
  EXPECT_GT(q.parts, 1);
  EXPECT_GE(q.whole_rows, 60);
}

TEST(SplitPlan, splits_every_row_of_a_product_too_small_to_fill_one_wave) {
  // 1024 x 1024 x 65536 in f32: 64 tiles on 264 slots; deep k, so every tile is split.
  const SplitShape s{8, 8, 4096, kSlots, 128 * 128 * 4};
  const SplitPlan p = plan_split(s);
  expect_in_bounds(s, p);
  EXPECT_EQ(p.whole_rows, 0);
  EXPECT_GE(64 * p.parts, kSlots / 2) << "the parts fill at least half the device";
  // One tile, k of 1024 in k-tiles of 16: 64 steps, parts of 8 at the least.
  const SplitShape one{1, 1, 64, kSlots, 128 * 128 * 4};
  const SplitPlan q = plan_split(one);
  expect_in_bounds(one, q);
  EXPECT_EQ(q.parts, 8);
  // 256 x 256 x 65536: 4 tiles, 4096 k-steps each; 64 parts a tile nearly fill the device (16 would leave
  // three quarters of it idle).
  const SplitShape few{2, 2, 4096, kSlots, 128 * 128 * 4};
  const SplitPlan r = plan_split(few);
  expect_in_bounds(few, r);
  EXPECT_EQ(r.parts, 64);
}

TEST(SplitPlan, leaves_alone_what_a_split_cannot_help) {
  EXPECT_EQ(plan_split({66, 4, 512, kSlots, 65536}).parts, 0) << "whole waves";
  EXPECT_EQ(plan_split({64, 64, 15, kSlots, 65536}).parts, 0) << "too few k-steps for two parts";
  EXPECT_EQ(plan_split({64, 64, 512, 0, 65536}).parts, 0) << "the device's slots unknown";
  EXPECT_EQ(plan_split({0, 64, 512, kSlots, 65536}).parts, 0) << "an empty product";
  // 262 tiles on 264 slots: the one wave is nearly full, and parts would only add their overhead.
  EXPECT_EQ(plan_split({2, 131, 512, kSlots, 65536}).parts, 0);
}

TEST(SplitPlan, without_overlap_the_split_rows_wait_for_the_whole_ones) {
  // Below sm_90 the split grid starts once the kernel has ended: f32 8192^3's last wave is then cheaper whole,
  // while a product too small for one wave still splits every tile.
  SplitShape f32{64, 64, 512, kSlots, 128 * 128 * 4};
  ASSERT_GT(plan_split(f32).parts, 0);
  f32.overlap = false;
  EXPECT_EQ(plan_split(f32).parts, 0);
  SplitShape deep{8, 8, 4096, kSlots, 128 * 128 * 4};
  deep.overlap = false;
  const SplitPlan p = plan_split(deep);
  EXPECT_GT(p.parts, 0);
  EXPECT_EQ(p.whole_rows, 0);
}

TEST(SplitPlan, keeps_its_workspace_under_the_cap) {
  // A row of 132 tiles of 128 KB (f64 tiles) on four times the slots, deep k: the model would split each tile
  // many ways (small tiles: 48); the 64 MB cap allows three (49.5 MB).
  const SplitShape s{1, 132, 4096, kSlots * 4, std::size_t{128} << 10};
  const SplitPlan p = plan_split(s);
  expect_in_bounds(s, p);
  EXPECT_EQ(p.parts, 3) << "the most parts under the cap";
  EXPECT_GT(plan_split({1, 132, 4096, kSlots * 4, 4096}).parts, 3) << "small tiles: the parts the model wants";
  // 1 MB tiles: no split fits, and a tall product of them is planned without walking its every row.
  EXPECT_EQ(plan_split({2, 132, 4096, kSlots * 4, std::size_t{1} << 20}).parts, 0);
  EXPECT_EQ(plan_split({65535, 1, 4096, kSlots, std::size_t{1} << 20}).parts, 0);
  EXPECT_EQ(split_work_bytes({1, 2}, {2, 3, 64, kSlots, 1000}), 256u + 3u * 2u * 1000u) << "tickets, then parts";
  EXPECT_EQ(split_work_bytes({0, 2}, {100, 1, 64, kSlots, 8}), 512u + 100u * 2u * 8u) << "tickets padded to 256";
}

}  // namespace
}  // namespace tropical::detail
