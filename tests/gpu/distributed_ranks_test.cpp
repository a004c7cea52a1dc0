// The distributed einsum over real communicators of several GPUs, one rank a device (two to four), one thread
// a rank, each rank's operands and output on its own device: a blocking communicator (ncclCommInitAll) and a
// non-blocking one (ncclCommInitRankConfig with blocking = 0, whose collectives answer ncclInProgress).
// einsum_distributed (the all-reduce, and int16's all-gather and device merge), einsum_distributed_argmax and
// einsum_distributed_counting give every rank the host run's bits, on sliced networks with more slices than ranks
// and on networks with fewer (ranks without slices). Skipped without two GPUs, or without libnccl.so.2
// ($TROPICAL_NCCL_LIBRARY, else the loader's path).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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
using einsum_test::DeviceOperands;

/// Two communicators of one rank a device over the first two to four devices, blocking and non-blocking, made
/// once (empty with the reason where there are none).
struct Ranks {
  std::vector<ncclComm_t> blocking, nonblocking;
  std::string why;
};

const Ranks& ranks() {
  static const Ranks made = [] {
    Ranks r;
    const int devices = std::min(drv::device_count(), 4);
    if (devices < 2) {
      r.why = "needs two GPUs (a communicator of one rank a device)";
      return r;
    }
    void* nccl = nccl_test::open_nccl();
    if (nccl == nullptr) {
      r.why = "no NCCL: libnccl.so.2 does not load";
      return r;
    }
    using InitAll = int (*)(ncclComm_t*, int, const int*);
    using GetUniqueId = int (*)(nccl_test::UniqueId*);
    const auto init_all = nccl_test::symbol<InitAll>(nccl, "ncclCommInitAll");
    const auto get_id = nccl_test::symbol<GetUniqueId>(nccl, "ncclGetUniqueId");
    std::vector<int> ids(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) ids[static_cast<std::size_t>(d)] = d;
    std::vector<ncclComm_t> blocking(ids.size()), nonblocking(ids.size());
    nccl_test::UniqueId id{};
    if (init_all == nullptr || init_all(blocking.data(), devices, ids.data()) != 0) {
      r.why = "ncclCommInitAll failed";
      return r;
    }
    if (get_id == nullptr || get_id(&id) != 0) {
      r.why = "ncclGetUniqueId failed";
      return r;
    }
    std::vector<std::thread> threads;  // every rank's init at once: each waits for the others
    for (int d = 0; d < devices; ++d) {
      threads.emplace_back([&, d] {
        drv::ScopedContext context(d);  // NCCL's device: the current context's
        nonblocking[static_cast<std::size_t>(d)] = nccl_test::init_nonblocking(nccl, devices, id, d);
      });
    }
    for (auto& t : threads) t.join();
    if (std::find(nonblocking.begin(), nonblocking.end(), nullptr) != nonblocking.end()) {
      r.why = "a non-blocking ncclCommInitRankConfig failed";
      return r;
    }
    r.blocking = blocking;  // the communicators live as long as the process
    r.nonblocking = nonblocking;
    return r;
  }();
  return made;
}

/// Both communicators, each named.
std::vector<std::pair<const char*, const std::vector<ncclComm_t>*>> communicators() {
  return {{"blocking", &ranks().blocking}, {"non-blocking", &ranks().nonblocking}};
}

/// A run failed: its communicator may be aborted (freed), so nothing runs on these communicators again.
std::atomic<bool> g_aborted{false};

class GpuDistributedRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    if (ranks().blocking.empty()) GTEST_SKIP() << ranks().why;
    if (g_aborted) GTEST_FAIL() << "an earlier run failed and may have aborted the communicators";
    einsum_test::use_temporary_cache("tropical-distributed-ranks");
  }
};

/// A bounded wait: a rank that threw leaves its peers' collective waiting, and they fail after this instead of
/// hanging the suite.
const DistributedOptions kOptions{.timeout_s = 120};

