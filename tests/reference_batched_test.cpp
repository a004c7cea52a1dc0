// Hand-checked cases for alpha/beta, batched argmax and the batched backward
// passes of the CPU reference.
#include "tropical/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tropical::reference {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// C = alpha (x) (A (x) B) (+) beta (x) C for dense 2 x 2 operands.
template <class S, class T>
std::vector<T> scaled(T alpha, T beta, std::vector<T> c) {
  const std::vector<T> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  gemm<S, T>(Trans::kNo, Trans::kNo, 2, 2, 2, alpha, a.data(), 2, b.data(), 2, beta, c.data(), 2);
  return c;
}

TEST(ReferenceScaling, beta_zero_overwrites_without_reading_and_alpha_one_changes_nothing) {
  // MaxPlus: A (x) B = {9, 10, 11, 12}; one = 0, zero = -inf. C holds NaN poison.
  EXPECT_EQ((scaled<MaxPlus, float>(0, -kInf, {kNaN, kNaN, kNaN, kNaN})), (std::vector<float>{9, 10, 11, 12}));
  // MaxMul: one = 1, zero = 0; MinPlus: {6, 7, 8, 9}.
  EXPECT_EQ((scaled<MaxMul, double>(1, 0, {-7, -7, -7, -7})), (std::vector<double>{14, 16, 28, 32}));
  EXPECT_EQ((scaled<MinPlus, std::int32_t>(0, std::numeric_limits<std::int32_t>::max(), {-99, -99, -99, -99})),
            (std::vector<std::int32_t>{6, 7, 8, 9}));
}

TEST(ReferenceScaling, beta_one_accumulates_and_other_values_scale) {
  // MaxPlus, alpha = 2: alpha (x) P = P + 2 = {11, 12, 13, 14}.
  const std::vector<float> old = {20, 0, -kInf, kNaN};
  EXPECT_EQ((scaled<MaxPlus, float>(2, 0, old)), (std::vector<float>{20, 12, 13, 14}));  // beta = one
  EXPECT_EQ((scaled<MaxPlus, float>(2, -5, old)), (std::vector<float>{15, 12, 13, 14}));  // beta (x) C = C - 5
  // alpha = zero: every product is the zero, C = beta (x) C (a NaN C stays ignored).
  EXPECT_EQ((scaled<MaxPlus, float>(-kInf, 0, old)), (std::vector<float>{20, 0, -kInf, -kInf}));
  // MinPlus with beta = one: C = min(P, C).
  EXPECT_EQ((scaled<MinPlus, float>(0, 0, {5, 100, 8, -1})), (std::vector<float>{5, 7, 8, -1}));
  // MaxMul, alpha = 0.5, beta = 2: max(P / 2, 2 C).
  EXPECT_EQ((scaled<MaxMul, double>(0.5, 2, {1, 10, 0, 20})), (std::vector<double>{7, 20, 14, 40}));
}

TEST(ReferenceScaling, integer_alpha_and_beta_saturate) {
  using L = std::numeric_limits<std::int32_t>;
  // MaxPlus i32: alpha = max() saturates every product to max().
  EXPECT_EQ((scaled<MaxPlus, std::int32_t>(L::max(), L::lowest(), {0, 0, 0, 0})),
            (std::vector<std::int32_t>{L::max(), L::max(), L::max(), L::max()}));
  // beta = -5 on C = lowest() (the zero) stays lowest(); on C = lowest() + 1 saturates to lowest().
  EXPECT_EQ((scaled<MaxPlus, std::int32_t>(0, -5, {L::lowest(), L::lowest() + 1, 100, 3})),
            (std::vector<std::int32_t>{9, 10, 95, 12}));
}

TEST(ReferenceScaling, bottleneck_and_boolean_semirings_take_alpha_and_beta) {
  // MaxMin: P = max_k min(a, b) over {1,2,3,4} x {5,6,7,8} = {2, 2, 4, 4}; alpha = 3 caps it.
  EXPECT_EQ((scaled<MaxMin, float>(3, -kInf, {0, 0, 0, 0})), (std::vector<float>{2, 2, 3, 3}));
  // beta = one (+inf) accumulates: max(P, C).
  EXPECT_EQ((scaled<MaxMin, float>(kInf, kInf, {10, 0, 0, 5})), (std::vector<float>{10, 2, 4, 5}));
  // AndOr over bytes: P = all true; alpha = 0 (false) clears it; beta = 9 (true) ors C in.
  EXPECT_EQ((scaled<AndOr, std::uint8_t>(0, 9, {0, 5, 0, 200})), (std::vector<std::uint8_t>{0, 1, 0, 1}));
  EXPECT_EQ((scaled<AndOr, std::uint8_t>(1, 0, {7, 7, 7, 7})), (std::vector<std::uint8_t>{1, 1, 1, 1}));
}

