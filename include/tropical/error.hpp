#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace tropical {

/// What kind of failure an Error reports.
enum class Errc {
  kCompile,          ///< NVRTC rejected a fragment
  kCuda,             ///< a CUDA driver call failed
  kInvalidArgument,  ///< bad shape, null or wrong-device pointer, bad option
  kUnavailable,      ///< a run-time library (libcuda, libnvrtc) or a device is missing
};

/// Base of every exception the library throws at its public boundary.
class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The kind of failure.
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

/// NVRTC failed to compile a fragment; carries the compiler log and options.
class CompileError : public Error {
 public:
  CompileError(std::string kernel, std::string log, std::vector<std::string> options);
  const std::string& kernel() const noexcept { return kernel_; }
  /// The NVRTC program log, verbatim.
  const std::string& log() const noexcept { return log_; }
  /// The option list the compile used, in order.
  const std::vector<std::string>& options() const noexcept { return options_; }

 private:
  std::string kernel_;
  std::string log_;
  std::vector<std::string> options_;
};

/// A CUDA driver call failed; carries the call and its CUresult.
class CudaError : public Error {
 public:
  CudaError(std::string call, CUresult result, const std::string& detail = {});
  const std::string& call() const noexcept { return call_; }
  CUresult result() const noexcept { return result_; }

 private:
  std::string call_;
  CUresult result_;
};

/// An argument was rejected before any work was queued (shape, pointer, device).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(Errc::kInvalidArgument, what) {}
};

/// A run-time library or a device the call needs is not present.
class Unavailable : public Error {
 public:
  explicit Unavailable(const std::string& what) : Error(Errc::kUnavailable, what) {}
};

}  // namespace tropical
