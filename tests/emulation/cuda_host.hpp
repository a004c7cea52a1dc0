// CUDA C++ of the catalog's fragments compiled for the CPU: the keywords and built-ins as macros over
// the emulator (tests/emulation/emulator.hpp). Only for tests/emulation/fragment.cpp, after every
// standard header it needs: the macros rename words that the standard library's headers use too
// (__noinline__ in libstdc++'s attributes).
#pragma once

#include "emulator.hpp"

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __launch_bounds__(...)
#define threadIdx (::tropical::emulation::g_thread)
#define blockIdx (::tropical::emulation::g_block)
#define blockDim (::tropical::emulation::g_block_dim)
#define gridDim (::tropical::emulation::g_grid)
#define __syncthreads() ((void)::tropical::emulation::barrier(0))
#define __syncthreads_or(predicate) ::tropical::emulation::barrier((predicate) ? 1 : 0)