TEST(ReferenceBatched, batched_alpha_beta_applies_to_every_product) {
  // Two 1 x 1 x 2 MaxPlus products; C stride 2 with padding that stays untouched.
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c = {100, -1, 0, -1};
  gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 2, 1.0f, a.data(), 2, 2, b.data(), 1, 2, 0.0f, c.data(),
                               1, 2, 2);
  // Product 0: max(1+5, 2+6) + 1 = 9, max with 100; product 1: max(3+7, 4+8) + 1 = 13, max with 0.
  EXPECT_EQ(c, (std::vector<float>{100, -1, 13, -1}));
}

TEST(ReferenceBatched, batched_argmax_is_gemm_argmax_per_slice_with_its_own_stride) {
  // Two MinPlus products 1 x 2 x 2 with B shared (stride 0); argmax stride 3.
  const std::vector<float> a = {1, 2, 5, 0}, b = {1, 9, 3, 2};
  std::vector<float> c(4, -7);
  std::vector<std::int32_t> arg(6, 42);
  gemm_batched_argmax<MinPlus, float>(Trans::kNo, Trans::kNo, 1, 2, 2, a.data(), 2, 2, b.data(), 2, 0, c.data(), 2, 2,
                                      arg.data(), 2, 3, 2);
  // Slice 0: (min(1+1, 2+3), min(1+9, 2+2)) = (2 at 0, 4 at 1); slice 1: (min(6, 3), min(14, 2)) = (3 at 1, 2 at 1).
  EXPECT_EQ(c, (std::vector<float>{2, 4, 3, 2}));
  EXPECT_EQ(arg, (std::vector<std::int32_t>{0, 1, 42, 1, 1, 42}));
}

TEST(ReferenceBatched, batched_backward_routes_each_slice_through_its_argmax) {
  // Two products m = n = k = 2; argmax per slice; MaxMul reads the other operand.
  const std::vector<float> gc = {1, 2, 3, 4, 10, 20, 30, 40};
  const std::vector<std::int32_t> arg = {0, 0, 1, -1, 1, 1, 0, 5};  // -1 and 5: skipped
  const std::vector<float> b = {2, 3, 4, 5, 1, 1, 1, 1};
  std::vector<float> ga(8, 42), gb(8, 42);
  backward_a_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, 4, arg.data(), 2, 4, nullptr, 2, 4,
                                     ga.data(), 2, 4, 2);
  // Slice 0: dA(0,0) = 1 + 2, dA(1,1) = 3; slice 1: dA(0,1) = 10 + 20, dA(1,0) = 30.
  EXPECT_EQ(ga, (std::vector<float>{3, 0, 0, 3, 0, 30, 30, 0}));
  backward_b_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, 4, arg.data(), 2, 4, nullptr, 2, 4,
                                     gb.data(), 2, 4, 2);
  // Slice 0: dB(0,0) = 1, dB(0,1) = 2, dB(1,0) = 3; slice 1: dB(1,0) = 10, dB(1,1) = 20, dB(0,0) = 30.
  EXPECT_EQ(gb, (std::vector<float>{1, 2, 3, 0, 30, 0, 10, 20}));
  backward_a_batched<MaxMul, float>(Trans::kNo, Trans::kNo, 2, 2, 2, gc.data(), 2, 4, arg.data(), 2, 4, b.data(), 2, 4,
                                    ga.data(), 2, 4, 2);
  // Slice 0: dA(0,0) = 1 * b(0,0) + 2 * b(0,1) = 2 + 6, dA(1,1) = 3 * b(1,0) = 12.
  EXPECT_EQ(ga, (std::vector<float>{8, 0, 0, 12, 0, 30, 30, 0}));
}

TEST(ReferenceBatched, backward_sums_in_increasing_j_from_zero) {
  // Three terms into one element of dA: (0 + 1e8) + 1 rounds to 1e8 in f32,
  // then - 1e8 gives 0; another order would give 1. The GPU's batched pass
  // adds in this order too.
  const std::vector<float> gc = {1e8f, 1, -1e8f};
  const std::vector<std::int32_t> arg = {0, 0, 0};
  std::vector<float> ga(1, 42);
  backward_a_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 3, 1, gc.data(), 3, 0, arg.data(), 3, 0, nullptr, 3, 0,
                                     ga.data(), 1, 1, 1);
  EXPECT_EQ(ga[0], 0.0f);
}

}  // namespace
}  // namespace tropical::reference
