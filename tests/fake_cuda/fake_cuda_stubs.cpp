// Every driver entry point the library resolves (tropical/jit/driver_functions.inc, through cuda.h's
// versioned names), as a weak alias of one function that fails with CUDA_ERROR_NOT_SUPPORTED; the
// definitions of fake_cuda.cpp take precedence at link time. The alias ignores its arguments, which the
// calling conventions of x86-64 and AArch64 allow: the caller owns them.
#include <cuda.h>

extern "C" CUresult tropical_fake_cuda_not_supported() { return CUDA_ERROR_NOT_SUPPORTED; }

#pragma GCC diagnostic ignored "-Wattribute-alias"
#define TROPICAL_DRIVER_FN(name) \
  extern "C" decltype(name) name __attribute__((weak, alias("tropical_fake_cuda_not_supported")));
#include "tropical/jit/driver_functions.inc"
#undef TROPICAL_DRIVER_FN
