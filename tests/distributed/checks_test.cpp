// A distributed run's refusals (src/distributed/run.cpp, counting.cpp) over tests/fake_cuda's libcuda.so.1 and
// tests/fake_nccl's libnccl.so.2: a null communicator, a null or off-device pointer is refused before NCCL is
// asked anything; a run whose arguments pass asks NCCL for the communicator's device, rank and size, and stops
// at the fake driver's first context call, with no collective queued; a non-blocking communicator still under
// way is waited for (bounded) before it is asked anything, by every kind of run; without NCCL (meson test
// distributed_without_nccl) such a run is Unavailable, naming the library.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../fake_cuda/fake_cuda.hpp"
#include "fake_nccl_access.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"
#include "tropical/runtime.hpp"

namespace tropical {
namespace {

using fake_cuda::kFirst;
using fake_cuda::kSecond;
using fake_cuda::kThird;

bool without_nccl() { return std::getenv("TROPICAL_TEST_WITHOUT_NCCL") != nullptr; }

class DistributedChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv(fake_cuda::kEnvironment) == nullptr || (!fake_nccl::present() && !without_nccl())) {
      GTEST_SKIP() << "runs in meson test distributed_checks (tests/fake_cuda's libcuda, tests/fake_nccl's libnccl)";
    }
    ASSERT_EQ(device_count(), 1);  // loads the driver
    if (without_nccl()) return;
    fake_nccl::reset();
  }
};

template <class T = float>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

ncclComm_t comm() { return reinterpret_cast<ncclComm_t>(std::uintptr_t{0x1000}); }

/// The InvalidArgument message of call ("" if none); NCCL must not have been called.
std::string refused_before_nccl(const std::function<void()>& call) {
  std::string message;
  try {
    call();
  } catch (const InvalidArgument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InvalidArgument: " << e.what();
  }
  if (!without_nccl()) {
    EXPECT_EQ(fake_nccl::log(), "") << "NCCL was called: " << message;
  }
  return message;
}

/// True if call passed every check, asked NCCL about the communicator only, and failed at the fake driver's
/// first context call.
bool asked_nccl_then_reached_the_driver(const std::function<void()>& call) {
  try {
    call();
  } catch (const CudaError&) {
    EXPECT_EQ(fake_nccl::log(), "ncclCommCuDevice(4096);ncclCommUserRank(4096);ncclCommCount(4096);");
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  return false;
}

bool says(const std::string& message, const char* text) { return message.find(text) != std::string::npos; }

// ij,jk,kl->il over 20 x 30, 30 x 40, 40 x 50 floats (2400, 4800, 8000 bytes; an output of 4000).
const std::vector<std::vector<std::int64_t>> kShapes = {{20, 30}, {30, 40}, {40, 50}};

TEST_F(DistributedChecks, a_null_communicator_or_pointer_and_an_off_device_array_are_refused_before_nccl) {
  if (without_nccl()) GTEST_SKIP() << "the fake libnccl's log is not there";
  const EinsumPlan plan("ij,jk,kl->il", kShapes, {{}, 1000});
  float host[4000];
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  float* out = at(kSecond);
  const auto run = [&](const std::vector<const float*>& ops, float* o, ncclComm_t c) {
    einsum_distributed<MaxPlus, float>(plan, ops, o, c);
  };
  EXPECT_TRUE(asked_nccl_then_reached_the_driver([&] { run(good, out, comm()); }));
  fake_nccl::reset();
  EXPECT_PRED2(says, refused_before_nccl([&] { run(good, out, nullptr); }), "the NCCL communicator is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run({good[0], nullptr, good[2]}, out, comm()); }),
               "einsum operand 1 is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(good, nullptr, comm()); }), "the einsum output is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run({good[0], host, good[2]}, out, comm()); }),
               "einsum operand 1 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(good, host, comm()); }),
               "the einsum output is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_nccl([&] { run({good[0], good[1]}, out, comm()); }),
               "takes 3 operand(s) but 2 were given");
}

TEST_F(DistributedChecks, an_argmax_run_checks_its_assignment_too_before_nccl) {
  if (without_nccl()) GTEST_SKIP() << "the fake libnccl's log is not there";
  const EinsumPlan plan("ij,jk,kl->il", kShapes, {{}, 1000});
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  std::vector<std::int64_t> assignment(2 * 1000);
  const auto run = [&](float* o, std::int64_t* a, ncclComm_t c) {
    einsum_distributed_argmax<MaxPlus, float>(plan, good, o, a, c);
  };
  EXPECT_TRUE(asked_nccl_then_reached_the_driver([&] { run(at(kSecond), assignment.data(), comm()); }));
  fake_nccl::reset();
  EXPECT_PRED2(says, refused_before_nccl([&] { run(at(kSecond), nullptr, comm()); }),
               "the einsum assignment is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(at(kSecond), assignment.data(), nullptr); }),
               "the NCCL communicator is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(nullptr, assignment.data(), comm()); }),
               "the einsum output is null");
}

