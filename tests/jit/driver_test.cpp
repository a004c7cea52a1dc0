#include "tropical/jit/driver.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tropical/error.hpp"
#include "tropical/jit/nvrtc.hpp"

namespace tropical::jit::driver {
namespace {

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

bool driver_loads() {
  try {
    (void)api();
    return true;
  } catch (const Unavailable&) {
    return false;
  }
}

// Skips a test that needs a GPU, saying why, where none can be used.
#define TROPICAL_REQUIRE_GPU()                                                                      \
  do {                                                                                              \
    if (!available()) GTEST_SKIP() << "no usable CUDA device here (libcuda.so.1 or a GPU missing)"; \
  } while (false)

TEST(DriverSymbols, versioned_names_follow_cuda_h) {
  // The same expansion driver.cpp relies on: the argument of a function-like
  // macro is expanded before substitution, so this sees cuda.h's mapping.
#define TROPICAL_TEST_SYMBOL(name) #name
#define TROPICAL_TEST_EXPANDED(name) TROPICAL_TEST_SYMBOL(name)
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuCtxPushCurrent), "cuCtxPushCurrent_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuCtxPopCurrent), "cuCtxPopCurrent_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuDevicePrimaryCtxRelease), "cuDevicePrimaryCtxRelease_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuMemAlloc), "cuMemAlloc_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuMemcpyHtoD), "cuMemcpyHtoD_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuEventElapsedTime), "cuEventElapsedTime_v2");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuLaunchKernel), "cuLaunchKernel");
  EXPECT_STREQ(TROPICAL_TEST_EXPANDED(cuInit), "cuInit");
#undef TROPICAL_TEST_EXPANDED
#undef TROPICAL_TEST_SYMBOL
}

TEST(Driver, api_without_a_driver_throws_unavailable_naming_libcuda_every_time) {
  if (driver_loads()) GTEST_SKIP() << "the CUDA driver loads here";
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      (void)api();
      FAIL() << "api() succeeded on attempt " << attempt;
    } catch (const Unavailable& e) {
      EXPECT_EQ(e.code(), Errc::kUnavailable);
      EXPECT_TRUE(contains(e.what(), "libcuda.so.1")) << e.what();
      EXPECT_TRUE(contains(e.what(), "no usable CUDA driver")) << e.what();
    }
  }
}

TEST(Driver, available_never_throws) {
  bool result = true;
  EXPECT_NO_THROW(result = available());
  if (!driver_loads()) {
    EXPECT_FALSE(result);
  }
}

TEST(Driver, device_queries_without_a_driver_throw_unavailable) {
  if (driver_loads()) GTEST_SKIP() << "the CUDA driver loads here";
  EXPECT_THROW((void)device_count(), Unavailable);
  EXPECT_THROW((void)device_arch(0), Unavailable);
  EXPECT_THROW((void)primary_context(0), Unavailable);
  EXPECT_THROW(ScopedContext{0}, Unavailable);
}

TEST(Check, success_does_not_throw) { EXPECT_NO_THROW(check(CUDA_SUCCESS, "cuInit")); }

TEST(Check, failure_throws_cuda_error_with_call_result_and_name) {
  try {
    check(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc");
    FAIL() << "check() accepted an error";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), Errc::kCuda);
    EXPECT_EQ(e.result(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(e.call(), "cuMemAlloc");
    EXPECT_TRUE(contains(e.what(), "cuMemAlloc")) << e.what();
    EXPECT_TRUE(contains(e.what(), "CUDA_ERROR_INVALID_VALUE")) << e.what();
  }
}

TEST(Check, unknown_result_still_gives_a_message) {
  const auto odd = static_cast<CUresult>(12345);
  try {
    check(odd, "cuLaunchKernel");
    FAIL() << "check() accepted an error";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.result(), odd);
    EXPECT_TRUE(contains(e.what(), "cuLaunchKernel")) << e.what();
    EXPECT_TRUE(contains(e.what(), "12345")) << e.what();
  }
}

