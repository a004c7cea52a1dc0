// A stand-in for libcuda.so.1 in tests without a GPU: one device (sm_90) and the three allocations of
// fake_cuda.hpp, enough for the argument checks that ask the driver where a pointer lies, and a cuStreamQuery
// that answers as a test says, for the distributed runs' bounded waits. Every entry point
// the library resolves exists (fake_cuda_stubs.cpp); those not defined here fail with
// CUDA_ERROR_NOT_SUPPORTED, so a call that passes its checks stops at its first context operation
// (cuDevicePrimaryCtxRetain: a CudaError) before anything is compiled or launched.
#include <cuda.h>

#include <cstring>

#include "fake_cuda.hpp"

namespace {

using tropical::fake_cuda::kBytes;
using tropical::fake_cuda::kFirst;
using tropical::fake_cuda::kSecond;
using tropical::fake_cuda::kThird;

/// The allocation holding ptr: its start, or 0 for an address that is not CUDA memory.
CUdeviceptr allocation_of(CUdeviceptr ptr) {
  if (ptr >= kFirst && ptr < kSecond) return kFirst;
  if (ptr >= kSecond && ptr < kSecond + kBytes) return kSecond;
  if (ptr >= kThird && ptr < kThird + kBytes) return kThird;
  return 0;
}

/// Writes the attribute of the allocation starting at `start` (0: none, the driver's zeros).
void attribute(CUpointer_attribute what, void* data, CUdeviceptr start) {
  switch (what) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = start != 0 ? CU_MEMORYTYPE_DEVICE : 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = start != 0 ? 0 : -2;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = start;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<std::size_t*>(data) = start != 0 ? kBytes : 0;
      break;
    default:
      break;
  }
}

// cuStreamQuery's answers (fake_cuda.hpp's kSetStreamQuery): CUDA_ERROR_NOT_READY that many times (forever
// where negative), then CUDA_SUCCESS.
long not_ready_rounds = 0;
long stream_queries = 0;

}  // namespace

extern "C" {

void tropical_fake_cuda_set_stream_query(long rounds) {
  not_ready_rounds = rounds;
  stream_queries = 0;
}

long tropical_fake_cuda_stream_queries() { return stream_queries; }

CUresult cuStreamQuery(CUstream) {
  ++stream_queries;
  if (not_ready_rounds == 0) return CUDA_SUCCESS;
  if (not_ready_rounds > 0) --not_ready_rounds;
  return CUDA_ERROR_NOT_READY;
}

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult, const char** name) {
  *name = "CUDA_ERROR_NOT_SUPPORTED";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "not supported by the tests' fake libcuda.so.1";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {  // an H100's
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 48 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 227 * 1024;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute what, CUdeviceptr ptr) {
  const CUdeviceptr start = allocation_of(ptr);
  if (start == 0) return CUDA_ERROR_INVALID_VALUE;
  attribute(what, data, start);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* what, void** data, CUdeviceptr ptr) {
  const CUdeviceptr start = allocation_of(ptr);
  for (unsigned int i = 0; i < count; ++i) attribute(what[i], data[i], start);
  return CUDA_SUCCESS;  // as the driver: an address that is not CUDA memory gets zeros, not an error
}

}  // extern "C"
