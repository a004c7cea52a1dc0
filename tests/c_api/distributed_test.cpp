// The C ABI's distributed einsum runs (src/c_api/distributed.cpp): every argument a caller can get wrong is a
// status and a message naming it, before the driver or NCCL is touched (no GPU or NCCL needed), never an
// exception.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tropical/tropical.h"

namespace {

std::string last_error() { return tropical_last_error(); }

/// ij,jk->ik over 2 x 3 and 3 x 2 operands (labels 0, 1, 2).
void* make_plan(tropical_semiring semiring, tropical_dtype dtype) {
  const int64_t ranks[] = {2, 2}, labels[] = {0, 1, 1, 2}, shapes[] = {2, 3, 3, 2}, output[] = {0, 2};
  void* plan = nullptr;
  EXPECT_EQ(
      tropical_einsum_plan_create(semiring, dtype, 2, ranks, labels, shapes, 2, output, 0, nullptr, 0, &plan),
      TROPICAL_OK)
      << last_error();
  return plan;
}

void* some_comm() { return reinterpret_cast<void*>(std::uintptr_t{0x1000}); }

TEST(CAbiDistributed, a_null_plan_communicator_operand_array_output_or_assignment_is_an_invalid_argument) {
  void* plan = make_plan(TROPICAL_MAXPLUS, TROPICAL_F32);
  float a[6] = {}, b[6] = {}, c[4] = {};
  const void* operands[] = {a, b};
  EXPECT_EQ(tropical_einsum_plan_run_distributed(nullptr, operands, c, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the einsum plan is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed(plan, operands, c, nullptr, nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the NCCL communicator is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed(plan, nullptr, c, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("operands array is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed(plan, operands, nullptr, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the einsum output is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed(plan, operands, reinterpret_cast<char*>(c) + 1, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("output"), std::string::npos) << last_error();
  int64_t assignment[4] = {};
  EXPECT_EQ(tropical_einsum_plan_run_distributed_argmax(plan, operands, c, nullptr, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the einsum assignment is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed_argmax(plan, operands, c, assignment, nullptr, nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the NCCL communicator is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_destroy(plan), TROPICAL_OK);
}

TEST(CAbiDistributed, counting_and_value_plans_each_refuse_the_others_run) {
  void* values_plan = make_plan(TROPICAL_MINPLUS, TROPICAL_I32);
  void* counting_plan = make_plan(TROPICAL_COUNTING, TROPICAL_F64);
  double v[6] = {}, w[6] = {}, ov[4] = {}, oc[4] = {};
  const void* values[] = {v, w};
  const void* counts[] = {v, w};
  EXPECT_EQ(tropical_einsum_plan_run_distributed(counting_plan, values, ov, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("tropical_einsum_plan_run_distributed_counting"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed_counting(values_plan, values, counts, ov, oc, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("not made for TROPICAL_COUNTING"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed_counting(counting_plan, values, counts, ov, oc, nullptr, nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the NCCL communicator is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_run_distributed_counting(counting_plan, values, nullptr, ov, oc, some_comm(), nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("operands array is null"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_destroy(values_plan), TROPICAL_OK);
  EXPECT_EQ(tropical_einsum_plan_destroy(counting_plan), TROPICAL_OK);
}

}  // namespace
