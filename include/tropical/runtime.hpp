#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/catalog.hpp"

/// Warm-up, statistics and the cache, behind the library's boundary: the
/// registry, storage and driver are compiled into libtropical, and these plain
/// structs are their public face.
namespace tropical {

/// This process's activity for one kernel (every device).
struct KernelStats {
  std::uint64_t compiles = 0;    ///< compiles by NVRTC or by the driver's JIT of shipped PTX (any arch)
  std::uint64_t compile_ns = 0;  ///< wall time inside NVRTC or the JIT
  std::uint64_t disk_hits = 0;   ///< images read from the disk cache
  std::uint64_t loads = 0;       ///< modules loaded onto a device
  std::uint64_t load_ns = 0;     ///< wall time of image lookup + cuModuleLoadData
  std::uint64_t quick_compiles = 0;       ///< of compiles, those of the quick fragment
  std::uint64_t quick_calls = 0;          ///< calls served by the quick kernel
  std::uint64_t background_compiles = 0;  ///< tuned compiles run on the background pool
  std::uint64_t first_to_tuned_ns = 0;    ///< first call to the tuned kernel serving, latest device (0: never tiered)
  std::uint64_t jit_compiles = 0;         ///< of compiles, those the driver's JIT made from shipped PTX
};

/// Counters of disk-cache activity, for this process or every process of the user.
struct CacheStats {
  std::uint64_t hits = 0;           ///< entries loaded and verified
  std::uint64_t misses = 0;         ///< lookups that found no usable entry
  std::uint64_t compiles = 0;       ///< images compiled to fill a miss
  std::uint64_t evictions = 0;      ///< entries removed by the size limit
  std::uint64_t errors = 0;         ///< corrupt/foreign entries and I/O failures
  std::uint64_t bytes_written = 0;  ///< entry bytes written
  std::uint64_t bytes_read = 0;     ///< entry bytes read on hits
  std::uint64_t compile_ns = 0;     ///< time spent compiling to fill misses
  std::uint64_t load_ns = 0;        ///< time spent reading and verifying hits
};

/// What is in the cache directory now.
struct CacheInfo {
  std::string dir;              ///< the configured directory
  bool enabled = false;         ///< false if disabled or degraded to memory only
  std::uint64_t entries = 0;    ///< entry files of this user present
  std::uint64_t bytes = 0;      ///< their total size
  std::uint64_t max_bytes = 0;  ///< the eviction limit
};

/// Outcome of warm().
struct WarmReport {
  std::size_t kernels = 0;     ///< kernels asked for
  std::size_t compiled = 0;    ///< compiled by NVRTC in this call
  std::size_t ready = 0;       ///< already in memory or the disk cache
  unsigned threads = 0;        ///< worker threads used
  unsigned peak_compiles = 0;  ///< most NVRTC compiles seen running at once
  double seconds = 0;          ///< wall time
  std::vector<std::string> errors;  ///< one message per kernel that failed
  std::size_t unavailable = 0;      ///< of those, failed because NVRTC could not be loaded
};

/// Called by warm() after each kernel (serialised, on a worker thread; must
/// not throw): kernels done, kernels in all, the name of the one just done.
using WarmProgress = std::function<void(std::size_t done, std::size_t total, std::string_view name)>;

/// Compiles `kernels` (the whole catalog if empty) for sm_<arch> into memory
/// and the disk cache on `threads` workers (0: every core). Needs no GPU.
/// Small gemm products run on batched small tiles (catalog::pick_product):
/// name those too, or warm the whole catalog. A kernel that fails is listed
/// in the report, not thrown.
WarmReport warm(int arch, std::span<const catalog::KernelId> kernels = {}, unsigned threads = 0,
                const WarmProgress& progress = {});

/// Publishes to the fleet cache (TROPICAL_REMOTE_CACHE) the kernels of `kernels` (the whole catalog if
/// empty) that the primary directory holds for sm_<arch>, that this process did not compile and that the
/// fleet lacks: each is compiled again and that compile is signed and published, never the cached entry (a
/// producer signs only what it made; an entry that differs from the compile is named in one warning).
/// Returns how many were published: 0 where this node may not publish (no fleet store, no signing key). A
/// kernel that fails to compile is skipped with a message on stderr. Needs NVRTC, not a GPU.
std::size_t publish_cached(int arch, std::span<const catalog::KernelId> kernels = {});

/// Number of CUDA devices this process can use: 0 without a driver, without
/// a GPU, or if the driver fails to initialise. Never throws; thread-safe.
int device_count() noexcept;

/// The version of the library the program runs with ("0.1.0"); compare with
/// TROPICAL_VERSION (tropical/version.hpp), the version it was compiled against.
const char* version() noexcept;

/// Compute capability of a device as 10 * major + minor (90 for an H100).
/// Throws InvalidArgument for a negative device or one past device_count(),
/// Unavailable without a driver or GPU.
int device_arch(int device = 0);

/// What the library has done: per kernel in this process, and for the cache.
struct Stats {
  std::vector<KernelStats> kernels;  ///< indexed by KernelId
  CacheStats process;                ///< disk cache, this process
  CacheStats machine;                ///< disk cache, every process of this user
};

/// A snapshot of the counters.
Stats stats();

/// Removes every entry of the disk cache; returns how many were removed.
std::uint64_t clear();

/// Where the disk cache is and how full.
CacheInfo info();

}  // namespace tropical
