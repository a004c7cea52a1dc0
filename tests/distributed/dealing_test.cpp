// Which slices each rank takes and which collective a run makes (src/distributed/dealing.cpp, collective.cpp):
// pure host functions, checked without NCCL or a GPU. dealing_test.py checks the same dealing against
// python/tropical/distributed.py's on the same plans.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../src/distributed/collective.hpp"
#include "../../src/distributed/dealing.hpp"
#include "../../src/einsum/program.hpp"
#include "../einsum/random_networks.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using distributed_detail::Collective;
using distributed_detail::NcclOp;
using distributed_detail::NcclType;
using einsum_test::Pair;

/// A ring of five 3 x 3 matrices sliced to single elements: 27 slices over three sliced labels of 3.
EinsumPlan sliced_ring() { return EinsumPlan("ab,bc,cd,de,ea->", {{3, 3}, {3, 3}, {3, 3}, {3, 3}, {3, 3}}, {{}, 1}); }

TEST(DistributedDealing, every_slice_goes_to_one_rank_the_one_of_its_index_modulo_the_size_in_index_order) {
  const EinsumPlan plan = sliced_ring();
  const std::int64_t slices = plan.info().slices;
  ASSERT_GT(slices, 4) << "the plan must have more slices than the largest communicator here";
  for (int size = 1; size <= 4; ++size) {
    std::vector<int> owner(static_cast<std::size_t>(slices), -1);
    for (int rank = 0; rank < size; ++rank) {
      const std::vector<std::int64_t> mine = distributed_slices(plan, rank, size);
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (i > 0) {
          EXPECT_LT(mine[i - 1], mine[i]) << "in index order";
        }
        EXPECT_EQ(mine[i] % size, rank);
        ASSERT_EQ(owner[static_cast<std::size_t>(mine[i])], -1) << "slice " << mine[i] << " dealt twice";
        owner[static_cast<std::size_t>(mine[i])] = rank;
      }
    }
    for (std::int64_t s = 0; s < slices; ++s) EXPECT_NE(owner[static_cast<std::size_t>(s)], -1) << "slice " << s;
  }
}

TEST(DistributedDealing, ranks_past_the_slice_count_get_none_and_an_unsliced_plan_goes_to_rank_zero) {
  const EinsumPlan unsliced("ab,bc->ac", {{2, 3}, {3, 2}});
  ASSERT_EQ(unsliced.info().slices, 1);
  EXPECT_EQ(distributed_slices(unsliced, 0, 3), std::vector<std::int64_t>{0});
  EXPECT_TRUE(distributed_slices(unsliced, 1, 3).empty());
  EXPECT_TRUE(distributed_slices(unsliced, 2, 3).empty());
  EXPECT_EQ(distributed_detail::holders(1, 3), 1);
  EXPECT_EQ(distributed_detail::holders(9, 4), 4);
}

TEST(DistributedDealing, slice_index_count_slices_as_the_runners_do_the_last_sliced_label_fastest) {
  const EinsumPlan plan = sliced_ring();
  const auto& program = plan.program().program;
  ASSERT_EQ(plan.info().sliced.size(), program.slice_extents.size());
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  std::int64_t s = 0;
  do {
    EXPECT_EQ(slice_index(plan, s), index) << "slice " << s;
    ++s;
  } while (einsum_detail::next_slice(program, index));
  EXPECT_EQ(s, plan.info().slices);
}

TEST(DistributedDealing, a_rank_outside_the_communicator_or_a_slice_outside_the_plan_is_refused) {
  const EinsumPlan plan = sliced_ring();
  EXPECT_THROW(distributed_slices(plan, 2, 2), InvalidArgument);
  EXPECT_THROW(distributed_slices(plan, -1, 2), InvalidArgument);
  EXPECT_THROW(distributed_slices(plan, 0, 0), InvalidArgument);
  EXPECT_THROW(slice_index(plan, plan.info().slices), InvalidArgument);
  EXPECT_THROW(slice_index(plan, -1), InvalidArgument);
}

template <class Pair>
class DistributedCollective : public ::testing::Test {};

using Pairs = ::testing::Types<
    Pair<MaxPlus, float>, Pair<MaxPlus, double>, Pair<MaxPlus, std::int32_t>, Pair<MaxPlus, std::int64_t>,
    Pair<MaxPlus, std::int16_t>, Pair<MinPlus, float>, Pair<MinPlus, double>, Pair<MinPlus, std::int32_t>,
    Pair<MinPlus, std::int64_t>, Pair<MinPlus, std::int16_t>, Pair<MaxMul, float>, Pair<MaxMul, std::int64_t>,
    Pair<MaxMul, std::int16_t>, Pair<MaxMin, float>, Pair<MaxMin, std::int32_t>, Pair<MaxMin, std::int16_t>,
    Pair<MinMax, double>, Pair<MinMax, std::int64_t>, Pair<MinMax, std::int16_t>, Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(DistributedCollective, Pairs);

template <class T>
NcclType nccl_type() {
  if constexpr (std::is_same_v<T, float>) return NcclType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return NcclType::kFloat64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return NcclType::kInt32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return NcclType::kInt64;
  else return NcclType::kUint8;
}

TYPED_TEST(DistributedCollective, all_reduce_max_or_min_where_nccl_has_the_type_else_a_gather_of_bytes) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  const detail::DistributedKernels& k = detail::distributed_kernels<S, T>();
  const Collective c = distributed_detail::collective_for(k.add, k.element);
  // nccl.h: ncclUint8 1, ncclInt32 2, ncclInt64 4, ncclFloat32 7, ncclFloat64 8; ncclMax 2, ncclMin 3.
  EXPECT_EQ(c.op, S::kAdd == AddKind::kMin ? NcclOp::kMin : NcclOp::kMax);
  if constexpr (std::is_same_v<T, std::int16_t>) {
    EXPECT_FALSE(c.all_reduce);
    EXPECT_EQ(c.type, NcclType::kUint8);  // gathered as bytes: an all-gather only copies
  } else {
    EXPECT_TRUE(c.all_reduce);
    EXPECT_EQ(c.type, nccl_type<T>());
  }
  const T zero = reference::zero<S, T>();
  EXPECT_EQ(*static_cast<const T*>(k.zero), zero);
}

TEST(DistributedCollective, the_enumerators_have_nccl_h_values) {
  EXPECT_EQ(static_cast<int>(NcclType::kUint8), 1);
  EXPECT_EQ(static_cast<int>(NcclType::kInt32), 2);
  EXPECT_EQ(static_cast<int>(NcclType::kInt64), 4);
  EXPECT_EQ(static_cast<int>(NcclType::kFloat32), 7);
  EXPECT_EQ(static_cast<int>(NcclType::kFloat64), 8);
  EXPECT_EQ(static_cast<int>(NcclOp::kMax), 2);
  EXPECT_EQ(static_cast<int>(NcclOp::kMin), 3);
}

}  // namespace
}  // namespace tropical
