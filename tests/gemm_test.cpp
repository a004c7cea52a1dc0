// The typed API without a GPU: compile-time kernel choice and argument checks,
// which run before any driver call.
#include "tropical/gemm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/runtime.hpp"
#include "tropical/version.hpp"

namespace tropical {
namespace {

template <class S, class T, Op O>
std::string_view name_of() {
  return catalog::kInfo[static_cast<std::size_t>(kernel_id<S, T, O>())].name;
}

TEST(Api, kernel_is_chosen_at_compile_time_by_semiring_type_and_op) {
  static_assert(kInCatalog<MaxPlus, float, Op::kGemm>);
  static_assert(!kInCatalog<MaxPlus, std::int32_t, Op::kBackwardA>);
  EXPECT_EQ((name_of<MaxPlus, float, Op::kGemm>()), "tropical_gemm_maxplus_f32");
  EXPECT_EQ((name_of<MinPlus, std::int64_t, Op::kGemmArgmax>()), "tropical_gemm_argmax_minplus_i64");
  EXPECT_EQ((name_of<MaxMul, double, Op::kBackwardB>()), "tropical_backward_b_maxmul_f64");
  EXPECT_EQ((name_of<MaxMul, std::int32_t, Op::kGemmBatched>()), "tropical_gemm_batched_maxmul_i32");
  EXPECT_EQ((name_of<MaxMin, std::int64_t, Op::kGemmBatchedArgmax>()), "tropical_gemm_batched_argmax_maxmin_i64");
  EXPECT_EQ((name_of<AndOr, std::uint8_t, Op::kGemm>()), "tropical_gemm_andor_u8");
  EXPECT_EQ((name_of<MaxMul, float, Op::kBackwardBBatched>()), "tropical_backward_b_batched_maxmul_f32");
  static_assert(kInCatalog<MinMax, double, Op::kGemmArgmax>);
  static_assert(!kInCatalog<AndOr, float, Op::kGemm>);
  static_assert(!kInCatalog<MaxPlus, std::uint8_t, Op::kGemm>);
  static_assert(!kInCatalog<MaxMin, float, Op::kBackwardA>);
  static_assert(!kInCatalog<MaxPlus, std::int32_t, Op::kBackwardABatched>);
}

TEST(Api, batched_products_pick_the_smallest_tile_that_holds_m_by_n) {
  using catalog::KernelId;
  using catalog::pick_tile;
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 16, 16) == KernelId::kGemmBatchedMaxplusF32Tile16x16);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 1, 17) == KernelId::kGemmBatchedMaxplusF32Tile32x32);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 64, 33) == KernelId::kGemmBatchedMaxplusF32Tile64x64);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 65, 1) == KernelId::kGemmBatchedMaxplusF32);
  static_assert(pick_tile(KernelId::kGemmBatchedArgmaxMinmaxF64, 32, 32) ==
                KernelId::kGemmBatchedArgmaxMinmaxF64Tile32x32);
  static_assert(pick_tile(KernelId::kGemmBatchedArgmaxMinmaxF64, 64, 64) == KernelId::kGemmBatchedArgmaxMinmaxF64);
  // Types without small tiles keep their default; a small tile stays itself.
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusI32, 16, 16) == KernelId::kGemmBatchedMaxplusI32);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32Tile32x32, 1, 1) == KernelId::kGemmBatchedMaxplusF32Tile32x32);
  EXPECT_EQ(catalog::kInfo[static_cast<std::size_t>(KernelId::kGemmBatchedMaxplusF32Tile16x16)].launch.tile_m, 16u);
}

