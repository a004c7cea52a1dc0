#include "tropical/jit/device_loader.hpp"

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::jit {
namespace {

class DriverLoader final : public DeviceLoader {
 public:
  int device_count() override { return driver::device_count(); }

  int arch(int device) override { return driver::device_arch(device); }

  LoadedModule load(int device, const CompiledImage& image, const std::string& name,
                    const std::function<std::string()>& ptx) override {
    const auto& api = driver::api();
    driver::ScopedContext context(device);
    CUmodule module = nullptr;
    CUresult result = api.cuModuleLoadData(&module, image.cubin.data());
    if (result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE ||
        result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
      // A driver that cannot take the CUBIN may still JIT the PTX (slow, but it
      // runs). A disk hit brings no PTX: ptx() fetches it (from the entry, else
      // by compiling again). Other failures (no memory, a broken context) are
      // reported as they are.
      const std::string text = image.ptx.empty() ? ptx() : image.ptx;
      if (!text.empty() && api.cuModuleLoadData(&module, text.c_str()) == CUDA_SUCCESS) result = CUDA_SUCCESS;
    }
    driver::check(result, "cuModuleLoadData");
    CUfunction function = nullptr;
    if (const CUresult r = api.cuModuleGetFunction(&function, module, name.c_str()); r != CUDA_SUCCESS) {
      api.cuModuleUnload(module);
      driver::check(r, "cuModuleGetFunction");
    }
    return LoadedModule{module, function};
  }

  void unload(int device, CUmodule module) noexcept override {
    try {
      driver::ScopedContext context(device);
      driver::api().cuModuleUnload(module);
    } catch (...) {
      // The driver went away: the module went with it.
    }
  }

  bool capturing(CUstream stream) noexcept override {
    try {
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      // An error (the legacy stream while another stream captures, an
      // invalidated capture) counts as capturing: the call then waits for the
      // tuned kernel, which is always allowed.
      if (driver::api().cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS) return true;
      return status != CU_STREAM_CAPTURE_STATUS_NONE;
    } catch (...) {
      return true;
    }
  }
};

}  // namespace

std::shared_ptr<DeviceLoader> driver_loader() {
  static const std::shared_ptr<DeviceLoader> loader = std::make_shared<DriverLoader>();
  return loader;
}

}  // namespace tropical::jit
