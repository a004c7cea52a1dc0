#pragma once

// What the device runners (device.cpp, device_counting.cpp) share: steps on device memory queued on a stream,
// the checks every device run makes before it queues anything (every pointer on the run's device, the stream's
// capture state), and the wait that guards a workspace the run allocated.

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>

#include "checks.hpp"
#include "run.hpp"

namespace tropical::einsum_detail {

/// Steps on device memory queued on a stream: copies by the library's permute kernel, products by gemm_batched's
/// kernels, the ones by byte memsets (stream operations a CUDA graph can capture: no host-to-device copy).
class DeviceBackend final : public Backend {
 public:
  DeviceBackend(const detail::EinsumKernels& kernels, CUstream stream) : kernels_(kernels), stream_(stream) {}
  void copy(const CopyStep& copy, const void* src, void* dst) override;
  void product(const Product<void>& p) override;
  void fill(void* dst, const void* one, std::int64_t count) override;

 private:
  const detail::EinsumKernels& kernels_;
  CUstream stream_;
};

/// The device of a run, checked before anything is queued: every array added must be memory of one device,
/// each inside its allocation (detail::DeviceCheck), and the stream must belong to that device's primary context.
class RunDevices {
 public:
  /// Adds `bytes` from ptr, named `name` in messages.
  void add(const void* ptr, std::size_t bytes, const std::string& name);
  /// Adds every operand of plan (its shape's elements of element_bytes), named `what` i.
  void add_operands(const detail::EinsumProgram& plan, std::span<const void* const> operands,
                    std::size_t element_bytes, const char* what);
  /// The common device (throws InvalidArgument naming the array or the stream at fault).
  int device(CUstream stream) const { return check_.device(stream); }

 private:
  std::deque<std::string> names_;  // DeviceCheck keeps the first name's pointer: a deque never moves them
  detail::DeviceCheck check_;
};

/// Refuses, with InvalidArgument naming `why`, a run that would wait for the stream or allocate while the stream
/// (or, for the legacy stream, another stream of its context) is being captured into a CUDA graph: either would
/// break the capture. An error of the query counts as capturing (the wait would fail the same way).
void refuse_under_capture(CUstream stream, const char* why);

/// Waits for `stream` when it goes out of scope (an exception's way out included) if `active`: a workspace the
/// run allocated must not be freed while steps queued on it may still run. Its error is ignored (the run's own
/// error, or the explicit wait before it, reports).
struct WaitOnExit {
  CUstream stream;
  bool active;
  ~WaitOnExit();
};

}  // namespace tropical::einsum_detail