TEST(Gpu, devices_are_counted_and_have_a_supported_arch) {
  TROPICAL_REQUIRE_GPU();
  const int count = device_count();
  ASSERT_GT(count, 0);
  for (int device = 0; device < count; ++device) EXPECT_GE(device_arch(device), 70) << device;
  EXPECT_THROW((void)device_arch(count), InvalidArgument);
  EXPECT_THROW((void)primary_context(-1), InvalidArgument);
}

TEST(Gpu, primary_context_is_retained_once_and_shared_by_threads) {
  TROPICAL_REQUIRE_GPU();
  std::vector<CUcontext> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] { seen[i] = primary_context(0); });
  for (std::thread& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (const CUcontext c : seen) EXPECT_EQ(c, seen[0]);
  EXPECT_EQ(primary_context(0), seen[0]);
}

TEST(Gpu, scoped_context_makes_the_primary_context_current_and_restores) {
  TROPICAL_REQUIRE_GPU();
  const Api& a = api();
  CUcontext before = nullptr;
  check(a.cuCtxGetCurrent(&before), "cuCtxGetCurrent");
  {
    const ScopedContext scope(0);
    CUcontext current = nullptr;
    check(a.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    EXPECT_EQ(current, primary_context(0));
    CUdevice device = -1;
    check(a.cuCtxGetDevice(&device), "cuCtxGetDevice");
    EXPECT_EQ(device, 0);
  }
  CUcontext after = nullptr;
  check(a.cuCtxGetCurrent(&after), "cuCtxGetCurrent");
  EXPECT_EQ(after, before);
}

TEST(Gpu, compiled_cubin_loads_and_runs) {
  TROPICAL_REQUIRE_GPU();
  const Api& a = api();
  const std::string source =
      "extern \"C\" __global__ void tropical_probe_axpb(float* out, const float* in, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = in[i] * 3.0f + 0.5f;\n"
      "}\n";
  const CompiledImage image = compile({0, "tropical_probe_axpb", source, {}}, device_arch(0));

  const ScopedContext scope(0);
  CUmodule module = nullptr;
  check(a.cuModuleLoadData(&module, image.cubin.data()), "cuModuleLoadData");
  CUfunction function = nullptr;
  check(a.cuModuleGetFunction(&function, module, "tropical_probe_axpb"), "cuModuleGetFunction");

  constexpr int kN = 1000;
  std::vector<float> in(kN);
  for (int i = 0; i < kN; ++i) in[i] = static_cast<float>(i) * 0.25f;
  CUdeviceptr d_in = 0;
  CUdeviceptr d_out = 0;
  check(a.cuMemAlloc(&d_in, kN * sizeof(float)), "cuMemAlloc");
  check(a.cuMemAlloc(&d_out, kN * sizeof(float)), "cuMemAlloc");
  check(a.cuMemcpyHtoD(d_in, in.data(), kN * sizeof(float)), "cuMemcpyHtoD");

  CUstream stream = nullptr;
  check(a.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent start = nullptr;
  CUevent stop = nullptr;
  check(a.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(a.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  int n = kN;
  void* args[] = {&d_out, &d_in, &n};
  check(a.cuEventRecord(start, stream), "cuEventRecord");
  check(a.cuLaunchKernel(function, (kN + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr),
        "cuLaunchKernel");
  check(a.cuEventRecord(stop, stream), "cuEventRecord");
  check(a.cuStreamSynchronize(stream), "cuStreamSynchronize");
  float ms = -1.0f;
  check(a.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  EXPECT_GE(ms, 0.0f);

  std::vector<float> out(kN);
  check(a.cuMemcpyDtoH(out.data(), d_out, kN * sizeof(float)), "cuMemcpyDtoH");
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], in[i] * 3.0f + 0.5f) << i;

  check(a.cuEventDestroy(start), "cuEventDestroy");
  check(a.cuEventDestroy(stop), "cuEventDestroy");
  check(a.cuStreamDestroy(stream), "cuStreamDestroy");
  check(a.cuMemFree(d_in), "cuMemFree");
  check(a.cuMemFree(d_out), "cuMemFree");
}

}  // namespace
}  // namespace tropical::jit::driver
