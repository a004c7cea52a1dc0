// The exception hierarchy at the public boundary.
#include "tropical/error.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace tropical {
namespace {

TEST(Error, compile_error_carries_kernel_log_and_options_in_its_message) {
  const CompileError e("tropical_gemm_maxplus_f32", "k.cu(3): error: oops", {"--gpu-architecture=sm_90", "--fmad=false"});
  const std::string what = e.what();
  EXPECT_NE(what.find("tropical_gemm_maxplus_f32"), std::string::npos);
  EXPECT_NE(what.find("--gpu-architecture=sm_90 --fmad=false"), std::string::npos);
  EXPECT_NE(what.find("k.cu(3): error: oops"), std::string::npos);
  EXPECT_EQ(e.code(), Errc::kCompile);
  EXPECT_EQ(e.options().size(), 2u);
}

TEST(Error, cuda_error_carries_the_call_and_result) {
  const CudaError e("cuModuleLoadData", CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid");
  EXPECT_EQ(e.result(), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(e.call(), "cuModuleLoadData");
  EXPECT_NE(std::string(e.what()).find("cuModuleLoadData failed"), std::string::npos);
  EXPECT_EQ(e.code(), Errc::kCuda);
}

TEST(Error, every_kind_is_caught_as_a_tropical_error_with_its_code) {
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  const auto code_when_caught_as_error = [](auto&& e) {
    try {
      throw e;
    } catch (const Error& base) {
      return base.code();
    }
  };
  EXPECT_EQ(code_when_caught_as_error(InvalidArgument("x")), Errc::kInvalidArgument);
  EXPECT_EQ(code_when_caught_as_error(Unavailable("x")), Errc::kUnavailable);
  EXPECT_EQ(code_when_caught_as_error(CudaError("cuInit", CUDA_ERROR_NO_DEVICE)), Errc::kCuda);
  EXPECT_EQ(code_when_caught_as_error(CompileError("k", "log", {})), Errc::kCompile);
}

}  // namespace
}  // namespace tropical
