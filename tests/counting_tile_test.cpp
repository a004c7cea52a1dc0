// Which tile a CountingTropical product runs on (src/counting_tile.hpp): the fewtiles variant for grids of fewer
// than kFewTilesPerSm blocks per SM, the default tile otherwise; a pure function, so no GPU.
#include "../src/counting_tile.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tropical/counting.hpp"

namespace tropical {
namespace {

using detail::counting_tile;
using detail::few_tiles_of;
using detail::kFewTilesPerSm;

std::string name_of(catalog::KernelId id) { return std::string(catalog::kInfo[static_cast<std::size_t>(id)].name); }

TEST(CountingTile, the_f32_kernels_have_a_fewtiles_variant_and_f64_none) {
  for (const Op op : {Op::kGemm, Op::kGemmBatched}) {
    const auto f32 = op == Op::kGemm ? kernel_id<CountingTropical, float, Op::kGemm>()
                                     : kernel_id<CountingTropical, float, Op::kGemmBatched>();
    const auto f64 = op == Op::kGemm ? kernel_id<CountingTropical, double, Op::kGemm>()
                                     : kernel_id<CountingTropical, double, Op::kGemmBatched>();
    EXPECT_EQ(name_of(few_tiles_of(f32)), name_of(f32) + "_fewtiles");
    EXPECT_EQ(catalog::kInfo[static_cast<std::size_t>(few_tiles_of(f32))].base, f32);
    EXPECT_EQ(few_tiles_of(f64), f64);
  }
}

TEST(CountingTile, takes_the_fewtiles_variant_below_its_blocks_per_sm) {
  const auto id = kernel_id<CountingTropical, float, Op::kGemm>();
  const auto few = few_tiles_of(id);
  const int sms = 132;
  const std::int64_t limit = kFewTilesPerSm * sms;  // 1188 blocks of 64 x 64
  EXPECT_EQ(counting_tile(id, 1, 1, 1, sms), few);
  EXPECT_EQ(counting_tile(id, 1000, 1000, 1, sms), few);  // 256 blocks
  EXPECT_EQ(counting_tile(id, 2176, 2176, 1, sms), few);  // 34 x 34 = 1156 blocks
  EXPECT_EQ(counting_tile(id, 2177, 2176, 1, sms), id);   // 35 x 34 = 1190
  EXPECT_EQ(counting_tile(id, 2304, 2304, 1, sms), id);   // 1296
  EXPECT_EQ(counting_tile(id, 8192, 8192, 1, sms), id);
  EXPECT_EQ(counting_tile(id, 64, 64 * (limit - 1), 1, sms), few);
  EXPECT_EQ(counting_tile(id, 64, 64 * limit, 1, sms), id);
  EXPECT_EQ(counting_tile(id, 2304, 2304, 1, 200), few);  // a larger device: 1296 < 1800
  EXPECT_EQ(counting_tile(id, 64, 64, 1, 0), few);         // a device that would not say: taken as one SM
  EXPECT_EQ(counting_tile(id, 64, 64 * 9, 1, 0), id);
}

TEST(CountingTile, counts_the_blocks_of_every_product_of_a_batch) {
  const auto id = kernel_id<CountingTropical, float, Op::kGemmBatched>();
  const auto few = few_tiles_of(id);
  EXPECT_EQ(counting_tile(id, 64, 45, 1187, 132), few);
  EXPECT_EQ(counting_tile(id, 64, 45, 1188, 132), id);
  EXPECT_EQ(counting_tile(id, 65, 45, 594, 132), id);  // two blocks a product
  EXPECT_EQ(counting_tile(id, 16, 16, 70000, 132), id);
  const std::int64_t huge = std::int64_t{1} << 40;
  EXPECT_EQ(counting_tile(id, huge, huge, huge, 132), id);  // no overflow
  EXPECT_EQ(counting_tile(id, 1, 1, huge, 132), id);
}

TEST(CountingTile, leaves_other_tiles_and_types_as_they_are) {
  const auto f32 = kernel_id<CountingTropical, float, Op::kGemm>();
  EXPECT_EQ(counting_tile(few_tiles_of(f32), 8192, 8192, 1, 132), few_tiles_of(f32));
  const auto f64 = kernel_id<CountingTropical, double, Op::kGemm>();
  EXPECT_EQ(counting_tile(f64, 64, 64, 1, 132), f64);
  const auto batched = kernel_id<CountingTropical, float, Op::kGemmBatched>();
  const auto skinny = catalog::pick_tile(batched, 4, 5000);
  ASSERT_NE(skinny, batched);
  EXPECT_EQ(counting_tile(skinny, 4, 5000, 1, 132), skinny);
}

}  // namespace
}  // namespace tropical
