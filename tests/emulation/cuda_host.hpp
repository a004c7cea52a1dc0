// CUDA C++ of the catalog's fragments compiled for the CPU, for tests: the keywords, the built-in
// coordinates and the block barrier. A fragment is included inside a namespace of its own after
// device_functions.inc (tests/emulation/fragment.cpp); emulator.cpp runs a grid one block at a time,
// each thread of the block a fiber that yields at every barrier, so shared memory (`static` here) is
// the block's and barriers order it as on a GPU. Semantics, not speed: a 128 x 128 tile of 256 threads
// runs a few hundred thousand products a second.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tropical::emulation {

/// blockIdx, threadIdx, blockDim, gridDim.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The coordinates of the running thread and its grid (the scheduler sets them before it resumes a thread).
extern Dim3 g_thread, g_block, g_block_dim, g_grid;

/// __syncthreads_or(predicate): waits until every thread of the block that has not returned arrives,
/// then returns whether any of them passed a nonzero predicate.
int barrier(int predicate);

/// A kernel's launch through a type-erased argument list (the cuLaunchKernel convention: args[i]
/// points to the i-th parameter's value).
using Entry = void (*)(void** args);

/// Registers the host build of kernel `name`'s fragment of one tier ("quick" or "tuned"); returns true.
bool add_kernel(const char* name, const char* tier, Entry entry);

/// The registered kernel, or nullptr.
Entry find_kernel(const char* name, const char* tier);

/// Runs entry(args) as a grid of `grid` blocks of `block` threads, block after block; throws
/// std::runtime_error if a thread waits at a barrier that the block's other threads never reach.
void launch(Entry entry, void** args, Dim3 grid, Dim3 block);

}  // namespace tropical::emulation

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
