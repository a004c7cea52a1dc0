#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  /// Compiles `ptx` with the driver's JIT for the device's arch (in its
  /// primary context, default optimisation) and returns the CUBIN; nullopt
  /// where this loader has no JIT (the default). Throws CudaError, with the
  /// JIT's log, if the driver refuses the PTX (a PTX version newer than the
  /// driver, an arch it cannot target, an error in the PTX).
  virtual std::optional<std::vector<std::byte>> jit(int /*device*/, std::string_view /*ptx*/,
                                                    const std::string& /*name*/) {
    return std::nullopt;
  }
  /// Who made jit()'s CUBINs, for cache keys (e.g. "cuda-driver-jit 13.0"); empty where jit() has none. Never throws.
  virtual std::string jit_identity() noexcept { return {}; }
  /// Unloads a module load() returned; never throws.
  virtual void unload(int device, CUmodule module) noexcept = 0;
  /// True if `stream` is capturing a CUDA graph, or if that cannot be told; never throws.
  virtual bool capturing(CUstream stream) noexcept = 0;
};

/// The CUDA driver as a DeviceLoader (one shared instance).
std::shared_ptr<DeviceLoader> driver_loader();

}  // namespace tropical::jit
