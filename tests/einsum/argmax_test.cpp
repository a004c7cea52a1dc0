// The argmax mode on host arrays (src/einsum/argmax.cpp): on random small networks, the values equal the
// plain run's bit for bit, and at every output element the assignment traced back reaches the value (the
// product of the operands' elements at it is the result), sliced or not.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "random_networks.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using einsum_test::Net;

template <class S, class T>
void check_assignment(const Net& net, const EinsumPlan& plan, const std::vector<std::vector<T>>& operands,
                      const std::vector<T>& values, const std::vector<std::int64_t>& assignment) {
  const std::vector<int> reduced = plan.reduced_labels();
  const std::int64_t out = plan.output_size();
  for (std::int64_t o = 0; o < out; ++o) {
    if (values[o] == reference::zero<S, T>()) continue;  // nothing won: any assignment
    std::map<int, std::int64_t> at;
    std::int64_t rest = o;
    for (std::size_t i = net.output.size(); i-- > 0;) {
      at[net.output[i]] = rest % net.sizes.at(net.output[i]);
      rest /= net.sizes.at(net.output[i]);
    }
    for (std::size_t r = 0; r < reduced.size(); ++r) {
      const std::int64_t v = assignment[r * out + o];
      ASSERT_GE(v, 0);
      ASSERT_LT(v, net.sizes.at(reduced[r]));
      at[reduced[r]] = v;
    }
    T p = reference::one<S, T>();
    for (std::size_t i = 0; i < net.inputs.size(); ++i) {
      std::int64_t offset = 0;
      for (int label : net.inputs[i]) offset = offset * net.sizes.at(label) + at.at(label);
      p = reference::mul<S, T>(p, operands[i][offset]);
    }
    ASSERT_EQ(p, values[o]) << "output element " << o;
  }
}

template <class Pair>
class EinsumArgmax : public ::testing::Test {};

using Pairs =
    ::testing::Types<einsum_test::Pair<MaxPlus, float>, einsum_test::Pair<MinPlus, double>,
                     einsum_test::Pair<MaxMul, float>, einsum_test::Pair<MaxMin, double>,
                     einsum_test::Pair<MaxPlus, std::int64_t>, einsum_test::Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(EinsumArgmax, Pairs);

TYPED_TEST(EinsumArgmax, assignments_reach_the_values_sliced_or_not) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    const Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    std::vector<const T*> pointers;
    for (const auto& x : operands) pointers.push_back(x.data());
    const EinsumPlan plan(net.inputs, net.output, net.shapes());
    std::vector<T> plain(plan.output_size());
    einsum_host<S, T>(plan, pointers, plain.data(), nullptr, 1);
    for (std::int64_t limit : {0, 2, 4}) {
      try {
        const EinsumPlan p(net.inputs, net.output, net.shapes(), {plan.info().path, limit});
        std::vector<T> values(p.output_size());
        std::vector<std::int64_t> assignment(p.reduced_labels().size() * p.output_size(), -1);
        einsum_argmax_host<S, T>(p, pointers, values.data(), assignment.data(), nullptr, 1);
        ASSERT_EQ(std::memcmp(values.data(), plain.data(), values.size() * sizeof(T)), 0)
            << "limit " << limit;
        check_assignment<S, T>(net, p, operands, values, assignment);
      } catch (const InvalidArgument&) {
        // the limit cannot be met by slicing reduced labels
      }
    }
  }
}

TEST(EinsumArgmax, ties_go_to_the_smallest_index) {
  const std::vector<float> a = {1, 3, 3, 2};
  const EinsumPlan plan("i->", {{4}});
  float value = 0;
  std::int64_t i = -1;
  const std::vector<const float*> ops = {a.data()};
  einsum_argmax_host<MaxPlus, float>(plan, ops, &value, &i);
  EXPECT_EQ(value, 3.0f);
  EXPECT_EQ(i, 1);
}

}  // namespace
}  // namespace tropical
