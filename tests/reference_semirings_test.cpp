// Hand-checked cases for the bottleneck (MaxMin, MinMax) and boolean (AndOr)
// semirings of the CPU reference: identities, infinities, integer extremes,
// NaN, ties and argmax.
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

/// C and argmax of A (m x k) (x) B (k x n), dense.
template <class S, class T>
struct Product {
  std::vector<T> c;
  std::vector<std::int32_t> arg;
};

template <class S, class T>
Product<S, T> product(const std::vector<T>& a, const std::vector<T>& b, int m, int n, int k) {
  Product<S, T> r{std::vector<T>(static_cast<size_t>(m * n)), std::vector<std::int32_t>(static_cast<size_t>(m * n))};
  gemm_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, r.c.data(), n, r.arg.data(), n);
  std::vector<T> plain(r.c.size());
  gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, plain.data(), n);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_TRUE(plain[i] == r.c[i] || (plain[i] != plain[i] && r.c[i] != r.c[i])) << "gemm and gemm_argmax differ at " << i;
  }
  return r;
}

TEST(ReferenceSemirings, identities_of_the_new_semirings) {
  EXPECT_EQ((zero<MaxMin, float>()), -kInf);
  EXPECT_EQ((one<MaxMin, float>()), kInf);
  EXPECT_EQ((zero<MinMax, double>()), std::numeric_limits<double>::infinity());
  EXPECT_EQ((one<MinMax, double>()), -std::numeric_limits<double>::infinity());
  EXPECT_EQ((zero<MaxMin, std::int32_t>()), std::numeric_limits<std::int32_t>::lowest());
  EXPECT_EQ((one<MaxMin, std::int32_t>()), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ((zero<MinMax, std::int64_t>()), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ((one<MinMax, std::int64_t>()), std::numeric_limits<std::int64_t>::lowest());
  EXPECT_EQ((zero<AndOr, std::uint8_t>()), 0);
  EXPECT_EQ((one<AndOr, std::uint8_t>()), 1);
  // The one is neutral and the zero absorbs.
  EXPECT_EQ((mul<MaxMin, float>(kInf, 3.5f)), 3.5f);
  EXPECT_EQ((mul<MaxMin, float>(-kInf, 3.5f)), -kInf);
  EXPECT_EQ((mul<MinMax, float>(-kInf, 3.5f)), 3.5f);
  EXPECT_EQ((mul<MinMax, float>(kInf, 3.5f)), kInf);
  EXPECT_EQ((add<MaxMin, float>(-kInf, 3.5f)), 3.5f);
  EXPECT_EQ((add<MinMax, float>(kInf, 3.5f)), 3.5f);
}

TEST(ReferenceSemirings, maxmin_is_the_widest_path_with_its_witness) {
  // C(i, j) = max_k min(a(i, k), b(k, j)).
  const auto r = product<MaxMin, float>({1, 5, 3, -kInf}, {4, 2, 6, 7}, 2, 2, 2);
  EXPECT_EQ(r.c, (std::vector<float>{5, 5, 3, 2}));
  EXPECT_EQ(r.arg, (std::vector<std::int32_t>{1, 1, 0, 0}));
  // Ties go to the smallest k: min(2, 5) = min(3, 2) = 2.
  const auto tie = product<MaxMin, float>({2, 3}, {5, 2}, 1, 1, 2);
  EXPECT_EQ(tie.c[0], 2);
  EXPECT_EQ(tie.arg[0], 0);
  // A row of the zero: C is the zero and nothing won.
  const auto none = product<MaxMin, float>({-kInf, -kInf}, {1, 2}, 1, 1, 2);
  EXPECT_EQ(none.c[0], -kInf);
  EXPECT_EQ(none.arg[0], -1);
  // +inf is the one: min(+inf, +inf) = +inf wins.
  const auto inf = product<MaxMin, float>({kInf, 1}, {kInf, 9}, 1, 1, 2);
  EXPECT_EQ(inf.c[0], kInf);
  EXPECT_EQ(inf.arg[0], 0);
}

TEST(ReferenceSemirings, minmax_is_the_minimax_path_with_its_witness) {
  // C(i, j) = min_k max(a(i, k), b(k, j)).
  const auto r = product<MinMax, double>({9, 1, 3, 4}, {1, 8, 2, 5}, 2, 2, 2);
  // (0,0): min(max(9,1), max(1,2)) = 2 at k = 1; (0,1): min(max(9,8), max(1,5)) = 5 at 1;
  // (1,0): min(max(3,1), max(4,2)) = 3 at 0; (1,1): min(max(3,8), max(4,5)) = 5 at 1.
  EXPECT_EQ(r.c, (std::vector<double>{2, 5, 3, 5}));
  EXPECT_EQ(r.arg, (std::vector<std::int32_t>{1, 1, 0, 1}));
  const double inf = std::numeric_limits<double>::infinity();
  const auto none = product<MinMax, double>({inf, 2}, {1, inf}, 1, 1, 2);
  EXPECT_EQ(none.c[0], inf);
  EXPECT_EQ(none.arg[0], -1);
}

TEST(ReferenceSemirings, nan_operands_of_min_and_max_never_win) {
  EXPECT_TRUE(std::isnan((mul<MaxMin, float>(kNaN, 3))));
  EXPECT_TRUE(std::isnan((mul<MaxMin, float>(3, kNaN))));
  EXPECT_TRUE(std::isnan((mul<MinMax, double>(std::nan(""), -1.0))));
  const auto r = product<MaxMin, float>({kNaN, 1}, {5, 3}, 1, 1, 2);
  EXPECT_EQ(r.c[0], 1);  // min(NaN, 5) is NaN and ignored; min(1, 3) = 1
  EXPECT_EQ(r.arg[0], 1);
  const auto all = product<MinMax, float>({kNaN, 1}, {5, kNaN}, 1, 1, 2);
  EXPECT_EQ(all.c[0], kInf);
  EXPECT_EQ(all.arg[0], -1);
}

TEST(ReferenceSemirings, integer_extremes_are_exact_without_saturation) {
  using L32 = std::numeric_limits<std::int32_t>;
  using L64 = std::numeric_limits<std::int64_t>;
  const auto r = product<MaxMin, std::int32_t>({L32::lowest(), L32::max()}, {L32::max(), L32::max()}, 1, 1, 2);
  EXPECT_EQ(r.c[0], L32::max());
  EXPECT_EQ(r.arg[0], 1);
  // MinMax: max(INT64_MAX, 0) is the zero (never wins), max(MIN, MIN) = MIN wins at k = 1.
  const auto s = product<MinMax, std::int64_t>({L64::max(), L64::lowest()}, {0, L64::lowest()}, 1, 1, 2);
  EXPECT_EQ(s.c[0], L64::lowest());
  EXPECT_EQ(s.arg[0], 1);
  EXPECT_EQ((mul<MaxMin, std::int64_t>(L64::lowest() + 1, -5)), L64::lowest() + 1);
  EXPECT_EQ((mul<MinMax, std::int32_t>(L32::max() - 1, L32::lowest())), L32::max() - 1);
}

TEST(ReferenceSemirings, andor_treats_any_nonzero_byte_as_true_and_writes_0_or_1) {
  EXPECT_EQ((mul<AndOr, std::uint8_t>(7, 255)), 1);
  EXPECT_EQ((mul<AndOr, std::uint8_t>(0, 255)), 0);
  EXPECT_EQ((add<AndOr, std::uint8_t>(0, 128)), 1);
  EXPECT_EQ((add<AndOr, std::uint8_t>(0, 0)), 0);
  // C(i, j) = or_k (a(i, k) and b(k, j)); argmax: the first k with both true.
  const auto r = product<AndOr, std::uint8_t>({0, 7, 2, 0}, {0, 255, 3, 0}, 2, 2, 2);
  EXPECT_EQ(r.c, (std::vector<std::uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(r.arg, (std::vector<std::int32_t>{1, -1, -1, 0}));
  // Several true products: the first wins, C is 1 (not the or of the bytes).
  const auto first = product<AndOr, std::uint8_t>({2, 4, 8}, {16, 32, 64}, 1, 1, 3);
  EXPECT_EQ(first.c[0], 1);
  EXPECT_EQ(first.arg[0], 0);
}

TEST(ReferenceSemirings, transposes_work_for_the_new_semirings) {
  // A (2 x 3) stored transposed (3 x 2), B (3 x 1) stored transposed (1 x 3).
  const std::vector<std::uint8_t> at = {1, 0, 0, 3, 5, 0}, bt = {0, 9, 1};
  std::vector<std::uint8_t> c(2, 42);
  std::vector<std::int32_t> arg(2, 42);
  gemm_argmax<AndOr, std::uint8_t>(Trans::kYes, Trans::kYes, 2, 1, 3, at.data(), 2, bt.data(), 3, c.data(), 1,
                                   arg.data(), 1);
  // Row 0 of A = (1, 0, 5): and with (0, 9, 1) -> true at k = 2; row 1 = (0, 3, 0): true at k = 1.
  EXPECT_EQ(c, (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(arg, (std::vector<std::int32_t>{2, 1}));
}

}  // namespace
}  // namespace tropical::reference