/// run(rank) on one thread a rank, together; the first rank's exception, rethrown (and every later run refused:
/// the failed run may have aborted a communicator).
void on_every_rank(const std::function<void(int)>& run) {
  if (g_aborted) throw std::runtime_error("an earlier run failed and may have aborted the communicators");
  const int size = static_cast<int>(ranks().blocking.size());
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        run(rank);
      } catch (...) {
        errors[static_cast<std::size_t>(rank)] = std::current_exception();
        g_aborted = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Plans of random networks under memory limits 0, 1 and 2 (those that can be met), with the operands of each:
/// random networks until `each` plans with more slices than ranks and `each` with fewer have been checked.
template <class Operands>
void for_random_plans(unsigned seed, int each,
                      const std::function<Operands(const einsum_test::Net&, std::mt19937&)>& make,
                      const std::function<void(const EinsumPlan&, const Operands&, std::int64_t)>& check) {
  std::mt19937 rng(seed);
  const auto size = static_cast<std::int64_t>(ranks().blocking.size());
  int more_slices = 0, fewer_slices = 0;
  for (int trial = 0; trial < 5000 && (more_slices < each || fewer_slices < each); ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const Operands operands = make(net, rng);
    for (std::int64_t limit : {0, 1, 2}) {
      const std::unique_ptr<EinsumPlan> plan = einsum_test::plan_under(net, limit);
      if (plan == nullptr) continue;  // the limit cannot be met
      const bool more = plan->info().slices > size, fewer = plan->info().slices < size;
      if ((more && more_slices >= each) || (fewer && fewer_slices >= each)) continue;
      more_slices += more;
      fewer_slices += fewer;
      check(*plan, operands, limit);
    }
  }
  EXPECT_GE(more_slices, each) << "plans with more slices than ranks";
  EXPECT_GE(fewer_slices, each) << "plans leaving ranks without slices";
}

template <class S, class T>
void values_match(unsigned seed) {
  using Host = std::vector<std::vector<T>>;
  for_random_plans<Host>(
      seed, 12, einsum_test::random_operands<S, T>,
      [](const EinsumPlan& plan, const Host& operands, std::int64_t limit) {
        const std::vector<const T*> pointers = einsum_test::host_pointers(operands);
        const auto out = static_cast<std::size_t>(plan.output_size());
        std::vector<T> want(out);
        einsum_host<S, T>(plan, pointers, want.data());
        for (const auto& [kind, comms] : communicators()) {
          std::vector<std::vector<T>> got(comms->size());
          on_every_rank([&](int rank) {
            const auto r = static_cast<std::size_t>(rank);
            DeviceOperands<T> d(operands, rank);
            DeviceBuffer<T> o(out, rank);
            einsum_distributed<S, T>(plan, d.pointers, o.get(), (*comms)[r], nullptr, kOptions);
            got[r] = o.download(out);
          });
          for (std::size_t rank = 0; rank < got.size(); ++rank) {
            EXPECT_TRUE(same_bits(got[rank], want))
                << kind << ", rank " << rank << " of " << got.size() << ", limit " << limit;
          }
        }
      });
}

TEST_F(GpuDistributedRanks, every_semiring_and_type_gives_every_rank_the_host_bits) {
  values_match<MaxPlus, float>(1);
  values_match<MinPlus, double>(2);
  values_match<MaxMul, std::int64_t>(3);
  values_match<MaxMin, std::int32_t>(4);
  values_match<MinMax, float>(5);
  values_match<AndOr, std::uint8_t>(6);
  values_match<MaxPlus, std::int16_t>(7);  // no NCCL type: all-gathered and merged on the device
  values_match<MinPlus, std::int16_t>(8);
}

template <class S, class T>
void argmax_matches(unsigned seed) {
  using Host = std::vector<std::vector<T>>;
  for_random_plans<Host>(
      seed, 12, einsum_test::random_operands<S, T>,
      [](const EinsumPlan& plan, const Host& operands, std::int64_t limit) {
        const std::vector<const T*> pointers = einsum_test::host_pointers(operands);
        const auto out = static_cast<std::size_t>(plan.output_size());
        std::vector<T> want(out);
        std::vector<std::int64_t> want_assignment(plan.reduced_labels().size() * out);
        einsum_argmax_host<S, T>(plan, pointers, want.data(), want_assignment.data());
        for (const auto& [kind, comms] : communicators()) {
          const std::size_t size = comms->size();
          std::vector<std::vector<T>> got(size);
          std::vector<std::vector<std::int64_t>> assignments(size,
                                                             std::vector<std::int64_t>(want_assignment.size()));
          on_every_rank([&](int rank) {
            const auto r = static_cast<std::size_t>(rank);
            DeviceOperands<T> d(operands, rank);
            DeviceBuffer<T> o(out, rank);
            einsum_distributed_argmax<S, T>(plan, d.pointers, o.get(), assignments[r].data(), (*comms)[r], nullptr,
                                            kOptions);
            got[r] = o.download(out);
          });
          for (std::size_t rank = 0; rank < size; ++rank) {
            EXPECT_TRUE(same_bits(got[rank], want)) << kind << ", values, rank " << rank << ", limit " << limit;
            EXPECT_EQ(assignments[rank], want_assignment) << kind << ", rank " << rank << ", limit " << limit;
          }
        }
      });
}

TEST_F(GpuDistributedRanks, argmax_gives_every_rank_the_host_values_and_assignment) {
  argmax_matches<MaxPlus, float>(21);
  argmax_matches<MinPlus, std::int16_t>(22);
  argmax_matches<AndOr, std::uint8_t>(23);
}

template <class T>
void counts_match(unsigned seed) {
  using Pairs = einsum_test::Pairs<T>;
  for_random_plans<Pairs>(
      seed, 12, einsum_test::random_pairs<T>,
      [](const EinsumPlan& plan, const Pairs& p, std::int64_t limit) {
        const auto out = static_cast<std::size_t>(plan.output_size());
        std::vector<T> want_v(out), want_c(out);
        einsum_counting_host<T>(plan, einsum_test::host_pointers(p.values), einsum_test::host_pointers(p.counts),
                                want_v.data(), want_c.data());
        for (const auto& [kind, comms] : communicators()) {
          const std::size_t size = comms->size();
          std::vector<std::vector<T>> got_v(size), got_c(size);
          on_every_rank([&](int rank) {
            const auto r = static_cast<std::size_t>(rank);
            DeviceOperands<T> dv(p.values, rank), dc(p.counts, rank);
            DeviceBuffer<T> ov(out, rank), oc(out, rank);
            einsum_distributed_counting<T>(plan, dv.pointers, dc.pointers, ov.get(), oc.get(), (*comms)[r], nullptr,
                                           kOptions);
            got_v[r] = ov.download(out);
            got_c[r] = oc.download(out);
          });
          for (std::size_t rank = 0; rank < size; ++rank) {
            EXPECT_TRUE(same_bits(got_v[rank], want_v)) << kind << ", values, rank " << rank << ", limit " << limit;
            EXPECT_TRUE(same_bits(got_c[rank], want_c)) << kind << ", counts, rank " << rank << ", limit " << limit;
          }
        }
      });
}

TEST_F(GpuDistributedRanks, counting_gives_every_rank_the_host_bits) {
  counts_match<float>(11);
  counts_match<double>(12);
}

}  // namespace
}  // namespace tropical
