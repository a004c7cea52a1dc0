// Every driver entry point the library resolves (tropical/jit/driver_functions.inc, through cuda.h's
// versioned names), as a weak alias of one function that fails with CUDA_ERROR_NOT_SUPPORTED; the
// definitions of fake_cuda.cpp take precedence at link time. The alias ignores its arguments, which the
// calling conventions of x86-64 and AArch64 allow: the caller owns them. The alias counts its calls.
#include <cuda.h>

#include <atomic>

namespace {

// Calls of the unsupported entry points: a context, a memset, a launch. A call refused by its argument
// checks makes none (tests read the count through tropical_fake_cuda_unsupported_calls()).
std::atomic<long> unsupported_calls{0};

}  // namespace

extern "C" CUresult tropical_fake_cuda_not_supported() {
  unsupported_calls.fetch_add(1, std::memory_order_relaxed);
  return CUDA_ERROR_NOT_SUPPORTED;
}

extern "C" long tropical_fake_cuda_unsupported_calls() { return unsupported_calls.load(std::memory_order_relaxed); }

#pragma GCC diagnostic ignored "-Wattribute-alias"
#define TROPICAL_DRIVER_FN(name) \
  extern "C" decltype(name) name __attribute__((weak, alias("tropical_fake_cuda_not_supported")));
#include "tropical/jit/driver_functions.inc"
#undef TROPICAL_DRIVER_FN