TEST(Api, small_single_products_run_on_a_small_batched_tile) {
  using catalog::KernelId;
  using catalog::pick_product;
  static_assert(pick_product(KernelId::kGemmMaxplusF32, 64, 64) == KernelId::kGemmBatchedMaxplusF32Tile64x64);
  static_assert(pick_product(KernelId::kGemmMaxplusF32, 16, 1) == KernelId::kGemmBatchedMaxplusF32Tile16x16);
  static_assert(pick_product(KernelId::kGemmMaxplusF32, 64, 65) == KernelId::kGemmMaxplusF32);
  static_assert(pick_product(KernelId::kGemmArgmaxMinplusF32, 20, 30) ==
                KernelId::kGemmBatchedArgmaxMinplusF32Tile32x32);
  static_assert(pick_product(KernelId::kGemmMaxmulF64, 32, 32) == KernelId::kGemmBatchedMaxmulF64Tile32x32);
  // f64 has no 64 x 64 small tile; integer types and other ops have none.
  static_assert(pick_product(KernelId::kGemmMaxmulF64, 33, 1) == KernelId::kGemmMaxmulF64);
  static_assert(pick_product(KernelId::kGemmMaxplusI32, 8, 8) == KernelId::kGemmMaxplusI32);
  static_assert(pick_product(KernelId::kBackwardAMaxplusF32, 8, 8) == KernelId::kBackwardAMaxplusF32);
  static_assert(pick_product(KernelId::kGemmBatchedMaxplusF32, 8, 8) == KernelId::kGemmBatchedMaxplusF32);
  // Every target is a small tile of the batched op of the same semiring and type.
  for (const auto& t : catalog::kSingleTiles) {
    const auto& single = catalog::kInfo[static_cast<std::size_t>(t.single)];
    const auto& tile = catalog::kInfo[static_cast<std::size_t>(t.id)];
    EXPECT_EQ(tile.semiring, single.semiring);
    EXPECT_EQ(tile.type, single.type);
    EXPECT_FALSE(tile.variant.empty());
    EXPECT_EQ(tile.op, single.op == Op::kGemm ? Op::kGemmBatched : Op::kGemmBatchedArgmax);
  }
}

TEST(Api, device_count_is_zero_without_a_driver_and_never_throws) {
  EXPECT_NO_THROW((void)device_count());
  if (!jit::driver::available()) {
    EXPECT_EQ(device_count(), 0);
  }
  EXPECT_GE(device_count(), 0);
}

TEST(Api, version_of_the_library_matches_the_headers) {
  EXPECT_STREQ(version(), TROPICAL_VERSION);
  EXPECT_EQ(std::to_string(TROPICAL_VERSION_MAJOR) + "." + std::to_string(TROPICAL_VERSION_MINOR) + "." +
                std::to_string(TROPICAL_VERSION_PATCH),
            TROPICAL_VERSION);
}

// Fake device pointers: the checks below must reject the call before using them.
const float* const kA = reinterpret_cast<const float*>(0x1000);
float* const kC = reinterpret_cast<float*>(0x2000);

TEST(Api, negative_sizes_are_rejected) {
  EXPECT_THROW((gemm<MaxPlus, float>(-1, 4, 4, kA, kA, kC)), InvalidArgument);
  EXPECT_THROW((gemm<MaxPlus, float>(4, 4, -4, kA, kA, kC)), InvalidArgument);
}

TEST(Api, small_leading_dimensions_are_rejected_with_their_name) {
  try {
    gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 5, 6, kA, 5, kA, 5, kC, 5);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("lda"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), Errc::kInvalidArgument);
  }
  // Transposed A is k x m: lda must cover m.
  EXPECT_THROW((gemm<MaxPlus, float>(Trans::kYes, Trans::kNo, 8, 5, 6, kA, 6, kA, 5, kC, 5)), InvalidArgument);
  EXPECT_THROW((gemm<MaxPlus, float>(Trans::kNo, Trans::kYes, 4, 5, 6, kA, 6, kA, 5, kC, 5)), InvalidArgument);
  EXPECT_THROW((gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 5, 6, kA, 6, kA, 5, kC, 4)), InvalidArgument);
}

TEST(Api, argmax_needs_k_below_two_to_the_31) {
  std::int32_t* arg = reinterpret_cast<std::int32_t*>(0x3000);
  EXPECT_THROW((gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, std::int64_t{1} << 31, kA,
                                            std::int64_t{1} << 31, kA, 1, kC, 1, arg, 1)),
               InvalidArgument);
}

TEST(Api, batched_checks_batch_and_strides) {
  EXPECT_THROW((gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, kA, 2, 4, kC, 2, 4, -1)),
               InvalidArgument);
  EXPECT_THROW((gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, kA, 2, 4, kC, 2, 3, 2)),
               InvalidArgument);
}

TEST(Api, in_place_products_are_rejected) {
  float* const buf = reinterpret_cast<float*>(0x4000);
  EXPECT_THROW((gemm<MaxPlus, float>(4, 4, 4, buf, kA, buf)), InvalidArgument);
  EXPECT_THROW((gemm<MaxPlus, float>(4, 4, 4, kA, buf, buf)), InvalidArgument);
  EXPECT_THROW((gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, kA, 4, kC, 4,
                                            reinterpret_cast<std::int32_t*>(kC), 4)),
               InvalidArgument);
  double* const g = reinterpret_cast<double*>(0x5000);
  const std::int32_t* arg = reinterpret_cast<const std::int32_t*>(0x6000);
  EXPECT_THROW((backward_a<MaxPlus, double>(Trans::kNo, Trans::kNo, 4, 4, 4, g, 4, arg, 4, nullptr, 4, g, 4)),
               InvalidArgument);
}

