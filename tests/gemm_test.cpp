// The typed API without a GPU: compile-time kernel choice and argument checks,
// which run before any driver call.
#include "tropical/gemm.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>

#include "../src/checks.hpp"
#include "fake_cuda/fake_cuda.hpp"
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

/// The message of the InvalidArgument that f throws; "" if it throws another tropical::Error (no driver,
/// a driver call that failed: the arguments passed their checks) or nothing.
template <class F>
std::string argument_error(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const Error&) {
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

// An output that shares memory with an input (not only the same first element) is refused before
// the driver; blocks of one matrix that share no element are not.
TEST(Api, an_output_sharing_any_element_with_an_input_is_rejected) {
  float* const buf = reinterpret_cast<float*>(0x10000);
  // Batched: C starts inside A's first product (A: 2 products of 4 x 4, 16 apart; C 8 elements later).
  EXPECT_PRED2(says, argument_error([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, buf, 4, 16, kA, 4, 16, buf + 8, 4, 16, 2);
              }), "C must not overlap A or B: C shares memory with A");
  // Only the last product of a batch of B reaches C: a batch of 3 from buf, C at buf + 40 (B[2] is 32..47);
  // a batch of 1 reads B[0] alone, which C does not touch.
  EXPECT_FALSE(says(argument_error([&] {
                      gemm_batched<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, 16, buf, 4, 16, buf + 40, 4,
                                                   0, 1);
                    }),
                    "overlap"));
  EXPECT_PRED2(says, argument_error([&] {
                gemm_batched<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, kA, 4, 16, buf, 4, 16, buf + 40, 4, 16, 3);
              }), "C shares memory with B");
  // One product: C one element after A.
  EXPECT_PRED2(says, argument_error([&] { gemm<MaxPlus, float>(4, 4, 4, buf, kA, buf + 1); }), "C shares memory with A");
  // The argmax (int32) over the last bytes of C (double), 2 elements before its end.
  double* const dc = reinterpret_cast<double*>(0x20000);
  EXPECT_PRED2(says, argument_error([&] {
                gemm_batched_argmax<MaxPlus, double>(Trans::kNo, Trans::kNo, 2, 2, 2, reinterpret_cast<const double*>(kA),
                                                     2, 4, reinterpret_cast<const double*>(kA), 2, 4, dc, 2, 4,
                                                     reinterpret_cast<std::int32_t*>(dc + 6), 2, 4, 2);
              }), "argmax must not overlap A, B or C: it shares memory with C");
  // A batch of gradients over the batch of dC they read.
  EXPECT_PRED2(says, argument_error([&] {
                backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, buf, 2, 4,
                                                   reinterpret_cast<const std::int32_t*>(0x3000), 2, 4, nullptr, 2, 4,
                                                   buf + 6, 2, 4, 2);
              }), "the gradient must not overlap grad_c, argmax or the operand: grad_b shares memory with grad_c");
}

TEST(Api, blocks_of_one_matrix_that_share_no_element_are_not_an_overlap) {
  // One 8 x 8 matrix (ld 8): C is its block (0, 1), A its block (0, 0), B its block (1, 0).
  float* const m = reinterpret_cast<float*>(0x10000);
  const auto accepted = [](const std::string& message) { return message.find("overlap") == std::string::npos; };
  EXPECT_PRED1(accepted, argument_error([&] {
                 gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, m, 8, m + 32, 8, m + 4, 8);
               }));
  // Batched, interleaved: product p of C in columns 4..7 of rows 4p..4p+3, of A in columns 0..3 (stride 32).
  EXPECT_PRED1(accepted, argument_error([&] {
                 gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, m, 8, 32, kA, 4, 0, m + 4, 8, 32, 2);
               }));
  // The same with C moved one column left: column 3 of each row is both A's and C's.
  EXPECT_PRED2(says, argument_error([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, m, 8, 32, kA, 4, 0, m + 3, 8, 32, 2);
              }), "C shares memory with A");
}

