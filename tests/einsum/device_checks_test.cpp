// The einsum device runs' pointer checks (src/einsum/device_backend.cpp) over tests/fake_cuda's libcuda.so.1:
// every operand, the output(s) and a given workspace must lie inside an allocation of the run's device, each
// refused with a message naming it before the driver is asked for a context, a memset or a launch; a run
// whose pointers all pass reaches the driver (the fake's first context call fails).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../fake_cuda/fake_cuda.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"
#include "tropical/runtime.hpp"

namespace tropical {
namespace {

using fake_cuda::kBytes;
using fake_cuda::kFirst;
using fake_cuda::kSecond;
using fake_cuda::kThird;

/// How many context, memset or launch calls the fake driver has seen (-1 if it is not loaded).
long driver_work_calls() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return -1;
  const auto count = reinterpret_cast<long (*)()>(dlsym(handle, fake_cuda::kUnsupportedCalls));
  const long calls = count != nullptr ? count() : -1;
  dlclose(handle);
  return calls;
}

class EinsumDeviceChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv(fake_cuda::kEnvironment) == nullptr) {
      GTEST_SKIP() << "runs in meson test einsum_device_checks (tests/fake_cuda's libcuda.so.1 on LD_LIBRARY_PATH)";
    }
    ASSERT_EQ(device_count(), 1);  // loads the driver
    ASSERT_GE(driver_work_calls(), 0) << "the fake libcuda.so.1 is not the one loaded";
  }
};

/// The InvalidArgument message of call ("" if none), which must have asked the driver for nothing but where
/// pointers lie.
std::string refused_before_any_work(const std::function<void()>& call) {
  const long before = driver_work_calls();
  std::string message;
  try {
    call();
  } catch (const InvalidArgument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InvalidArgument: " << e.what();
  }
  EXPECT_EQ(driver_work_calls(), before) << "the driver was asked for a context, a memset or a launch: " << message;
  return message;
}

/// True if call passed every check and failed at the fake driver's first context call.
bool reached_the_driver(const std::function<void()>& call) {
  try {
    call();
  } catch (const CudaError&) {
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  return false;
}

template <class T = float>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

bool says(const std::string& message, const char* text) { return message.find(text) != std::string::npos; }

// ij,jk,kl->il over 20 x 30, 30 x 40, 40 x 50 floats (2400, 4800, 8000 bytes; an output of 4000 and a workspace).
const std::vector<std::vector<std::int64_t>> kShapes = {{20, 30}, {30, 40}, {40, 50}};

TEST_F(EinsumDeviceChecks, every_operand_the_output_and_the_workspace_of_a_run_are_checked_before_queuing) {
  const EinsumPlan plan("ij,jk,kl->il", kShapes);
  ASSERT_GT(plan.workspace_bytes(4), 0u);
  float host[4000];
  const std::vector<const float*> good = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  float* out = at(kSecond);
  void* ws = at<void>(kThird);
  const auto run = [&](const std::vector<const float*>& ops, float* o, void* w) {
    einsum<MaxPlus, float>(plan, ops, o, w);
  };
  EXPECT_TRUE(reached_the_driver([&] { run(good, out, ws); }));
  EXPECT_PRED2(says, refused_before_any_work([&] { run({good[0], host, good[2]}, out, ws); }),
               "einsum operand 1 is not memory of a CUDA device");
  // Operand 2 (8000 bytes) starting 4000 bytes before the end of the second allocation.
  EXPECT_PRED2(says, refused_before_any_work([&] { run({good[0], good[1], at(kSecond + kBytes - 4000)}, out, ws); }),
               "einsum operand 2 spans 8000 bytes");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(good, host, ws); }),
               "the einsum output is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(good, at(kThird + kBytes - 16), ws); }),
               "the einsum output spans 4000 bytes");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(good, out, at<void>(kThird + kBytes - 16)); }),
               "the einsum workspace spans");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(good, out, host); }),
               "the einsum workspace is not memory of a CUDA device");
  // The argmax run checks the same (its workspace: the argmax bytes).
  std::vector<std::int64_t> assignment(2 * 1000);
  EXPECT_PRED2(says, refused_before_any_work([&] {
                 einsum_argmax<MaxPlus, float>(plan, std::vector<const float*>{good[0], host, good[2]}, out,
                                               assignment.data(), ws);
               }),
               "einsum operand 1 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_any_work([&] {
                 einsum_argmax<MaxPlus, float>(plan, good, out, assignment.data(), at<void>(kThird + kBytes - 16));
               }),
               "the einsum workspace spans");
}

TEST_F(EinsumDeviceChecks, a_counting_run_checks_values_counts_both_outputs_and_its_workspace) {
  const EinsumPlan plan("ij,jk,kl->i", kShapes, {{}, 20});  // sliced: the workspace holds the merge region
  ASSERT_GT(plan.info().slices, 1);
  float host[4000];
  const std::vector<const float*> values = {at(kFirst), at(kFirst + 4096), at(kFirst + 16384)};
  const std::vector<const float*> counts = {at(kFirst + 32768), at(kFirst + 36864), at(kFirst + 45056)};
  float* out_values = at(kSecond);
  float* out_counts = at(kSecond + 4096);
  void* ws = at<void>(kThird);
  ASSERT_LE(plan.counting_workspace_bytes(4), kBytes);
  const auto run = [&](const std::vector<const float*>& v, const std::vector<const float*>& c, float* ov,
                       float* oc, void* w) { einsum_counting<float>(plan, v, c, ov, oc, w); };
  EXPECT_TRUE(reached_the_driver([&] { run(values, counts, out_values, out_counts, ws); }));
  EXPECT_PRED2(says, refused_before_any_work([&] { run({host, values[1], values[2]}, counts, out_values, out_counts, ws); }),
               "einsum values of operand 0 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(values, {counts[0], counts[1], host}, out_values, out_counts, ws); }),
               "einsum counts of operand 2 is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(values, counts, host, out_counts, ws); }),
               "the einsum out_values is not memory of a CUDA device");
  EXPECT_PRED2(says, refused_before_any_work([&] { run(values, counts, out_values, at(kThird + kBytes - 16), ws); }),
               "the einsum out_counts spans 80 bytes");
  // A workspace of the plain run's bytes is too small for values and counts.
  void* short_ws = at<void>(kThird + kBytes - plan.workspace_bytes(4));
  EXPECT_PRED2(says, refused_before_any_work([&] { run(values, counts, out_values, out_counts, short_ws); }),
               "the einsum workspace spans");
}

}  // namespace
}  // namespace tropical