TEST_F(DistributedChecks, a_counting_run_checks_values_counts_and_both_outputs_before_nccl) {
  if (without_nccl()) GTEST_SKIP() << "the fake libnccl's log is not there";
  const EinsumPlan plan("ij,jk,kl->i", kShapes, {{}, 20});
  ASSERT_GT(plan.info().slices, 1);
  float host[4000];
  const std::vector<const float*> values = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  const std::vector<const float*> counts = {at(kFirst + 32768), at(kFirst + 36864), at(kFirst + 45056)};
  float* out_values = at(kSecond);
  float* out_counts = at(kSecond + 4096);
  const auto run = [&](const std::vector<const float*>& v, const std::vector<const float*>& c, float* ov,
                       float* oc, ncclComm_t k) { einsum_distributed_counting<float>(plan, v, c, ov, oc, k); };
  EXPECT_TRUE(asked_nccl_then_reached_the_driver([&] { run(values, counts, out_values, out_counts, comm()); }));
  fake_nccl::reset();
  EXPECT_PRED2(says, refused_before_nccl([&] { run(values, counts, out_values, out_counts, nullptr); }),
               "the NCCL communicator is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(values, counts, out_values, nullptr, comm()); }),
               "the einsum output is null");
  EXPECT_PRED2(says, refused_before_nccl([&] { run({host, values[1], values[2]}, counts, out_values, out_counts, comm()); }),
               "einsum values of operand 0 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(values, {counts[0], counts[1], host}, out_values, out_counts, comm()); }),
               "einsum counts of operand 2 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_nccl([&] { run(values, counts, out_values, at(kThird + (std::uintptr_t{1} << 20) - 16), comm()); }),
               "the einsum out_counts spans 80 bytes");
}

TEST_F(DistributedChecks, a_communicator_of_another_device_is_refused_after_asking_nccl_its_device) {
  if (without_nccl()) GTEST_SKIP() << "the fake libnccl's log is not there";
  const EinsumPlan plan("ij,jk,kl->il", kShapes);
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  fake_nccl::set_comm(0, 2, 1);
  try {
    einsum_distributed<MaxPlus, float>(plan, good, at(kSecond), comm());
    FAIL() << "a communicator of device 1 ran arrays of device 0";
  } catch (const InvalidArgument& e) {
    EXPECT_PRED2(says, e.what(), "the NCCL communicator is on device 1");
  }
  EXPECT_EQ(fake_nccl::log(), "ncclCommCuDevice(4096);");
}

TEST_F(DistributedChecks, a_communicator_still_under_way_is_waited_for_before_it_is_asked_anything) {
  if (without_nccl()) GTEST_SKIP() << "the fake libnccl's log is not there";
  const EinsumPlan plan("ij,jk,kl->il", kShapes, {{}, 1000});
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  std::int64_t assignment[4000];
  const DistributedOptions soon{.timeout_s = 0.05};
  const std::function<void()> runs[] = {
      [&] { einsum_distributed<MaxPlus, float>(plan, good, at(kSecond), comm(), nullptr, soon); },
      [&] { einsum_distributed_argmax<MaxPlus, float>(plan, good, at(kSecond), assignment, comm(), nullptr, soon); },
      [&] { einsum_distributed_counting<float>(plan, good, good, at(kSecond), at(kThird), comm(), nullptr, soon); }};
  for (const auto& run : runs) {
    fake_nccl::reset();
    fake_nccl::set_in_progress(3);  // initializing: ready after three queries
    EXPECT_TRUE(asked_nccl_then_reached_the_driver(run));
    EXPECT_GE(fake_nccl::async_queries(), 4);
    fake_nccl::reset();
    fake_nccl::set_in_progress(-1);  // never ready: the run times out having asked it nothing else
    try {
      run();
      ADD_FAILURE() << "ran on a communicator still under way";
    } catch (const NcclTimeout& e) {
      EXPECT_PRED2(says, e.what(), "the communicator's call before the run");
    }
    EXPECT_EQ(fake_nccl::log(), "ncclCommAbort(4096);");
  }
}

TEST_F(DistributedChecks, without_nccl_a_run_whose_arguments_pass_is_unavailable_naming_the_library) {
  if (!without_nccl()) GTEST_SKIP() << "runs in meson test distributed_without_nccl";
  const EinsumPlan plan("ij,jk,kl->il", kShapes);
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure sticks: the same error every time
    try {
      einsum_distributed<MaxPlus, float>(plan, good, at(kSecond), comm());
      FAIL() << "ran without NCCL";
    } catch (const Unavailable& e) {
      EXPECT_PRED2(says, e.what(), std::getenv("TROPICAL_NCCL_LIBRARY"));
      EXPECT_PRED2(says, e.what(), "from $TROPICAL_NCCL_LIBRARY");
    }
  }
  // A null communicator is still refused first.
  EXPECT_PRED2(says, refused_before_nccl([&] { einsum_distributed<MaxPlus, float>(plan, good, at(kSecond), nullptr); }),
               "the NCCL communicator is null");
}

}  // namespace
}  // namespace tropical
