#include "tropical/jit/driver.hpp"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "tropical/error.hpp"

namespace tropical::jit::driver {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";

struct Driver {
  Api api;
  std::string error;  // empty once every entry point resolved and cuInit succeeded
};

std::once_flag g_load_once;
Driver g_driver;
// Set as soon as every entry point is resolved, before cuInit: check() names
// errors through it even where cuInit failed, and never triggers a load.
std::atomic<const Api*> g_symbols{nullptr};

// Names for the results most worth reading when the driver cannot name them
// itself (it is not loaded); others print as their number only.
const char* fallback_name(CUresult result) {
#define TROPICAL_NAMED(code) \
  case code:                 \
    return #code;
  switch (result) {
    TROPICAL_NAMED(CUDA_SUCCESS)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_VALUE)
    TROPICAL_NAMED(CUDA_ERROR_OUT_OF_MEMORY)
    TROPICAL_NAMED(CUDA_ERROR_NOT_INITIALIZED)
    TROPICAL_NAMED(CUDA_ERROR_DEINITIALIZED)
    TROPICAL_NAMED(CUDA_ERROR_STUB_LIBRARY)
    TROPICAL_NAMED(CUDA_ERROR_NO_DEVICE)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_DEVICE)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_IMAGE)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_CONTEXT)
    TROPICAL_NAMED(CUDA_ERROR_NO_BINARY_FOR_GPU)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_PTX)
    TROPICAL_NAMED(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    TROPICAL_NAMED(CUDA_ERROR_INVALID_HANDLE)
    TROPICAL_NAMED(CUDA_ERROR_NOT_FOUND)
    TROPICAL_NAMED(CUDA_ERROR_ILLEGAL_ADDRESS)
    TROPICAL_NAMED(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    TROPICAL_NAMED(CUDA_ERROR_LAUNCH_FAILED)
    TROPICAL_NAMED(CUDA_ERROR_NOT_SUPPORTED)
    TROPICAL_NAMED(CUDA_ERROR_UNKNOWN)
    default:
      return nullptr;
  }
#undef TROPICAL_NAMED
}

std::string describe(CUresult result) {
  if (const Api* api = g_symbols.load(std::memory_order_acquire)) {
    const char* name = nullptr;
    const char* text = nullptr;
    api->cuGetErrorName(result, &name);
    api->cuGetErrorString(result, &text);
    if (name != nullptr) return text != nullptr ? std::string(name) + ": " + text : std::string(name);
  }
  const char* name = fallback_name(result);
  return name != nullptr ? name : "unknown CUresult";
}

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  return fn != nullptr;
}

// Runs inside call_once, so it reports through g_driver.error instead of throwing.
void load() noexcept {
  const std::string prefix = std::string("tropical: no usable CUDA driver: ") + kLibrary;
  // Only the soname is asked for: the toolkit's stubs directory holds
  // libcuda.so alone, so the loader cannot pick the stub up by this name.
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    g_driver.error = prefix + " could not be loaded (" + (why != nullptr ? why : "unknown dlopen error") +
                     "); a machine without an NVIDIA driver can compile kernels but not run them";
    return;
  }
  // Refuse a stub copied or linked under the real name anyway; its cuInit
  // would only fail later with a less clear message.
  if (link_map* map = nullptr; ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
                               map->l_name != nullptr && std::strstr(map->l_name, "/stubs/") != nullptr) {
    g_driver.error =
        prefix + " resolved to the toolkit's stub library " + map->l_name + ", which cannot run kernels";
    return;
  }

  // cuda.h maps many names to versioned ABI symbols (cuCtxPushCurrent ->
  // cuCtxPushCurrent_v2, cuMemAlloc -> cuMemAlloc_v2, ...). dlsym must be given
  // the symbol the header declares, never the bare name, which in libcuda is
  // the old ABI. TROPICAL_DRIVER_FN's argument is macro-expanded before it is
  // substituted (it is not an operand of # there), so TROPICAL_SYMBOL
  // stringizes the expanded name, and the member and its decltype follow the
  // same mapping. This binds exactly the prototypes compiled against, which
  // cuGetProcAddress would also do, but with one more versioned entry point
  // to resolve and its own flags to get right.