/// The bytes a span covers, one by one (tiny spans only).
std::set<std::uintptr_t> bytes_of(const detail::Span& s) {
  std::set<std::uintptr_t> bytes;
  if (s.bytes == 0) return bytes;
  for (std::int64_t p = 0; p < s.batch; ++p) {
    for (std::int64_t i = 0; i < s.rows; ++i) {
      for (std::int64_t u = 0; u < s.row; ++u) bytes.insert(s.start + static_cast<std::uintptr_t>(p * s.stride + i * s.ld + u));
    }
  }
  return bytes;
}

TEST(Api, the_overlap_check_is_exact_on_small_layouts) {
  // Against the bytes themselves: batches, leading dimensions, element sizes and misaligned starts.
  std::mt19937_64 rng(27);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::size_t sizes[] = {1, 4, 8};
  int overlapping = 0;
  for (int round = 0; round < 4000; ++round) {
    detail::Span spans[2];
    for (auto& s : spans) {
      const detail::Stored shape{pick(1, 4), pick(1, 5)};
      const std::size_t elem = sizes[pick(0, 2)];
      s = detail::span("X", reinterpret_cast<const void*>(static_cast<std::uintptr_t>(0x1000 + pick(0, 160))), shape,
                       shape.cols + pick(0, 6), pick(0, 40), pick(1, 4), elem);
    }
    std::set<std::uintptr_t> a = bytes_of(spans[0]), b = bytes_of(spans[1]);
    bool shared = false;
    for (auto x : a) shared = shared || b.count(x) != 0;
    overlapping += shared;
    ASSERT_EQ(detail::overlap(spans[0], spans[1]), shared) << "round " << round;
    ASSERT_EQ(detail::overlap(spans[1], spans[0]), shared) << "round " << round;
  }
  EXPECT_GT(overlapping, 400);  // both answers were tried often
  EXPECT_LT(overlapping, 3600);
}

// A batch or a stride whose last byte lies past the end of the 64-bit address space is refused
// before the driver (no memory can hold it); on both sides of the boundary.
TEST(Api, an_operand_past_the_end_of_the_address_space_is_rejected) {
  float* const top = reinterpret_cast<float*>(~std::uintptr_t{0} - 4095);  // the last 4096 bytes
  const auto batch_of = [&](std::int64_t batch) {
    return argument_error([&] {
      gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, kA, 1, 0, kA, 1, 0, top, 1, 1, batch);
    });
  };
  // 1024 floats end exactly at the last byte: not this error (a missing driver's, or "not memory of a device").
  EXPECT_FALSE(says(batch_of(1024), "address space")) << batch_of(1024);
  EXPECT_PRED2(says, batch_of(1025), "C (1 row; a batch of 1025, stride 1) spans 4100 bytes");
  EXPECT_PRED2(says, batch_of(1025), "past the end of the address space");
  // A leading dimension alone: 2 rows of A, the second 2^40 floats after the first.
  EXPECT_PRED2(says, argument_error([&] {
                gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 1, 1, top, std::int64_t{1} << 40, kA, 1, kC, 1);
              }), "A (2 rows, ld 1099511627776) spans 4398046511108 bytes");
}

/// Skips a test that needs the fake libcuda.so.1 (meson test api_fake_driver).
#define TROPICAL_REQUIRE_FAKE_DRIVER()                                                                     \
  do {                                                                                                      \
    if (std::getenv(fake_cuda::kEnvironment) == nullptr) {                                                 \
      GTEST_SKIP() << "runs in meson test api_fake_driver (tests/fake_cuda's libcuda.so.1 on LD_LIBRARY_PATH)"; \
    }                                                                                                       \
  } while (false)

