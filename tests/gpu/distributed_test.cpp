// The distributed einsum on one GPU (src/distributed/): with a real NCCL communicator of one rank
// (ncclCommInitAll over device 0) einsum_distributed, einsum_distributed_counting and einsum_distributed_argmax
// give the host run's bits for every semiring and type (the all-reduce and the gathered int16 path); and every
// rank's part of a communicator of 1 to 4 ranks run on the device (run_slices, the counting slice loop, the argmax
// part), then merged as the collective would (max/min, merge.hpp's device merges, the argmax merge), gives the
// same bits, so the steps of a multi-GPU run are checked on one GPU. Skipped without a GPU, or without libnccl.so.2 ($TROPICAL_NCCL_LIBRARY, else the
// loader's path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../src/distributed/argmax_part.hpp"
#include "../../src/distributed/collective.hpp"
#include "../../src/distributed/dealing.hpp"
#include "../../src/distributed/device_steps.hpp"
#include "../../src/distributed/merge.hpp"
#include "../../src/einsum/device_counting.hpp"
#include "../../src/einsum/program.hpp"
#include "../einsum/random_networks.hpp"
#include "einsum_device.hpp"
#include "nccl_handles.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;

/// A communicator of one rank on device 0, made once with the NCCL the library opens (null with the reason where
/// there is none).
struct OneRank {
  ncclComm_t comm = nullptr;
  std::string why;
};

const OneRank& one_rank() {
  static const OneRank made = [] {
    OneRank r;
    void* nccl = nccl_test::open_nccl();
    if (nccl == nullptr) {
      r.why = "no NCCL: libnccl.so.2 ($TROPICAL_NCCL_LIBRARY, else the loader's path) does not load";
      return r;
    }
    using InitAll = int (*)(ncclComm_t*, int, const int*);
    const auto init = nccl_test::symbol<InitAll>(nccl, "ncclCommInitAll");
    const int devices[] = {0};
    if (init == nullptr || init(&r.comm, 1, devices) != 0) r.why = "ncclCommInitAll failed on device 0";
    return r;  // the communicator lives as long as the process
  }();
  return made;
}

class GpuDistributed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    einsum_test::use_temporary_cache("tropical-distributed");
  }
};

using einsum_test::DeviceOperands;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class S, class T>
std::vector<T> on_host(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands) {
  const std::vector<const T*> pointers = einsum_test::host_pointers(operands);
  std::vector<T> out(static_cast<std::size_t>(plan.output_size()));
  einsum_host<S, T>(plan, pointers, out.data());
  return out;
}

/// Every rank's part of a communicator of `size` on device 0 (queue_part), merged as the run's collective would:
/// NCCL's max or min on the host, or queue_merge_rows on the device.
template <class S, class T>
std::vector<T> ranks_on_one_device(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands, int size) {
  const detail::EinsumKernels& kernels = detail::einsum_kernels<S, T>();
  const detail::DistributedKernels& more = detail::distributed_kernels<S, T>();
  const auto out = static_cast<std::size_t>(plan.output_size());
  DeviceOperands<T> d(operands);
  std::vector<const void*> erased(d.pointers.begin(), d.pointers.end());
  DeviceBuffer<T> gathered(out * static_cast<std::size_t>(size)), ones(static_cast<std::size_t>(size)), result(out);
  DeviceBuffer<std::byte> ws(plan.workspace_bytes(sizeof(T)));
  {
    drv::ScopedContext context(0);
    for (int rank = 0; rank < size; ++rank) {
      distributed_detail::queue_part(plan.program(), kernels, more.zero, erased, gathered.get() + out * rank,
                                     ws.get(), distributed_detail::deal(rank, size), nullptr);
    }
    const distributed_detail::Collective c = distributed_detail::collective_for(more.add, more.element);
    if (!c.all_reduce) {
      distributed_detail::queue_merge_rows(kernels, gathered.get(), distributed_detail::holders(plan.info().slices, size),
                                           static_cast<std::int64_t>(out), result.get(), ones.get(), nullptr);
      return result.download(out);
    }
  }
  const std::vector<T> parts = gathered.download(out * static_cast<std::size_t>(size));
  std::vector<T> merged(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(out));
  for (int rank = 1; rank < size; ++rank) {
    for (std::size_t i = 0; i < out; ++i) {
      const T x = parts[out * rank + i];
      merged[i] = S::kAdd == AddKind::kMin ? std::min(merged[i], x) : std::max(merged[i], x);
    }
  }
  return merged;
}

