#include "tropical/device_buffer.hpp"

#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace driver = jit::driver;

CUdeviceptr device_alloc(std::size_t bytes, int device) {
  driver::ScopedContext context(device);
  CUdeviceptr ptr = 0;
  driver::check(driver::api().cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return ptr;
}

void device_free(CUdeviceptr ptr, int device) noexcept {
  try {
    driver::ScopedContext context(device);
    driver::api().cuMemFree(ptr);
  } catch (...) {
    // A destructor's free: the context is gone (driver shut down); nothing to release any more.
  }
}

void copy_to_device(CUdeviceptr dst, const void* src, std::size_t bytes, int device) {
  driver::ScopedContext context(device);
  driver::check(driver::api().cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

void copy_to_host(void* dst, CUdeviceptr src, std::size_t bytes, int device) {
  driver::ScopedContext context(device);
  driver::check(driver::api().cuCtxSynchronize(), "cuCtxSynchronize");
  driver::check(driver::api().cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

}  // namespace tropical::detail