/// What a call that passed every check does under the fake driver: fail at a driver call (the first
/// context operation), not at an argument check.
bool reached_the_driver(const std::function<void()>& call) {
  try {
    call();
  } catch (const CudaError&) {
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  return false;
}

float* device_floats(std::uintptr_t address) { return reinterpret_cast<float*>(address); }

// A device past device_count() is an argument error, named as such, before cuDeviceGet
// (which the old code reached: a CudaError "CUDA_ERROR_INVALID_DEVICE"); the device that exists answers.
TEST(ApiWithADriver, a_device_past_the_device_count_is_an_argument_error) {
  TROPICAL_REQUIRE_FAKE_DRIVER();
  ASSERT_EQ(device_count(), 1);
  EXPECT_EQ(device_arch(0), 90);
  EXPECT_PRED2(says, invalid_message([] { (void)device_arch(1); }), "device 1 does not exist (1 device)");
  EXPECT_PRED2(says, invalid_message([] { (void)device_arch(1 << 30); }), "does not exist");
}

// A batch, stride or leading dimension that runs past the end of the allocation holding the
// operand's first byte is an InvalidArgument before any launch (it was an illegal address in the kernel,
// which ends the context); one that fits exactly is launched.
TEST(ApiWithADriver, an_operand_past_the_end_of_its_allocation_is_rejected) {
  TROPICAL_REQUIRE_FAKE_DRIVER();
  using fake_cuda::kFirst;
  using fake_cuda::kThird;
  const float* a = device_floats(kFirst);
  const float* b = device_floats(kFirst + 64);
  // batch = 2^40 products of one element: 4 TiB of C in a 1 MiB allocation.
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a, 1, 0, b, 1, 0, device_floats(kThird), 1, 1,
                                             std::int64_t{1} << 40);
              }), "C spans 4398046511104 bytes from 0x200000000, past the end of its allocation (1048576 bytes left");
  // An input too: 2^18 products of A one element apart are the 1 MiB of its allocation, from its first
  // byte; one element later they end 4 bytes past it.
  const auto a_batch = [&](const float* a_at) {
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a_at, 1, 1, b, 1, 0, device_floats(kThird), 1, 1,
                                 std::int64_t{1} << 18);
  };
  EXPECT_TRUE(reached_the_driver([&] { a_batch(a); }));
  EXPECT_PRED2(says, invalid_message([&] { a_batch(a + 1); }),
               "A spans 1048576 bytes from 0x100000004, past the end of its allocation (1048572 bytes left");
}

TEST(ApiWithADriver, a_stride_that_fits_the_allocation_exactly_is_launched_and_one_more_is_not) {
  TROPICAL_REQUIRE_FAKE_DRIVER();
  using fake_cuda::kSecond;
  const float* a = device_floats(fake_cuda::kFirst);
  // C: 4096 products of 4 x 16 (ldc 16: 64 floats each), stride_c 64: exactly the 1 MiB allocation.
  const std::int64_t batch = static_cast<std::int64_t>(fake_cuda::kBytes / (64 * sizeof(float)));
  const auto product = [&](std::uintptr_t c, std::int64_t ldc, std::int64_t stride_c) {
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 16, 1, a, 1, 0, a + 4, 16, 0, device_floats(c), ldc,
                                 stride_c, batch);
  };
  EXPECT_TRUE(reached_the_driver([&] { product(kSecond, 16, 64); }));
  // One element more, by the stride, the start or the leading dimension: past the end.
  EXPECT_PRED2(says, invalid_message([&] { product(kSecond, 16, 65); }),
               "C spans 1064956 bytes from 0x100100000, past the end of its allocation (1048576 bytes left");
  EXPECT_PRED2(says, invalid_message([&] { product(kSecond + 4, 16, 64); }), "past the end of its allocation");
  EXPECT_PRED2(says, invalid_message([&] { product(kSecond, 17, 68); }), "past the end of its allocation");
  // The bytes after the end of the first allocation are the second's: still past the end of the first.
  EXPECT_PRED2(says, invalid_message([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 16, 1, a, 1, 0, a + 4, 16, 0,
                                             device_floats(kSecond - 256), 16, 64, 2);
              }), "C spans 512 bytes from 0x1000fff00, past the end of its allocation (256 bytes left of the 1048576 "
                  "from 0x100000000)");
}

