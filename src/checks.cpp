// The GPU launchers' own checks (src/checks.hpp): where each operand lies, its device and allocation.
#include "checks.hpp"

#include <algorithm>
#include <string>

#include "tropical/jit/driver.hpp"

namespace tropical::detail {

Placement placement_of(const void* ptr, const char* name) {
  if (ptr == nullptr) invalid(std::string(name) + " is null");
  const auto& api = jit::driver::api();
  // One driver call for all three: it is made for every operand of every product.
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned int memory_type = 0;  // 0: not CUDA memory (cuPointerGetAttributes then succeeds with zeros)
  int ordinal = -1;
  CUdeviceptr range_start = 0;
  std::size_t range_size = 0;
  void* data[] = {&memory_type, &ordinal, &range_start, &range_size};
  const CUresult r = api.cuPointerGetAttributes(4, attributes, data, reinterpret_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS || memory_type == 0 || ordinal < 0) {
    invalid(std::string(name) + " is not memory of a CUDA device (plain host memory?)");
  }
  return Placement{ordinal, static_cast<std::uintptr_t>(range_start), static_cast<std::uint64_t>(range_size)};
}

void DeviceCheck::add(const Span& s) {
  if (s.bytes == 0) return;
  const Placement place = placement_of(reinterpret_cast<const void*>(s.start), s.name);
  if (device_ < 0) {
    device_ = place.device;
    first_ = s.name;
  } else if (place.device != device_) {
    invalid(std::string(s.name) + " is on device " + std::to_string(place.device) + " but " + first_ +
            " is on device " + std::to_string(device_));
  }
  // The allocation that holds the first byte must hold the last: the kernel would read or write past its
  // end (an illegal address that ends the context, or another buffer's bytes). No range: nothing to prove.
  if (place.range_size == 0 || s.start < place.range_start) return;
  const std::uint64_t left = place.range_size - std::min<std::uint64_t>(s.start - place.range_start, place.range_size);
  if (static_cast<std::uint64_t>(s.bytes) > left) {
    invalid(std::string(s.name) + " spans " + std::to_string(s.bytes) + " bytes from " + hex(s.start) +
            ", past the end of its allocation (" + std::to_string(left) + " bytes left of the " +
            std::to_string(place.range_size) + " from " + hex(place.range_start) +
            "): check the batch, the strides and the leading dimensions");
  }
}

int DeviceCheck::device(CUstream stream) const {
  // The special handles (legacy, per-thread) mean "the current context's".
  if (reinterpret_cast<std::uintptr_t>(stream) > 2) {
    CUcontext ctx = nullptr;
    jit::driver::check(jit::driver::api().cuStreamGetCtx(stream, &ctx), "cuStreamGetCtx");
    if (ctx != jit::driver::primary_context(device_)) {
      invalid("stream does not belong to the primary context of device " + std::to_string(device_) +
              ", where the operands live");
    }
  }
  return device_;
}

int device_of(const ProductSpans& s, CUstream stream) {
  DeviceCheck devices;
  for (const Span* x : {&s.a, &s.b, &s.c, &s.argmax}) devices.add(*x);
  return devices.device(stream);
}

int device_of(const GradientSpans& s, CUstream stream) {
  DeviceCheck devices;
  for (const Span* x : {&s.grad, &s.gc, &s.argmax, &s.other}) devices.add(*x);
  return devices.device(stream);
}

}  // namespace tropical::detail