template <class S, class T>
void random_networks_match(unsigned seed) {
  std::mt19937 rng(seed);
  const OneRank& r = one_rank();
  int sliced = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    for (std::int64_t limit : {0, 1, 2}) {
      const std::unique_ptr<EinsumPlan> plan = einsum_test::plan_under(net, limit);
      if (plan == nullptr) continue;  // the limit cannot be met
      sliced += plan->info().slices > 1;
      const std::vector<T> want = on_host<S, T>(*plan, operands);
      for (int size = 1; size <= 4; ++size) {
        EXPECT_TRUE(same_bits(ranks_on_one_device<S, T>(*plan, operands, size), want))
            << size << " ranks on one device, limit " << limit;
      }
      if (r.comm == nullptr) continue;
      DeviceOperands<T> d(operands);
      DeviceBuffer<T> out(static_cast<std::size_t>(plan->output_size()));
      einsum_distributed<S, T>(*plan, d.pointers, out.get(), r.comm);
      EXPECT_TRUE(same_bits(out.download(static_cast<std::size_t>(plan->output_size())), want))
          << "einsum_distributed over one rank, limit " << limit;
    }
  }
  EXPECT_GT(sliced, 5);
}

TEST_F(GpuDistributed, every_semiring_and_type_gives_the_host_bits_over_one_rank_and_as_ranks_on_one_device) {
  if (one_rank().comm == nullptr) std::printf("einsum_distributed not run (%s)\n", one_rank().why.c_str());
  random_networks_match<MaxPlus, float>(1);
  random_networks_match<MinPlus, double>(2);
  random_networks_match<MaxMul, std::int64_t>(3);
  random_networks_match<MaxMin, std::int32_t>(4);
  random_networks_match<MinMax, float>(5);
  random_networks_match<AndOr, std::uint8_t>(6);
  random_networks_match<MaxPlus, std::int16_t>(7);
  random_networks_match<MinPlus, std::int16_t>(8);
}

/// Every rank's argmax part of a communicator of `size` run on device 0 (device_argmax_part),
/// packed, unpacked and merged as the distributed argmax merges them: (values, assignment).
template <class S, class T>
std::pair<std::vector<T>, std::vector<std::int64_t>> argmax_ranks_on_one_device(
    const EinsumPlan& plan, const std::vector<std::vector<T>>& operands, int size) {
  const detail::EinsumKernels& kernels = detail::einsum_kernels<S, T>();
  const auto out = static_cast<std::size_t>(plan.output_size());
  DeviceOperands<T> d(operands);
  std::vector<const void*> erased(d.pointers.begin(), d.pointers.end());
  DeviceBuffer<T> output(out);
  DeviceBuffer<std::byte> ws(plan.argmax_workspace_bytes(sizeof(T)));
  std::vector<distributed_detail::ArgmaxPart> parts;
  drv::ScopedContext context(0);
  const std::size_t packed = distributed_detail::ArgmaxPart::packed_bytes(plan.program(), sizeof(T));
  for (int rank = 0; rank < distributed_detail::holders(plan.info().slices, size); ++rank) {
    const auto part = distributed_detail::device_argmax_part(plan.program(), kernels,
                                                             detail::distributed_kernels<S, T>().zero, erased,
                                                             output.get(), ws.get(),
                                                             distributed_detail::deal(rank, size), nullptr);
    std::vector<std::byte> bytes(packed);
    part.pack(plan.program(), sizeof(T), bytes.data());
    parts.push_back(distributed_detail::ArgmaxPart::unpack(plan.program(), sizeof(T), bytes.data()));
  }
  const auto best = distributed_detail::merge_argmax(plan.program(), kernels, parts);
  std::vector<T> values(out);
  std::memcpy(values.data(), best.values.data(), out * sizeof(T));
  return {values, best.assignment};
}

template <class S, class T>
void random_networks_argmax_match(unsigned seed) {
  std::mt19937 rng(seed);
  const OneRank& r = one_rank();
  for (int trial = 0; trial < 30; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    for (std::int64_t limit : {0, 1, 2}) {
      const std::unique_ptr<EinsumPlan> plan = einsum_test::plan_under(net, limit);
      if (plan == nullptr) continue;  // the limit cannot be met
      const auto out = static_cast<std::size_t>(plan->output_size());
      const std::vector<const T*> pointers = einsum_test::host_pointers(operands);
      std::vector<T> want(out);
      std::vector<std::int64_t> want_assignment(plan->reduced_labels().size() * out);
      einsum_argmax_host<S, T>(*plan, pointers, want.data(), want_assignment.data());
      for (int size = 1; size <= 4; ++size) {
        const auto [v, a] = argmax_ranks_on_one_device<S, T>(*plan, operands, size);
        EXPECT_TRUE(same_bits(v, want)) << "values, " << size << " ranks on one device, limit " << limit;
        EXPECT_EQ(a, want_assignment) << size << " ranks on one device, limit " << limit;
      }
      if (r.comm == nullptr) continue;
      DeviceOperands<T> d(operands);
      DeviceBuffer<T> o(out);
      std::vector<std::int64_t> assignment(want_assignment.size());
      einsum_distributed_argmax<S, T>(*plan, d.pointers, o.get(), assignment.data(), r.comm);
      EXPECT_TRUE(same_bits(o.download(out), want)) << "einsum_distributed_argmax values, limit " << limit;
      EXPECT_EQ(assignment, want_assignment) << "einsum_distributed_argmax assignment, limit " << limit;
    }
  }
}

