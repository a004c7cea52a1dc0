// The typed API without a GPU: compile-time kernel choice and argument checks,
// which run before any driver call.
#include "tropical/gemm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

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

TEST(Api, empty_products_do_nothing_and_need_no_gpu) {
  EXPECT_NO_THROW((gemm<MaxPlus, float>(0, 4, 4, nullptr, nullptr, nullptr)));
  EXPECT_NO_THROW((gemm<MaxPlus, float>(4, 0, 4, nullptr, nullptr, nullptr)));
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
