#pragma once

// The GPU launchers' own checks, after the backend-neutral check() of tropical/problem.hpp: the one
// device every pointer of a call must live on, and each operand inside the allocation that holds its
// first byte (a batch or leading dimension past the end of a buffer is an InvalidArgument, not an
// illegal address in the kernel). Both ask the driver.

#include <cuda.h>

#include <cstdint>

#include "spans.hpp"

namespace tropical::detail {

/// Where one operand of a call lies: its device, and the allocation holding its first byte as the driver
/// reports it (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR / _RANGE_SIZE; both 0 if it reports none).
struct Placement {
  int device = -1;
  std::uintptr_t range_start = 0;
  std::uint64_t range_size = 0;
};

/// Where ptr lies, in one driver call; rejects null, host-only and unknown memory.
Placement placement_of(const void* ptr, const char* name);

/// Every pointer of a call must live on one device; that device runs the kernel.
class DeviceCheck {
 public:
  /// Adds an operand's span (nothing if it is empty): its first byte must be on the device of those added
  /// before, and its last byte inside the allocation that holds the first.
  void add(const Span& s);
  /// The common device; also checks that `stream` belongs to its primary context.
  int device(CUstream stream) const;

 private:
  int device_ = -1;
  const char* first_ = "";
};

/// The device of a checked product's operands (each inside its allocation), checking `stream` too.
int device_of(const ProductSpans& s, CUstream stream);

/// The device of a checked gradient's operands (each inside its allocation), checking `stream` too.
int device_of(const GradientSpans& s, CUstream stream);

}  // namespace tropical::detail