TEST_F(GpuDistributed, argmax_gives_the_host_values_and_assignment_over_one_rank_and_as_ranks_on_one_device) {
  random_networks_argmax_match<MaxPlus, float>(21);
  random_networks_argmax_match<MinPlus, std::int16_t>(22);
  random_networks_argmax_match<AndOr, std::uint8_t>(23);
}

using einsum_test::Pairs;
using einsum_test::random_pairs;

/// Every rank's counting part of a communicator of `size` on device 0 (the counting slice loop; a rank without
/// slices holds (-inf, 0)), merged by merge_counting_rows on the device as the gathered run merges them.
template <class T>
std::pair<std::vector<T>, std::vector<T>> counting_ranks_on_one_device(const EinsumPlan& plan, const Pairs<T>& p,
                                                                       int size) {
  const auto out = static_cast<std::size_t>(plan.output_size());
  const auto all = out * static_cast<std::size_t>(size);
  DeviceOperands<T> v(p.values), c(p.counts);
  std::vector<const void*> ev(v.pointers.begin(), v.pointers.end()), ec(c.pointers.begin(), c.pointers.end());
  std::vector<T> zero_values(all, -std::numeric_limits<T>::infinity()), zero_counts(all, T(0));
  DeviceBuffer<T> gv(zero_values), gc(zero_counts), ones_v(static_cast<std::size_t>(size)),
      ones_c(static_cast<std::size_t>(size)), rv(out), rc(out);
  DeviceBuffer<std::byte> ws(plan.counting_workspace_bytes(sizeof(T)));
  {
    drv::ScopedContext context(0);
    for (int rank = 0; rank < size; ++rank) {
      detail::queue_counting_slices(plan.program(), sizeof(T), ev, ec, gv.get() + out * rank, gc.get() + out * rank,
                                    ws.get(), distributed_detail::deal(rank, size), nullptr);
    }
    distributed_detail::merge_counting_rows(sizeof(T), gv.get(), gc.get(),
                                            distributed_detail::holders(plan.info().slices, size),
                                            static_cast<std::int64_t>(out), rv.get(), rc.get(), ones_v.get(),
                                            ones_c.get(), nullptr);
  }
  return {rv.download(out), rc.download(out)};
}

template <class T>
void random_networks_count_as_the_host(unsigned seed) {
  std::mt19937 rng(seed);
  const OneRank& r = one_rank();
  int sliced = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const Pairs<T> p = random_pairs<T>(net, rng);
    for (std::int64_t limit : {0, 1, 2}) {
      const std::unique_ptr<EinsumPlan> plan = einsum_test::plan_under(net, limit);
      if (plan == nullptr) continue;  // the limit cannot be met
      sliced += plan->info().slices > 1;
      const auto out = static_cast<std::size_t>(plan->output_size());
      std::vector<const T*> hv, hc;
      for (std::size_t i = 0; i < p.values.size(); ++i) {
        hv.push_back(p.values[i].data());
        hc.push_back(p.counts[i].data());
      }
      std::vector<T> want_v(out), want_c(out);
      einsum_counting_host<T>(*plan, hv, hc, want_v.data(), want_c.data());
      for (int size = 1; size <= 4; ++size) {
        const auto [v, c] = counting_ranks_on_one_device<T>(*plan, p, size);
        EXPECT_TRUE(same_bits(v, want_v)) << "values, " << size << " ranks, limit " << limit;
        EXPECT_TRUE(same_bits(c, want_c)) << "counts, " << size << " ranks, limit " << limit;
      }
      if (r.comm == nullptr) continue;
      DeviceOperands<T> dv(p.values), dc(p.counts);
      DeviceBuffer<T> ov(out), oc(out);
      einsum_distributed_counting<T>(*plan, dv.pointers, dc.pointers, ov.get(), oc.get(), r.comm);
      EXPECT_TRUE(same_bits(ov.download(out), want_v)) << "einsum_distributed_counting values, limit " << limit;
      EXPECT_TRUE(same_bits(oc.download(out), want_c)) << "einsum_distributed_counting counts, limit " << limit;
    }
  }
  EXPECT_GT(sliced, 5);
}

TEST_F(GpuDistributed, counting_gives_the_host_bits_over_one_rank_and_as_ranks_on_one_device) {
  random_networks_count_as_the_host<float>(11);
  random_networks_count_as_the_host<double>(12);
}

TEST_F(GpuDistributed, a_null_communicator_is_refused_before_anything_runs) {
  const std::vector<std::vector<float>> operands = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  const EinsumPlan plan("ij,jk->ik", {{2, 2}, {2, 2}});
  DeviceOperands<float> d(operands);
  DeviceBuffer<float> out(4);
  const auto run = [&] { einsum_distributed<MaxPlus, float>(plan, d.pointers, out.get(), nullptr); };
  EXPECT_THROW(run(), InvalidArgument);
}

}  // namespace
}  // namespace tropical
