#include "tropical/jit/device_loader.hpp"

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::jit {
namespace {

// Loading a module is a "potentially unsafe" call while any thread captures a CUDA graph in the global mode
// (torch.cuda.graph's default): the load would fail and invalidate that capture, whichever thread loads (the
// capturing one waiting for its tuned kernel, or a background compile's). A load queues nothing on any
// stream, so this thread relaxes its own capture mode around it, as PyTorch does around its own module loads.
class RelaxedCapture {
 public:
  RelaxedCapture() : swapped_(driver::api().cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS) {}
  ~RelaxedCapture() {
    if (swapped_) driver::api().cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;  // after the swap: the mode to restore
  bool swapped_;
};

class DriverLoader final : public DeviceLoader {
 public:
  int device_count() override { return driver::device_count(); }

  int arch(int device) override { return driver::device_arch(device); }

  LoadedModule load(int device, const CompiledImage& image, const std::string& name,
                    const std::function<std::string()>& ptx) override {
    const auto& api = driver::api();
    driver::ScopedContext context(device);
    const RelaxedCapture relaxed;
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

  std::optional<std::vector<std::byte>> jit(int device, std::string_view ptx, const std::string& name) override {
    const auto& api = driver::api();
    driver::ScopedContext context(device);
    const RelaxedCapture relaxed;
    // The JIT targets the current context's device (CU_JIT_TARGET_FROM_CUCONTEXT,
    // the default) at its default optimisation level; its log names what failed.
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof(log))};
    CUlinkState state = nullptr;
    driver::check(api.cuLinkCreate(2, options, values, &state), "cuLinkCreate");
    struct Destroy {
      const driver::Api& api;
      CUlinkState state;
      ~Destroy() { api.cuLinkDestroy(state); }
    } destroy{api, state};
    const auto fail = [&](CUresult result, const char* call) {
      if (result == CUDA_SUCCESS) return;
      log[sizeof(log) - 1] = '\0';
      throw CudaError(call, result, std::string("JIT of ") + name + " failed" + (log[0] ? std::string(": ") + log : ""));
    };
    // The driver wants the PTX NUL-terminated, the NUL counted in the size.
    const std::string text(ptx);
    fail(api.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(text.c_str()), text.size() + 1,
                           name.c_str(), 0, nullptr, nullptr),
         "cuLinkAddData");
    void* cubin = nullptr;
    std::size_t size = 0;
    fail(api.cuLinkComplete(state, &cubin, &size), "cuLinkComplete");
    // The CUBIN belongs to the link state: copied out before it is destroyed.
    const auto* bytes = static_cast<const std::byte*>(cubin);
    return std::vector<std::byte>(bytes, bytes + size);
  }

  std::string jit_identity() noexcept override {
    try {
      const int v = driver::version();
      return "cuda-driver-jit " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    } catch (...) {
      return {};
    }
  }

  void unload(int device, CUmodule module) noexcept override {
    try {
      driver::ScopedContext context(device);
      const RelaxedCapture relaxed;
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
