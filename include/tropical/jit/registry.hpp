#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tropical/jit/kernel_source.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/jit/storage/config.hpp"
#include "tropical/jit/storage/local_store.hpp"
#include "tropical/jit/storage/tiers.hpp"

namespace tropical::jit {

/// This process's activity for one kernel of a registry.
struct KernelStats {
  std::uint64_t compiles = 0;    ///< NVRTC compiles (any arch)
  std::uint64_t compile_ns = 0;  ///< wall time inside NVRTC
  std::uint64_t disk_hits = 0;   ///< images read from the disk cache
  std::uint64_t loads = 0;       ///< modules loaded onto a device
  std::uint64_t load_ns = 0;     ///< wall time of image lookup + cuModuleLoadData
};

/// Outcome of Registry::warm.
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

/// Called by Registry::warm after each kernel: kernels done, kernels in all, the one just done.
using WarmProgress = std::function<void(std::size_t done, std::size_t total, std::string_view name)>;

/// Lazily compiled, loaded kernels of one generated catalog, for every device
/// of the process. Knows nothing of what the kernels compute.
///
/// First use of (kernel, device): the image for the device's sm_XY is taken
/// from memory (the first tier: this registry's image slots), else the
/// persistent tiers in order (Tiers: the local directory, then whatever the
/// configuration adds), else compiled by NVRTC (one fragment, the fixed
/// compile_options()), then loaded with cuModuleLoadData in the device's
/// primary context. Images are shared by devices of the same arch.
///
/// Errors are sticky: a slot whose compile or load failed keeps that error and
/// every later call for it rethrows the same exception without retrying. For a
/// compile the inputs are fixed, so a retry would fail the same way; a module
/// load that failed for a passing reason (device memory exhausted) also stays
/// failed for the life of the process. Failures are never written to disk, so
/// a new process tries again. All members are thread-safe.
class Registry {
 public:
  /// Devices per process the registry can serve (ordinals 0 .. kMaxDevices-1).
  static constexpr int kMaxDevices = 64;

  /// A registry over `catalog` (entry i must have id i) with the tiers
  /// configured by `cache`. Compiles nothing until asked.
  Registry(Catalog catalog, CacheConfig cache);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The kernel `id` loaded on `device`, compiled or loaded on first use.
  /// Hot path once resolved: one acquire load, no lock. Throws CompileError,
  /// CudaError, Unavailable, or InvalidArgument for a bad id or device.
  CUfunction function(std::uint32_t id, int device) {
    if (id < catalog_.size() && device >= 0 && device < kMaxDevices) {
      const CUfunction f = functions_[id * kMaxDevices + device].function.load(std::memory_order_acquire);
      if (f != nullptr) [[likely]] return f;
    }
    return resolve(id, device);
  }

  /// The compiled image of kernel `id` for sm_<arch>, from memory, disk or
  /// NVRTC (at most one compile per key machine-wide). Needs no GPU. An image
  /// read from disk carries the CUBIN only (empty ptx): the PTX is fetched
  /// only if a device rejects the CUBIN.
  const CompiledImage& image(std::uint32_t id, int arch);

  /// Compiles `ids` (all kernels if empty) for sm_<arch> into memory and the
  /// disk cache on `threads` workers (0: one per core). Needs no GPU. Never
  /// throws for a kernel's failure: it is listed in the report. `progress`,
  /// if set, is called (serialised, on a worker thread) after each kernel with
  /// done/total counts; it must not throw. If fewer threads can be started,
  /// the work runs on those that did.
  WarmReport warm(std::span<const std::uint32_t> ids, int arch, unsigned threads = 0,
                  const WarmProgress& progress = {});

  /// This process's counters, indexed by kernel id.
  std::vector<KernelStats> stats() const;

  /// The catalog this registry serves.
  Catalog catalog() const noexcept { return catalog_; }

  /// The local directory tier (statistics, clear, info, entry paths).
  LocalStore& disk() noexcept { return tiers_->primary(); }

  /// Every persistent tier, in lookup order.
  Tiers& tiers() noexcept { return *tiers_; }

  /// The disk-cache key of kernel `id` for sm_<arch>; computing it loads no NVRTC.
  CacheKey cache_key(std::uint32_t id, int arch) const;

 private:
  /// One (kernel, device): the loaded function, or the error that stopped it.
  struct FunctionSlot {
    std::atomic<CUfunction> function{nullptr};
    std::once_flag once;
    std::exception_ptr error;
    CUmodule module = nullptr;
  };
  struct ImageSlot;
  struct Counters;

  CUfunction resolve(std::uint32_t id, int device);
  ImageSlot& image_slot(std::uint32_t id, int arch);

  Catalog catalog_;
  std::unique_ptr<Tiers> tiers_;
  std::unique_ptr<FunctionSlot[]> functions_;
  std::unique_ptr<Counters[]> counters_;
  struct ImageTable;
  std::unique_ptr<ImageTable> images_;
  std::atomic<unsigned> compiling_{0};
  std::atomic<unsigned> peak_compiling_{0};
};

}  // namespace tropical::jit
