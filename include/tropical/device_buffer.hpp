#pragma once

#include <cstddef>
#include <vector>

#include "tropical/jit/driver.hpp"

namespace tropical {

/// n elements of T in the memory of one device, allocated in its primary
/// context and freed on destruction; for tools, tests and small programs that
/// do not manage device memory themselves. Throws CudaError or Unavailable.
template <class T>
class DeviceBuffer {
 public:
  /// Allocates n elements (at least one) on `device`; the contents are undefined.
  explicit DeviceBuffer(std::size_t n, int device = 0) : device_(device) {
    jit::driver::ScopedContext context(device_);
    jit::driver::check(jit::driver::api().cuMemAlloc(&ptr_, (n > 0 ? n : 1) * sizeof(T)), "cuMemAlloc");
  }
  /// Allocates host.size() elements on `device` and copies `host` there.
  explicit DeviceBuffer(const std::vector<T>& host, int device = 0) : DeviceBuffer(host.size(), device) {
    upload(host);
  }
  ~DeviceBuffer() {
    jit::driver::ScopedContext context(device_);
    jit::driver::api().cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Copies `host` to the start of the buffer (synchronous).
  void upload(const std::vector<T>& host) {
    jit::driver::ScopedContext context(device_);
    jit::driver::check(jit::driver::api().cuMemcpyHtoD(ptr_, host.data(), host.size() * sizeof(T)), "cuMemcpyHtoD");
  }
  /// Waits for the device's work, then copies its first n elements back.
  std::vector<T> download(std::size_t n) const {
    jit::driver::ScopedContext context(device_);
    jit::driver::check(jit::driver::api().cuCtxSynchronize(), "cuCtxSynchronize");
    std::vector<T> host(n);
    jit::driver::check(jit::driver::api().cuMemcpyDtoH(host.data(), ptr_, n * sizeof(T)), "cuMemcpyDtoH");
    return host;
  }
  /// The device pointer, to pass to the products.
  T* get() const { return reinterpret_cast<T*>(ptr_); }

 private:
  int device_;
  CUdeviceptr ptr_ = 0;
};

}  // namespace tropical
