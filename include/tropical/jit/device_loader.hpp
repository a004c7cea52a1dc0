#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <string>

#include "tropical/jit/nvrtc.hpp"

namespace tropical::jit {

/// A module loaded on a device and the one function the registry needs from it.
struct LoadedModule {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

/// What a registry asks of the GPU driver. The default forwards to the CUDA
/// driver; tests substitute a fake to run the first-use protocol without a GPU.
/// Implementations must be thread-safe.
class DeviceLoader {
 public:
  virtual ~DeviceLoader() = default;
  /// Devices present; throws Unavailable without a driver.
  virtual int device_count() = 0;
  /// Compute capability of `device` as 10 * major + minor; throws like driver::device_arch.
  virtual int arch(int device) = 0;
  /// Loads `image` in the device's primary context and finds `name`; if the
  /// device rejects the CUBIN, loads the PTX that `ptx()` returns instead.
  /// Throws CudaError (nothing stays loaded then).
  virtual LoadedModule load(int device, const CompiledImage& image, const std::string& name,
                            const std::function<std::string()>& ptx) = 0;
  /// Unloads a module load() returned; never throws.
  virtual void unload(int device, CUmodule module) noexcept = 0;
  /// True if `stream` is capturing a CUDA graph, or if that cannot be told; never throws.
  virtual bool capturing(CUstream stream) noexcept = 0;
};

/// The CUDA driver as a DeviceLoader (one shared instance).
std::shared_ptr<DeviceLoader> driver_loader();

}  // namespace tropical::jit