/// The message of the InvalidArgument that f throws ("" if it throws none).
template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

/// True if message contains text (EXPECT_PRED2 prints both when it fails).
bool says(const std::string& message, const char* text) { return message.find(text) != std::string::npos; }

TEST(Api, null_pointers_are_reported_as_null_before_any_overlap_check) {
  // Null A and null C are equal pointers: the message must name the null, not an overlap.
  EXPECT_PRED2(says, invalid_message([] { gemm<MaxPlus, float>(4, 4, 4, nullptr, kA, nullptr); }), "A is null");
  EXPECT_PRED2(says, invalid_message([] { gemm<MaxPlus, float>(4, 4, 4, kA, nullptr, nullptr); }), "B is null");
  EXPECT_PRED2(says, invalid_message([] { gemm<MaxPlus, float>(4, 4, 4, kA, kA, nullptr); }), "C is null");
  EXPECT_PRED2(says, invalid_message([] {
                gemm_argmax<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, kA, 4, kC, 4, nullptr, 4);
              }), "argmax is null");
  EXPECT_PRED2(says, invalid_message([] {
                gemm_batched_argmax<MaxMin, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, 16, kA, 4, 16, kC, 4, 16,
                                                   nullptr, 4, 16, 2);
              }), "argmax is null");
  const double* const g = reinterpret_cast<const double*>(0x5000);
  const std::int32_t* const arg = reinterpret_cast<const std::int32_t*>(0x6000);
  EXPECT_PRED2(says, invalid_message([&] {
                backward_a<MaxPlus, double>(Trans::kNo, Trans::kNo, 4, 4, 4, nullptr, 4, arg, 4, nullptr, 4,
                                            const_cast<double*>(g), 4);
              }), "grad_c is null");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b<MaxMul, double>(Trans::kNo, Trans::kNo, 4, 4, 4, g, 4, arg, 4, nullptr, 4,
                                           reinterpret_cast<double*>(0x7000), 4);
              }), "A (read by MaxMul's gradient) is null");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_a_batched<MaxPlus, double>(Trans::kNo, Trans::kNo, 4, 4, 4, g, 4, 16, nullptr, 4, 16,
                                                    nullptr, 4, 16, reinterpret_cast<double*>(0x7000), 4, 16, 3);
              }), "argmax is null");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b_batched<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, 16, arg, 4, 16, nullptr,
                                                   4, 16, nullptr, 4, 16, 3);
              }), "grad_b is null");
}

TEST(Api, sizes_and_offsets_that_overflow_64_bits_are_rejected) {
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  // (m - 1) * ldc overflows.
  EXPECT_PRED2(says, invalid_message([] {
                gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, kBig, 1, 1, kA, 1, kA, 1, kC, std::int64_t{1} << 30);
              }), "overflow 64 bits");
  // The extent fits in elements, not in bytes: 2^61 + 1 doubles.
  EXPECT_PRED2(says, invalid_message([] {
                gemm<MaxPlus, double>(Trans::kYes, Trans::kNo, 1, 1, 2, reinterpret_cast<const double*>(kA),
                                      std::int64_t{1} << 61, reinterpret_cast<const double*>(kA), 1,
                                      reinterpret_cast<double*>(kC), 1);
              }), "overflow 64 bits");
  EXPECT_PRED2(says, invalid_message([] {
                gemm_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 3, 1, 1, kA, 1, kA, 1, kC, 1,
                                            reinterpret_cast<std::int32_t*>(0x3000), std::int64_t{1} << 62);
              }), "overflow 64 bits");
  // The backward memset's pitch: 2 rows of dA with ldga = 2^62 doubles.
  EXPECT_PRED2(says, invalid_message([] {
                backward_a<MaxPlus, double>(Trans::kNo, Trans::kNo, 2, 1, 1, reinterpret_cast<const double*>(kA), 1,
                                            reinterpret_cast<const std::int32_t*>(0x3000), 1, nullptr, 1,
                                            reinterpret_cast<double*>(kC), std::int64_t{1} << 62);
              }), "overflow 64 bits");
  // A batch whose last product lies beyond 2^63 bytes.
  EXPECT_PRED2(says, invalid_message([] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, kA, 1, 0, kA, 1, 0, kC, 1,
                                             std::int64_t{1} << 40, std::int64_t{1} << 30);
              }), "overflows 64 bits");
  EXPECT_PRED2(says, invalid_message([] {
                backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, kA, 1, 0,
                                                   reinterpret_cast<const std::int32_t*>(0x3000), 1, 0, nullptr, 1, 0,
                                                   kC, 1, std::int64_t{1} << 62, 4);
              }), "overflows 64 bits");
}