#define TROPICAL_SYMBOL(name) #name
  Api api;
  const char* missing = nullptr;
#define TROPICAL_DRIVER_FN(name)                                               \
  if (missing == nullptr && !resolve(handle, TROPICAL_SYMBOL(name), api.name)) \
    missing = TROPICAL_SYMBOL(name);
#include "tropical/jit/driver_functions.inc"
#undef TROPICAL_DRIVER_FN
#undef TROPICAL_SYMBOL
  if (missing != nullptr) {
    int version = 0;
    if (api.cuDriverGetVersion == nullptr || api.cuDriverGetVersion(&version) != CUDA_SUCCESS) version = 0;
    g_driver.error = prefix + " (CUDA " + (version != 0 ? version_text(version) : "version unknown") +
                     ") lacks " + missing + "; tropical needs a driver for CUDA " +
                     version_text(CUDA_VERSION) + " or newer";
    return;
  }
  g_driver.api = api;
  g_symbols.store(&g_driver.api, std::memory_order_release);

  if (const CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    g_driver.error = prefix + " loaded but cuInit failed: " + describe(r);
  }
}

CUdevice device_handle(int device) {
  const Api& a = api();
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw InvalidArgument("tropical: device " + std::to_string(device) + " does not exist (" +
                          std::to_string(count) + " CUDA devices)");
  }
  CUdevice handle = 0;
  check(a.cuDeviceGet(&handle, device), "cuDeviceGet");
  return handle;
}

struct ContextSlot {
  std::once_flag once;
  CUcontext context = nullptr;
  CUresult result = CUDA_SUCCESS;
  const char* call = "cuDevicePrimaryCtxRetain";
};

std::span<ContextSlot> context_slots() {
  // The device count is fixed once cuInit has succeeded; a throw here leaves
  // both statics uninitialised, to be tried again by the next caller.
  static const int count = device_count();
  static const std::unique_ptr<ContextSlot[]> slots = std::make_unique<ContextSlot[]>(count);
  return {slots.get(), static_cast<std::size_t>(count)};
}

}  // namespace

const Api& api() {
  std::call_once(g_load_once, load);
  if (!g_driver.error.empty()) throw Unavailable(g_driver.error);
  return g_driver.api;
}

bool available() noexcept {
  try {
    return device_count() > 0;
  } catch (...) {
    return false;
  }
}

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw CudaError(call, result, describe(result));
}

int version() {
  int v = 0;
  check(api().cuDriverGetVersion(&v), "cuDriverGetVersion");
  return v;
}

int device_count() {
  const Api& a = api();
  int count = 0;
  check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

int device_arch(int device) {
  const Api& a = api();
  const CUdevice handle = device_handle(device);
  int major = 0;
  int minor = 0;
  check(a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
        "cuDeviceGetAttribute");
  check(a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
        "cuDeviceGetAttribute");
  return 10 * major + minor;
}

CUcontext primary_context(int device) {
  const Api& a = api();
  const std::span<ContextSlot> slots = context_slots();
  if (device < 0 || static_cast<std::size_t>(device) >= slots.size()) {
    throw InvalidArgument("tropical: device " + std::to_string(device) + " does not exist (" +
                          std::to_string(slots.size()) + " CUDA devices)");
  }
  ContextSlot& slot = slots[static_cast<std::size_t>(device)];
  // A failed retain is kept, not retried: the slot is immutable once set.
  std::call_once(slot.once, [&]() noexcept {
    CUdevice handle = 0;
    slot.result = a.cuDeviceGet(&handle, device);
    if (slot.result != CUDA_SUCCESS) {
      slot.call = "cuDeviceGet";
      return;
    }
    slot.result = a.cuDevicePrimaryCtxRetain(&slot.context, handle);
  });
  check(slot.result, slot.call);
  return slot.context;
}

ScopedContext::ScopedContext(int device) {
  const CUcontext context = primary_context(device);
  check(api().cuCtxPushCurrent(context), "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  // The constructor succeeded, so the driver is loaded and initialised.
  CUcontext popped = nullptr;
  g_driver.api.cuCtxPopCurrent(&popped);
}

}  // namespace tropical::jit::driver
