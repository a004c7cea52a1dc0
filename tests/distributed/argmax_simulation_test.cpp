// The distributed argmax simulated on the CPU (src/distributed/argmax_part.cpp): every rank's part (its slices
// run with their argmax and traced back, argmax_part on the host backend), packed and unpacked as the
// all-gather carries it, then merged (merge_argmax): for random networks under several memory limits, with 1 to
// 4 ranks, the values and the assignment must be one process's einsum_argmax_host's, bit for bit (ties to the
// smallest slice whatever the number of ranks).

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../../src/distributed/argmax_part.hpp"
#include "../../src/distributed/dealing.hpp"
#include "../../src/einsum/host.hpp"
#include "../../src/einsum/program.hpp"
#include "../einsum/random_networks.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using einsum_test::Net;
using einsum_test::Pair;

template <class Pair>
class DistributedArgmaxSimulation : public ::testing::Test {};

using Pairs = ::testing::Types<Pair<MaxPlus, float>, Pair<MinPlus, double>, Pair<MaxMul, std::int64_t>,
                               Pair<MaxMin, std::int16_t>, Pair<MinMax, std::int32_t>, Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(DistributedArgmaxSimulation, Pairs);

TYPED_TEST(DistributedArgmaxSimulation, one_to_four_ranks_give_one_process_values_and_assignment) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  const detail::EinsumKernels& kernels = detail::einsum_kernels<S, T>();
  const detail::DistributedKernels& more = detail::distributed_kernels<S, T>();
  einsum_detail::HostBackend backend(kernels, 1);
  const distributed_detail::ToHost to_host = [](void* dst, const void* src, std::size_t bytes) {
    std::memcpy(dst, src, bytes);
  };
  std::mt19937 rng(77);
  int sliced_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    std::vector<const T*> pointers;
    for (const auto& x : operands) pointers.push_back(x.data());
    const std::vector<const void*> erased(pointers.begin(), pointers.end());
    for (std::int64_t limit : {0, 1, 2, 4}) {
      std::unique_ptr<EinsumPlan> plan;
      try {
        plan = std::make_unique<EinsumPlan>(net.inputs, net.output, net.shapes(), EinsumOptions{{}, limit});
      } catch (const InvalidArgument&) {
        continue;
      }
      sliced_runs += plan->info().slices > 1;
      const auto out = static_cast<std::size_t>(plan->output_size());
      const std::size_t rows = plan->reduced_labels().size();
      std::vector<T> want(out);
      std::vector<std::int64_t> want_assignment(rows * out);
      einsum_argmax_host<S, T>(*plan, pointers, want.data(), want_assignment.data(), nullptr, 1);
      const std::size_t packed = distributed_detail::ArgmaxPart::packed_bytes(plan->program(), sizeof(T));
      for (int size = 1; size <= 4; ++size) {
        std::vector<distributed_detail::ArgmaxPart> parts;
        for (int rank = 0; rank < distributed_detail::holders(plan->info().slices, size); ++rank) {
          einsum_detail::HostWorkspace workspace(plan->argmax_workspace_bytes(sizeof(T)));
          std::vector<T> output(out);
          const distributed_detail::ArgmaxPart part = distributed_detail::argmax_part(
              plan->program(), kernels, backend, to_host, erased, output.data(), workspace.get(),
              distributed_detail::deal(rank, size), more.zero);
          ASSERT_EQ(std::memcmp(part.values.data(), output.data(), out * sizeof(T)), 0) << "the part's values";
          std::vector<std::byte> bytes(packed);
          part.pack(plan->program(), sizeof(T), bytes.data());
          parts.push_back(distributed_detail::ArgmaxPart::unpack(plan->program(), sizeof(T), bytes.data()));
        }
        const distributed_detail::ArgmaxPart best = distributed_detail::merge_argmax(plan->program(), kernels, parts);
        ASSERT_EQ(std::memcmp(best.values.data(), want.data(), out * sizeof(T)), 0)
            << size << " ranks, memory_limit " << limit << ", " << plan->info().slices << " slices";
        ASSERT_EQ(best.assignment, want_assignment)
            << size << " ranks, memory_limit " << limit << ", " << plan->info().slices << " slices";
      }
    }
  }
  EXPECT_GT(sliced_runs, 50);
}

}  // namespace
}  // namespace tropical
