#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

namespace tropical {

namespace detail {

/// Allocates `bytes` (at least one) in the primary context of `device`. Throws CudaError or Unavailable.
CUdeviceptr device_alloc(std::size_t bytes, int device);
/// Frees memory of device_alloc; never throws (a failure leaks the memory).
void device_free(CUdeviceptr ptr, int device) noexcept;
/// Copies `bytes` from the host to the device (synchronous). Throws CudaError.
void copy_to_device(CUdeviceptr dst, const void* src, std::size_t bytes, int device);
/// Waits for the device's work, then copies `bytes` to the host. Throws CudaError.
void copy_to_host(void* dst, CUdeviceptr src, std::size_t bytes, int device);

}  // namespace detail

/// n elements of T in the memory of one device, allocated in its primary
/// context and freed on destruction; for tools, tests and small programs that
/// do not manage device memory themselves. Throws CudaError or Unavailable.
template <class T>
class DeviceBuffer {
 public:
  /// Allocates n elements (at least one) on `device`; the contents are undefined.
  explicit DeviceBuffer(std::size_t n, int device = 0)
      : device_(device), ptr_(detail::device_alloc((n > 0 ? n : 1) * sizeof(T), device)) {}
  /// Allocates host.size() elements on `device` and copies `host` there.
  explicit DeviceBuffer(const std::vector<T>& host, int device = 0) : DeviceBuffer(host.size(), device) {
    upload(host);
  }
  ~DeviceBuffer() { detail::device_free(ptr_, device_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Copies `host` to the start of the buffer (synchronous).
  void upload(const std::vector<T>& host) { detail::copy_to_device(ptr_, host.data(), host.size() * sizeof(T), device_); }
  /// Waits for the device's work, then copies its first n elements back.
  std::vector<T> download(std::size_t n) const {
    std::vector<T> host(n);
    detail::copy_to_host(host.data(), ptr_, n * sizeof(T), device_);
    return host;
  }
  /// The device pointer, to pass to the products.
  T* get() const { return reinterpret_cast<T*>(ptr_); }

 private:
  int device_;
  CUdeviceptr ptr_;
};

}  // namespace tropical
