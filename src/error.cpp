#include "tropical/error.hpp"

#include <utility>

namespace tropical {
namespace {

std::string compile_message(const std::string& kernel, const std::string& log,
                            const std::vector<std::string>& options) {
  std::string msg = "tropical: NVRTC failed to compile " + kernel + " with options:";
  for (const auto& o : options) msg += " " + o;
  msg += "\n" + log;
  return msg;
}

}  // namespace

CompileError::CompileError(std::string kernel, std::string log, std::vector<std::string> options)
    : Error(Errc::kCompile, compile_message(kernel, log, options)),
      kernel_(std::move(kernel)),
      log_(std::move(log)),
      options_(std::move(options)) {}

CudaError::CudaError(std::string call, CUresult result, const std::string& detail)
    : Error(Errc::kCuda, "tropical: " + call + " failed with CUresult " + std::to_string(result) +
                             (detail.empty() ? "" : " (" + detail + ")")),
      call_(std::move(call)),
      result_(result) {}

}  // namespace tropical
