#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "tropical/catalog.hpp"
#include "tropical/jit/storage/local_store.hpp"
#include "tropical/jit/registry.hpp"

namespace tropical {

namespace detail {

/// The process-wide registry once registry() has created it, else null.
extern std::atomic<jit::Registry*> registry_instance;

/// Creates the process-wide registry (once; thread-safe) and returns it.
jit::Registry& create_registry();

}  // namespace detail

/// The process-wide registry of the generated catalog behind every product,
/// with the disk cache configured from the environment (see CacheConfig::from_env).
/// Created on first use and never destroyed; afterwards one acquire load.
/// Never fails for the cache: a malformed TROPICAL_CACHE_MAX_SIZE warns once
/// and keeps the default.
inline jit::Registry& registry() {
  if (jit::Registry* r = detail::registry_instance.load(std::memory_order_acquire)) [[likely]] return *r;
  return detail::create_registry();
}

/// Compiles `kernels` (the whole catalog if empty) for sm_<arch> into memory
/// and the disk cache on `threads` workers (0: every core). Needs no GPU.
/// Small gemm products run on batched small tiles (catalog::pick_product):
/// name those too, or warm the whole catalog.
jit::WarmReport warm(int arch, std::span<const catalog::KernelId> kernels = {}, unsigned threads = 0,
                     const jit::WarmProgress& progress = {});

/// Number of CUDA devices this process can use: 0 without a driver, without
/// a GPU, or if the driver fails to initialise. Never throws; thread-safe.
int device_count() noexcept;

/// The version of the library the program runs with ("0.1.0"); compare with
/// TROPICAL_VERSION (tropical/version.hpp), the version it was compiled against.
const char* version() noexcept;

/// Compute capability of a device as 10 * major + minor (90 for an H100).
/// Throws Unavailable without a driver or GPU.
int device_arch(int device = 0);

/// What the library has done: per kernel in this process, and for the cache.
struct Stats {
  std::vector<jit::KernelStats> kernels;  ///< indexed by KernelId
  jit::CacheStats process;                ///< disk cache, this process
  jit::CacheStats machine;                ///< disk cache, every process of this user
};

/// A snapshot of the counters.
Stats stats();

/// Removes every entry of the disk cache; returns how many were removed.
std::uint64_t clear();

/// Where the disk cache is and how full.
jit::CacheInfo info();

}  // namespace tropical
