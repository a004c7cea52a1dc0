#pragma once

#include <cuda.h>

#include <cstddef>

namespace tropical::jit::driver {

/// The CUDA driver entry points the library uses, resolved from libcuda.so.1
/// with dlopen (the library never links against libcuda).
struct Api {
#define TROPICAL_DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "tropical/jit/driver_functions.inc"
#undef TROPICAL_DRIVER_FN
};

/// The driver API, loaded and initialised (cuInit) once per process.
/// Thread-safe. Throws Unavailable with a clear message when libcuda.so.1 is
/// missing or cuInit fails (no GPU, no driver), every time it is called.
const Api& api();

/// True if the driver loads and reports at least one device; never throws.
bool available() noexcept;

/// Throws CudaError naming `call` unless `result` is CUDA_SUCCESS; the message
/// names the error through the driver, or from a built-in table if none is loaded.
void check(CUresult result, const char* call);

/// The driver's CUDA version as cuDriverGetVersion reports it (13000 for 13.0). Throws Unavailable.
int version();

/// Number of CUDA devices (0 if the driver loads but sees none). Throws Unavailable.
int device_count();

/// Compute capability of `device` as 10 * major + minor (90 for an H100).
/// Throws Unavailable, InvalidArgument for a device that does not exist, CudaError.
int device_arch(int device);

/// The device's primary context, retained once for the life of the process.
/// Thread-safe. Throws like device_arch(); a failed retain is not retried.
CUcontext primary_context(int device);

/// Makes the device's primary context current for a scope (push on construction,
/// pop on destruction), restoring the previous one. Throws like primary_context().
class ScopedContext {
 public:
  explicit ScopedContext(int device);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
};

}  // namespace tropical::jit::driver
