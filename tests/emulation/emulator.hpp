// The CPU emulator of the catalog's CUDA fragments, for tests: the built-in coordinates, the block
// barrier, the kernels built for the CPU and their launch. emulator.cpp runs a grid one block at a time,
// each thread of the block a fiber that yields at every barrier, so shared memory (`static` in the
// fragments' host build, tests/emulation/cuda_host.hpp) is the block's and barriers order it as on a
// GPU. Semantics, not speed: a 128 x 128 tile of 256 threads runs a few hundred thousand products a second.
#pragma once

#include <cstddef>

namespace tropical::emulation {

/// blockIdx, threadIdx, blockDim, gridDim.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The coordinates of the running thread and its grid (the scheduler sets them before it resumes a thread).
extern Dim3 g_thread, g_block, g_block_dim, g_grid;

/// __syncthreads_or(predicate): waits until every thread of the block that has not returned arrives,
/// then returns whether any of them passed a nonzero predicate. Threads of one block waiting at different
/// calls of it (told apart by their return addresses) is an error, as on a GPU.
int barrier(int predicate);

/// A kernel's launch through a type-erased argument list (the cuLaunchKernel convention: args[i]
/// points to the i-th parameter's value).
using Entry = void (*)(void** args);

/// Registers the host build of kernel `name`'s fragment of one tier ("quick" or "tuned"); returns true.
bool add_kernel(const char* name, const char* tier, Entry entry);

/// The registered kernel, or nullptr.
Entry find_kernel(const char* name, const char* tier);

/// Waits until every thread of the running thread's warp (32 consecutive threads) that has not returned arrives
/// (a warp's instruction: shuffles); the other warps' threads go on meanwhile. Threads of one warp waiting at
/// different calls of it is an error.
void warp_barrier();

/// Gives the other threads of the block a turn without waiting at a barrier (a spin-wait's step: mbarriers).
void yield();

/// Tells the scheduler that the running thread changed what a spinning thread waits for (an mbarrier's arrival):
/// a block whose threads only yield, with no progress over many turns, is a deadlock and throws.
void progress();

/// Runs entry(args) as a grid of `grid` blocks of `block` threads, block after block, the threads
/// between two barriers in increasing order, then decreasing, then increasing... (a race between them
/// shows in one of the orders); throws std::runtime_error if the threads of a block (of a warp, at a warp's
/// barrier) wait at different barriers, or spin (yield) without progress.
void launch(Entry entry, void** args, Dim3 grid, Dim3 block);

}  // namespace tropical::emulation

