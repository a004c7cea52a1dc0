// Running plans on host arrays (src/einsum/run.cpp, host.cpp, program.cpp): random small networks against a
// brute-force sum over every assignment of the labels, for every feature a tensor network uses (batch labels,
// hyperedges, labels reduced inside one operand, repeated labels, scalar output, one operand), greedy and
// random paths, and sliced runs equal to unsliced ones bit for bit.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "random_networks.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"
#include "tropical/reference.hpp"

namespace tropical {
namespace {

using einsum_test::brute_force;
using einsum_test::describe;
using einsum_test::Net;
using einsum_test::Pair;
using einsum_test::random_net;
using einsum_test::random_operands;

template <class S, class T>
std::vector<T> run(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands) {
  std::vector<const T*> pointers;
  for (const auto& x : operands) pointers.push_back(x.data());
  std::vector<T> out(plan.output_size());
  einsum_host<S, T>(plan, pointers, out.data(), nullptr, 1);
  return out;
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return a == b;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// A random opt_einsum-format path for `count` operands (pairs of random positions).
std::vector<std::vector<int>> random_path(int count, std::mt19937& rng) {
  std::vector<std::vector<int>> path;
  for (int remaining = count; remaining > 1; --remaining) {
    const int a = static_cast<int>(rng() % remaining);
    int b = static_cast<int>(rng() % (remaining - 1));
    if (b >= a) ++b;
    path.push_back({a, b});
  }
  return path;
}

template <class Pair>
class EinsumHost : public ::testing::Test {};

using Pairs = ::testing::Types<Pair<MaxPlus, float>, Pair<MaxPlus, double>, Pair<MinPlus, float>,
                               Pair<MaxMul, double>, Pair<MaxMin, float>, Pair<MinMax, double>,
                               Pair<MaxPlus, std::int32_t>, Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(EinsumHost, Pairs);

TYPED_TEST(EinsumHost, random_networks_equal_the_brute_force_sum_greedy_random_paths_and_sliced) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937 rng(12345);
  int sliced_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Net net = random_net(rng);
    SCOPED_TRACE(describe(net));
    const auto operands = random_operands<S, T>(net, rng);
    const auto expected = brute_force<S, T>(net, operands);
    const EinsumPlan greedy(net.inputs, net.output, net.shapes());
    const auto got = run<S, T>(greedy, operands);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(same_value(got[i], expected[i])) << "element " << i;
    const EinsumPlan given(net.inputs, net.output, net.shapes(),
                           {random_path(static_cast<int>(net.inputs.size()), rng), 0});
    const auto by_path = run<S, T>(given, operands);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(same_value(by_path[i], expected[i])) << "element " << i;
    // The same tree sliced under every limit that can be met: the same bits.
    for (std::int64_t limit : {1, 2, 4, 8}) {
      try {
        const EinsumPlan sliced(net.inputs, net.output, net.shapes(), {greedy.info().path, limit});
        if (sliced.info().slices > 1) ++sliced_runs;
        ASSERT_TRUE(same_bits(run<S, T>(sliced, operands), got)) << "memory_limit " << limit;
      } catch (const InvalidArgument&) {
        // only output labels are left to slice, or the output itself is larger than the limit
      }
    }
  }
  EXPECT_GT(sliced_runs, 100);
}

TEST(EinsumHost, equation_with_batch_diagonal_and_reduced_labels) {
  // b: batch (in both and the output); ii: a diagonal; k: reduced inside operand 1; j: contracted.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};  // b i i (2 x 2 x 2)
  const std::vector<float> b = {0, 1, 2,  3,  4,  5,  6,  7,
                                8, 9, 10, 11, 12, 13, 14, 15};  // b i j k (2 x 2 x 2 x 2)
  const EinsumPlan plan("bii,bijk->bj", {{2, 2, 2}, {2, 2, 2, 2}});
  std::vector<float> out(4);
  const std::vector<const float*> ops = {a.data(), b.data()};
  einsum_host<MaxPlus, float>(plan, ops, out.data());
  // out[b][j] = max_i (a[b][i][i] + max_k b[b][i][j][k])
  for (int bb = 0; bb < 2; ++bb) {
    for (int j = 0; j < 2; ++j) {
      float best = -INFINITY;
      for (int i = 0; i < 2; ++i) {
        const float bk = std::max(b[bb * 8 + i * 4 + j * 2], b[bb * 8 + i * 4 + j * 2 + 1]);
        best = std::max(best, a[bb * 4 + i * 2 + i] + bk);
      }
      EXPECT_EQ(out[bb * 2 + j], best);
    }
  }
}

TEST(EinsumHost, a_tall_product_runs_transposed_with_the_same_values_and_argmax) {
  // ij,jk->ik with 2^19 rows i and 3 columns k: the step runs as its transpose (more rows than the tall
  // threshold), written (k, i); the output copied back into (i, k). Values and winners as a direct loop.
  const std::int64_t rows = std::int64_t{1} << 19;
  std::vector<float> a(static_cast<std::size_t>(rows * 2)), b = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -3.0f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> draw(-8, 8);
  for (auto& x : a) x = static_cast<float>(draw(rng));  // ties on purpose: the smallest j wins
  const EinsumPlan plan("ij,jk->ik", {{rows, 2}, {2, 3}});
  std::vector<float> out(static_cast<std::size_t>(rows * 3));
  std::vector<std::int64_t> assignment(static_cast<std::size_t>(rows * 3));
  const std::vector<const float*> ops = {a.data(), b.data()};
  einsum_argmax_host<MaxPlus, float>(plan, ops, out.data(), assignment.data());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (int k = 0; k < 3; ++k) {
      const float p0 = a[i * 2] + b[k], p1 = a[i * 2 + 1] + b[3 + k];
      const auto at = static_cast<std::size_t>(i * 3 + k);
      ASSERT_EQ(out[at], std::max(p0, p1)) << i << " " << k;
      ASSERT_EQ(assignment[at], p1 > p0 ? 1 : 0) << i << " " << k;
    }
  }
}

TEST(EinsumHost, a_nan_never_wins) {
  const std::vector<double> a = {NAN, 1.0, 2.0};
  const EinsumPlan plan("i->", {{3}});
  double out = 0;
  const std::vector<const double*> ops = {a.data()};
  einsum_host<MaxPlus, double>(plan, ops, &out);
  EXPECT_EQ(out, 2.0);
}

TEST(EinsumHost, wrong_operand_count_is_rejected) {
  const EinsumPlan plan("ij,jk->ik", {{2, 3}, {3, 4}});
  const std::vector<float> a(6);
  std::vector<float> out(8);
  const std::vector<const float*> ops = {a.data()};
  EXPECT_THROW((einsum_host<MaxPlus, float>(plan, ops, out.data())), InvalidArgument);
}

}  // namespace
}  // namespace tropical