TEST(ApiWithADriver, backward_passes_check_their_operands_against_their_allocations) {
  TROPICAL_REQUIRE_FAKE_DRIVER();
  const float* gc = device_floats(fake_cuda::kFirst);
  const auto* argmax = reinterpret_cast<const std::int32_t*>(fake_cuda::kFirst + 4096);
  float* grad = device_floats(fake_cuda::kSecond + fake_cuda::kBytes - 16);  // room for 4 floats
  // dB is 2 x 2 (k x n): with ldgb 3 its second row ends one float past the allocation.
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc, 2, argmax, 2, nullptr, 2, grad, 3);
              }), "grad_b spans 20 bytes");
  EXPECT_PRED2(says, invalid_message([&] {
                backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc, 2, 4, argmax, 2, 4, nullptr, 2, 4,
                                                   grad, 2, 4, 2);
              }), "grad_b spans 32 bytes");
}

/// How many context, memset or launch calls the fake driver has seen (-1 if it is not loaded).
long driver_work_calls() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return -1;
  const auto count = reinterpret_cast<long (*)()>(dlsym(handle, fake_cuda::kUnsupportedCalls));
  const long calls = count != nullptr ? count() : -1;
  dlclose(handle);
  return calls;
}

/// The InvalidArgument message of call, which must have asked the driver for nothing but where pointers lie.
std::string refused_before_any_work(const std::function<void()>& call) {
  const long before = driver_work_calls();
  const std::string message = invalid_message(call);
  EXPECT_EQ(driver_work_calls(), before) << "the driver was asked for a context, a memset or a launch: " << message;
  return message;
}

// The three allocation checks, each refused before anything is queued, with the driver present: a batch
// past its allocation, a batched C over A in one allocation, and a stride that fits the allocation exactly
// (it reaches the driver) against one element more. On a stream of its own, a call that passes every check
// asks the fake driver for the stream's context, a call the fake does not support and counts.
TEST(ApiWithADriver, allocation_and_overlap_checks_refuse_before_anything_is_queued) {
  TROPICAL_REQUIRE_FAKE_DRIVER();
  const auto stream = reinterpret_cast<CUstream>(std::uintptr_t{0x1000});
  const float* a = device_floats(fake_cuda::kFirst);
  ASSERT_EQ(device_count(), 1);  // loads the driver
  ASSERT_GE(driver_work_calls(), 0) << "the fake libcuda.so.1 is not the one loaded";
  // A batch of 2^40 one-element products of C in the third 1 MiB allocation.
  EXPECT_PRED2(says, refused_before_any_work([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a, 1, 0, a + 1, 1, 0,
                                             device_floats(fake_cuda::kThird), 1, 1, std::int64_t{1} << 40, stream);
              }), "past the end of its allocation");
  // A's products are 32 floats apart; C's first product (floats 40 to 55) lies over A's second (32 to 47).
  EXPECT_PRED2(says, refused_before_any_work([&] {
                gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, a, 4, 32, a + 4096, 4, 16,
                                             device_floats(fake_cuda::kFirst) + 40, 4, 32, 2, stream);
              }), "C must not overlap A or B: C shares memory with A");
  // C: 4096 products of 4 x 16 floats, stride 64: exactly the second allocation; one more element is not.
  const std::int64_t batch = static_cast<std::int64_t>(fake_cuda::kBytes / (64 * sizeof(float)));
  const auto product = [&](std::int64_t stride_c) {
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 16, 1, a, 1, 0, a + 4, 16, 0,
                                 device_floats(fake_cuda::kSecond), 16, stride_c, batch, stream);
  };
  const long before = driver_work_calls();
  EXPECT_TRUE(reached_the_driver([&] { product(64); }));
  EXPECT_GT(driver_work_calls(), before) << "the exact fit never asked the driver for the stream's context";
  EXPECT_PRED2(says, refused_before_any_work([&] { product(65); }), "past the end of its allocation");
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
