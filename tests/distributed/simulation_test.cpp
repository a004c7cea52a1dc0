// A distributed run simulated on the CPU: every rank's part (run.hpp's run_slices over its dealt slices) on the
// host backend, then the collective the run would make (collective.hpp) done on the host: an all-reduce with
// NCCL's max or min, or an all-gather merged by merge.hpp's merge_rows on the host backend. For random networks
// under several memory limits, with 1 to 4 ranks, the result must have the bits of one process's einsum_host:
// what makes the device run right by construction (the device runs the same steps on the device backend).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../../src/distributed/collective.hpp"
#include "../../src/distributed/dealing.hpp"
#include "../../src/distributed/merge.hpp"
#include "../../src/einsum/host.hpp"
#include "../../src/einsum/program.hpp"
#include "../einsum/random_networks.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using einsum_test::Net;
using einsum_test::Pair;

template <class S, class T>
std::vector<T> one_process(const EinsumPlan& plan, const std::vector<const T*>& operands) {
  std::vector<T> out(static_cast<std::size_t>(plan.output_size()));
  einsum_host<S, T>(plan, operands, out.data(), nullptr, 1);
  return out;
}

/// NCCL's reduction of two elements (ncclMax / ncclMin).
template <class T>
T reduce(distributed_detail::NcclOp op, T a, T b) {
  return op == distributed_detail::NcclOp::kMax ? std::max(a, b) : std::min(a, b);
}

template <class S, class T>
std::vector<T> distributed(const EinsumPlan& plan, const std::vector<const T*>& operands, int size) {
  const detail::EinsumKernels& kernels = detail::einsum_kernels<S, T>();
  const detail::DistributedKernels& more = detail::distributed_kernels<S, T>();
  einsum_detail::HostBackend backend(kernels, 1);
  const auto out = static_cast<std::size_t>(plan.output_size());
  std::vector<const void*> erased(operands.begin(), operands.end());
  std::vector<std::vector<T>> parts;
  for (int rank = 0; rank < size; ++rank) {
    einsum_detail::HostWorkspace workspace(plan.workspace_bytes(sizeof(T)));
    std::vector<T> part(out);
    einsum_detail::run_slices(plan.program(), kernels, backend, erased, part.data(), workspace.get(),
                              distributed_detail::deal(rank, size), more.zero);
    parts.push_back(std::move(part));
  }
  const distributed_detail::Collective c = distributed_detail::collective_for(more.add, more.element);
  std::vector<T> result(out);
  if (c.all_reduce) {
    result = parts[0];
    for (int rank = 1; rank < size; ++rank) {
      for (std::size_t i = 0; i < out; ++i) result[i] = reduce(c.op, result[i], parts[rank][i]);
    }
    return result;
  }
  std::vector<T> gathered;
  for (const auto& part : parts) gathered.insert(gathered.end(), part.begin(), part.end());
  std::vector<T> ones(static_cast<std::size_t>(size));
  distributed_detail::merge_rows(kernels, backend, gathered.data(),
                                 distributed_detail::holders(plan.info().slices, size),
                                 static_cast<std::int64_t>(out), result.data(), ones.data());
  return result;
}

template <class Pair>
class DistributedSimulation : public ::testing::Test {};

using Pairs = ::testing::Types<Pair<MaxPlus, float>, Pair<MaxPlus, std::int16_t>, Pair<MinPlus, double>,
                               Pair<MinPlus, std::int16_t>, Pair<MaxMul, std::int64_t>, Pair<MaxMin, std::int32_t>,
                               Pair<MinMax, float>, Pair<MinMax, std::int16_t>, Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(DistributedSimulation, Pairs);

TYPED_TEST(DistributedSimulation, one_to_four_ranks_give_the_bits_of_one_process_on_sliced_random_networks) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937 rng(2024);
  int sliced_runs = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    std::vector<const T*> pointers;
    for (const auto& x : operands) pointers.push_back(x.data());
    for (std::int64_t limit : {0, 1, 2, 4}) {
      std::unique_ptr<EinsumPlan> plan;
      try {
        plan = std::make_unique<EinsumPlan>(net.inputs, net.output, net.shapes(), EinsumOptions{{}, limit});
      } catch (const InvalidArgument&) {
        continue;  // only output labels are left to slice, or the output is larger than the limit
      }
      if (plan->info().slices > 1) ++sliced_runs;
      const std::vector<T> want = one_process<S, T>(*plan, pointers);
      for (int size = 1; size <= 4; ++size) {
        const std::vector<T> got = distributed<S, T>(*plan, pointers, size);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(T)), 0)
            << size << " ranks, memory_limit " << limit << ", " << plan->info().slices << " slices";
      }
    }
  }
  EXPECT_GT(sliced_runs, 80);
}

}  // namespace
}  // namespace tropical
