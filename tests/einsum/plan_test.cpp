// The planner (src/einsum/plan.cpp, network.cpp, tree.cpp, greedy.cpp, slicing.cpp): the Python planner's
// trees, costs and sliced labels, and bad networks rejected with messages that name the fault.

#include <gtest/gtest.h>

#include <string>

#include "python_plans.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using Shapes = std::vector<std::vector<std::int64_t>>;

Shapes binary_shapes(const std::vector<std::vector<int>>& inputs) {
  Shapes shapes;
  for (const auto& term : inputs) shapes.emplace_back(term.size(), 2);
  return shapes;
}

TEST(EinsumPlan, greedy_order_and_costs_match_the_python_planner_on_uniform_networks) {
  for (const auto& c : einsum_test::uniform_cases()) {
    const EinsumPlan plan(c.inputs, {}, binary_shapes(c.inputs), {{}, c.memory_limit});
    EXPECT_EQ(plan.info().path, c.path);
    EXPECT_DOUBLE_EQ(plan.info().log2_time, c.log2_time);
    EXPECT_DOUBLE_EQ(plan.info().log2_space, c.log2_space);
    EXPECT_EQ(plan.info().sliced, c.sliced);
  }
}

TEST(EinsumPlan, greedy_order_and_costs_match_the_python_planner_on_sized_networks) {
  for (const auto& c : einsum_test::sized_cases()) {
    const EinsumPlan plan(c.inputs, c.output, c.shapes, {{}, c.memory_limit});
    EXPECT_EQ(plan.info().path, c.path);
    EXPECT_DOUBLE_EQ(plan.info().log2_time, c.log2_time);
    EXPECT_DOUBLE_EQ(plan.info().log2_space, c.log2_space);
    EXPECT_EQ(plan.info().sliced, c.sliced);
  }
}

TEST(EinsumPlan, a_given_path_is_the_order) {
  const EinsumPlan plan("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {{{1, 2}, {0, 1}}});
  EXPECT_EQ(plan.info().path, (std::vector<std::vector<int>>{{1, 2}, {0, 1}}));
  const EinsumPlan triple("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {{{0, 1, 2}}});
  EXPECT_EQ(triple.info().path, (std::vector<std::vector<int>>{{0, 1}, {0, 1}}));
}

TEST(EinsumPlan, implicit_output_is_the_labels_seen_once_in_alphabetical_order) {
  const EinsumPlan plan("kj,ji", {{4, 3}, {3, 2}});
  EXPECT_EQ(plan.output_shape(), (std::vector<std::int64_t>{2, 4}));
}

TEST(EinsumPlan, scalar_output_and_one_operand) {
  const EinsumPlan scalar("ij->", {{2, 3}});
  EXPECT_TRUE(scalar.output_shape().empty());
  EXPECT_EQ(scalar.output_size(), 1);
  EXPECT_EQ(scalar.info().path, (std::vector<std::vector<int>>{{0}}));
}

TEST(EinsumPlan, workspace_grows_with_the_element_size) {
  const EinsumPlan plan("ij,jk,kl->il", {{20, 30}, {30, 40}, {40, 50}});
  EXPECT_GT(plan.workspace_bytes(4), 0u);
  EXPECT_EQ(plan.workspace_bytes(8), 2 * plan.workspace_bytes(4));
}

/// The message of the InvalidArgument that f throws ("" if none).
template <class F>
std::string rejection(F f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(EinsumPlan, bad_networks_are_rejected_naming_the_fault) {
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->iz", {{2, 3}, {3, 4}});
            }).find("output label 'z' appears in no operand"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->ik", {{2, 3}, {5, 4}});
            }).find("label 'j' has size 3 in one operand but 5 in operand 1"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->ik", {{2, 0}, {0, 4}});
            }).find("label 'j' has dimension 0"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {{{0, 1}}});
            }).find("the path does not cover the operands: 2 operands remain"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->ik", {{2, 3}, {3, 4}}, {{{0, 2}}});
            }).find("step 0 of the path"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan({{0, 1}, {1, 2}}, {0, 7}, {{2, 3}, {3, 4}});
            }).find("output label 7 appears in no operand"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan({{0, 1}, {1, 2}}, {0, 0}, {{2, 3}, {3, 4}});
            }).find("appears twice"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan({{0, 1}}, {0}, {{2}});
            }).find("operand 0 has 1 dimension(s) but its term"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,j", {{2, 3}});
            }).find("has 2 operand(s) but 1 were given"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("i1->i", {{2, 3}});
            }).find("label '1' is not a letter"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->ik", {{8, 3}, {3, 8}}, {{}, 32});
            }).find("smaller than the output"),
            std::string::npos);
  EXPECT_NE(rejection([] {
              EinsumPlan("ij,jk->ik", {{8, 3}, {3, 8}}, {{}, 64});
            }).find(""),
            std::string::npos);
}

TEST(EinsumPlan, sizes_past_64_bits_are_rejected) {
  // 70 labels of size 2 in the output: 2^70 elements.
  std::vector<int> output;
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<std::int64_t>> shapes;
  for (int label = 0; label < 70; ++label) {
    inputs.push_back({label});
    shapes.push_back({2});
    output.push_back(label);
  }
  EXPECT_NE(rejection([&] { EinsumPlan(inputs, output, shapes); }).find("more than 2^62"), std::string::npos);
  // A (i's) (x) B (j's) first keeps every label for D (i's) and E (j's): an intermediate of 2^70.
  std::vector<int> is, js;
  for (int label = 0; label < 35; ++label) {
    is.push_back(label);
    js.push_back(35 + label);
  }
  const std::vector<std::int64_t> half(35, 2);
  EXPECT_NE(rejection([&] {
              EinsumPlan({is, js, is, js}, {}, {half, half, half, half}, {{{0, 1}, {0, 2}, {0, 1}}, 0});
            }).find("past 64-bit sizes"),
            std::string::npos);
  // ab,bc,a,c-> with a = c = 2^31, b = 1: every tensor within 2^62 elements, but the workspace's bytes would
  // wrap 64 bits (a plan that once reported 256 bytes and let a run write 2^62 elements into them).
  const std::int64_t big = std::int64_t{1} << 31;
  EXPECT_NE(rejection([&] {
              EinsumPlan({{0, 1}, {1, 2}, {0}, {2}}, {}, {{big, 1}, {1, big}, {big}, {big}},
                         {{{0, 1}, {0, 1}, {0, 1}}, 0});
            }).find("workspace needs more than 2^58 elements"),
            std::string::npos);
}

}  // namespace
}  // namespace tropical