TEST(Api, batched_argmax_and_backward_check_their_strides) {
  std::int32_t* const arg = reinterpret_cast<std::int32_t*>(0x3000);
  // Two argmax products of 2 x 2 must not overlap.
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, kA, 2, 4, kC, 2, 4, arg,
                                                    2, 3, 2);
              }), "stride_argmax");
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, std::int64_t{1} << 31, kA,
                                                    std::int64_t{1} << 31, 0, kA, 2, 0, kC, 2, 4, arg, 2, 4, 2);
              }), "32-bit argmax");
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, kA, 2, 4, kC, 2, 4,
                                                    reinterpret_cast<std::int32_t*>(kC), 2, 4, 2);
              }), "argmax must not overlap");
  // Each thread owns a row of one gradient: gradients of the batch must not overlap.
  EXPECT_PRED2(says, invalid_message([&] {
                backward_a_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, arg, 2, 4, nullptr, 2, 4,
                                                   kC, 2, 3, 2);
              }), "stride_ga");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, -4, arg, 2, 4, nullptr, 2,
                                                   4, kC, 2, 4, 2);
              }), "negative stride_gc");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, kA, 2, 4, arg, 2, 4, nullptr, 2,
                                                   4, kC, 2, 4, -1);
              }), "negative batch");
}

TEST(Api, alpha_and_beta_keep_the_checks_of_the_plain_product) {
  // In-place accumulation is C only: C must still not be A or B.
  float* const buf = reinterpret_cast<float*>(0x4000);
  EXPECT_PRED2(says, invalid_message([&] {
                gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, 0.0f, buf, 4, kA, 4, 0.0f, buf, 4);
              }), "C must not overlap A or B");
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched<MaxMin, float>(Trans::kNo, Trans::kNo, 4, 4, 4, 1.0f, kA, 4, 16, kA, 4, 16, 2.0f, kC, 4,
                                            15, 2);
              }), "stride_c");
  EXPECT_NO_THROW((gemm<AndOr, std::uint8_t>(Trans::kNo, Trans::kNo, 0, 4, 4, 1, nullptr, 4, nullptr, 4, 1, nullptr, 4)));
}

TEST(Api, empty_products_do_nothing_and_need_no_gpu) {
  EXPECT_NO_THROW((gemm<MaxPlus, float>(0, 4, 4, nullptr, nullptr, nullptr)));
  EXPECT_NO_THROW((gemm<MaxPlus, float>(4, 0, 4, nullptr, nullptr, nullptr)));
}

TEST(Api, a_transpose_outside_the_enum_is_rejected) {
  EXPECT_THROW((gemm<MaxPlus, float>(static_cast<Trans>(7), Trans::kNo, 4, 4, 4, kA, 4, kA, 4, kC, 4)),
               InvalidArgument);
  EXPECT_THROW((gemm_batched<MaxPlus, float>(Trans::kNo, static_cast<Trans>(2), 4, 4, 4, kA, 4, 16, kA, 4, 16, kC,
                                             4, 16, 2)),
               InvalidArgument);
}

TEST(Api, a_grid_the_device_cannot_launch_is_rejected_before_the_driver) {
  // m = 2^40 rows need more than 65535 row tiles: an argument error, with or without a GPU.
  const std::int64_t m = std::int64_t{1} << 40;
  try {
    gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, m, 1, 1, kA, 1, kA, 1, kC, 1);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row tiles"), std::string::npos) << e.what();
  }
  EXPECT_THROW((gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, m, 100, 1, kA, 1, 0, kA, 100, 0, kC, 100,
                                             0, 1)),
               InvalidArgument);
}

TEST(Api, a_negative_device_is_an_argument_error) {
  EXPECT_THROW(device_arch(-1), InvalidArgument);
}

TEST(Api, a_product_without_a_driver_throws_unavailable) {
  if (jit::driver::available()) {
    GTEST_SKIP() << "a CUDA driver is present; this checks the no-GPU path";
  }
  try {
    gemm<MaxPlus, float>(4, 4, 4, kA, kA, kC);
    FAIL();
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tropical
