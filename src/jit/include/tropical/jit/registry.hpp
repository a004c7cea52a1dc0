#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tropical/jit/background.hpp"
#include "tropical/jit/device_loader.hpp"
#include "tropical/jit/kernel_source.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/storage/config.hpp"
#include "tropical/storage/local_store.hpp"
#include "tropical/storage/store_chain.hpp"
#include "tropical/jit/tiers.hpp"
#include "tropical/jit/zero_pages.hpp"

namespace tropical::jit {

// The storage's types that the registry's interface takes, by their names in the jit core.
using storage::CacheConfig;
using storage::CacheKey;
using storage::ImageParts;
using storage::LogLevel;

/// This process's activity for one kernel of a registry.
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

/// The first option of a cache key whose image the driver's JIT made from
/// shipped PTX (Registry::jit_cache_key), never an NVRTC option.
inline constexpr std::string_view kDriverJitOption = "--driver-jit";

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
/// from memory (the first store: this registry's image slots), else the
/// persistent stores in order (storage::StoreChain: the local directory, then whatever the
/// configuration adds), else compiled by NVRTC (one fragment, the fixed
/// compile_options()), then loaded with cuModuleLoadData in the device's
/// primary context. Images are shared by devices of the same arch.
///
/// Shipped PTX (TierConfig::ptx): a fragment whose PTX ships with the library
/// (the quick fragments and the kernels with one tier) is, on a device of the
/// PTX's arch or newer, made by the driver's JIT from that PTX instead of by
/// NVRTC, and stored under jit_cache_key(); an NVRTC image of the fragment in
/// the stores (tropical warm, a layer) still serves first, and a JIT the
/// driver refuses falls back to NVRTC. Both give the same arithmetic.
///
/// Tiered first use (a TierConfig with a quick table; DESIGN.md, "Tiers"): a first use
/// that finds no tuned image in memory or on disk loads and publishes the
/// quick kernel (compiled in ~0.1 s) and queues the tuned compile on a
/// bounded background pool; once loaded, the tuned kernel replaces it for
/// every later call (one atomic pointer swap). The quick module stays loaded
/// until the registry is destroyed, since launches queued on streams may
/// still use it. A capturing stream, a call that allows only the tuned kernel,
/// and a call whose work the quick kernel would finish after the tuned
/// compile (the cost model) wait for the tuned kernel instead. If the tuned
/// compile fails, the quick kernel goes on serving the calls that may take it.
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

  /// A registry over `catalog` (entry i must have id i) with the storage
  /// stores configured by `cache` and first use set up by `tiers` (default:
  /// one kernel tier). Compiles nothing until asked.
  Registry(Catalog catalog, storage::CacheConfig cache, TierConfig tiers = {});
  /// Drops background jobs not started, waits for those running, unloads every module.
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The kernel `id` loaded on `device` for one call, compiled or loaded on
  /// first use: the tuned kernel, or the quick one where `request` allows it.
  /// Hot path once the tuned kernel is published: settled(), then no lock.
  /// Throws CompileError, CudaError, Unavailable, or InvalidArgument for a bad id or device.
  const Resolved& kernel(std::uint32_t id, int device, const Request& request = {}) {
    if (const Resolved* r = settled(id, device)) [[likely]] return *r;
    return resolve(id, device, request);
  }

  /// The tuned kernel `id` on `device` if it is published for every call,
  /// else null (also for a bad id or device): one acquire load of the
  /// published pointer, no other branch on the kernel's state. Never blocks or throws.
  const Resolved* settled(std::uint32_t id, int device) const noexcept {
    if (id < catalog_.size() && static_cast<unsigned>(device) < kMaxDevices) [[likely]] {
      return settled_[id * kMaxDevices + static_cast<unsigned>(device)].load(std::memory_order_acquire);
    }
    return nullptr;
  }

  /// The tuned kernel `id` on `device` if it is published; else null, having queued its compile and load on
  /// the background pool (once per kernel and device, unless the pool refused the job), so that a later call
  /// finds it. Never waits for a compile (the compiler's first load in the process aside, as a first use's) nor
  /// throws: for a kernel the caller can do without for now (split k's second kernel: the product runs unsplit
  /// meanwhile). A compile that fails, or a job the pool refuses because it is shutting down or throws on,
  /// leaves it null for the process. Where no store has the kernel and NVRTC was never loaded in the process,
  /// the first call loads it (a trivial compile on the caller's thread, once a process).
  const Resolved* kernel_if_ready(std::uint32_t id, int device) noexcept;

  /// The tuned kernel `id` on `device` (waits for it on first use); throws like kernel().
  CUfunction function(std::uint32_t id, int device) {
    if (const Resolved* r = settled(id, device)) [[likely]] return r->function;
    return resolve(id, device, Request{0, nullptr, false}).function;
  }

  /// The compiled image of kernel `id` for sm_<arch>, from memory, disk or
  /// NVRTC (at most one compile per key machine-wide). Needs no GPU. An image
  /// read from disk carries the CUBIN only (empty ptx): the PTX is fetched
  /// only if a device rejects the CUBIN.
  const CompiledImage& image(std::uint32_t id, int arch) { return image(id, arch, Tier::kTuned); }

  /// The same for one tier (kQuick of a kernel with one tier: InvalidArgument).
  /// `parts` is what the first call reads and verifies from a store: warm()
  /// asks for the whole entry, so that a lower store's entry with a damaged PTX
  /// is a miss it compiles (and stores) rather than a hit it cannot copy.
  const CompiledImage& image(std::uint32_t id, int arch, Tier tier, storage::ImageParts parts = storage::ImageParts::kCubin);

  /// Compiles `ids` (all kernels if empty) for sm_<arch> into memory and the
  /// disk cache on `threads` workers (0: one per core). Needs no GPU. Never
  /// throws for a kernel's failure: it is listed in the report. `progress`,
  /// if set, is called (serialised, on a worker thread) after each kernel with
  /// done/total counts; it must not throw. If fewer threads can be started,
  /// the work runs on those that did. Returns once hits of a layer or the
  /// remote are copied into the local directory too (waiting at most 30 s).
  WarmReport warm(std::span<const std::uint32_t> ids, int arch, unsigned threads = 0,
                  const WarmProgress& progress = {});

  /// This process's counters, indexed by kernel id.
  std::vector<KernelStats> stats() const;

  /// The catalog this registry serves.
  Catalog catalog() const noexcept { return catalog_; }

  /// The local directory store (statistics, clear, info, entry paths).
  storage::LocalStore& disk() noexcept { return stores_->primary(); }

  /// Every persistent store, in lookup order.
  storage::StoreChain& stores() noexcept { return *stores_; }

  /// The disk-cache key of kernel `id` (of one tier) for sm_<arch>; computing it loads no NVRTC.
  storage::CacheKey cache_key(std::uint32_t id, int arch, Tier tier = Tier::kTuned) const;

  /// The key under which a first use on a device of sm_<arch> stores the
  /// image the driver's JIT makes from kernel `id`'s shipped PTX of `tier`
  /// (kDriverJitOption, the PTX's digest and arch, the loader's jit_identity());
  /// nullopt if that tier ships no PTX for the arch or the loader has no JIT.
  std::optional<storage::CacheKey> jit_cache_key(std::uint32_t id, int arch, Tier tier = Tier::kTuned) const;

  /// True if kernel `id` has a quick tier and the mode is not kTunedOnly.
  bool tiered(std::uint32_t id) const noexcept;

  /// True if kernel `id` has a fragment of `tier` (whatever the mode): cache_key(id, arch, tier) is valid.
  bool has_tier(std::uint32_t id, Tier tier) const noexcept;

 private:
  /// One (kernel, device), made on its first use: the published kernel (its
  /// entry of current_), the error that stopped it, and both tiers' loads.
  /// `current` points at `quick` or `tuned`, each written once before it is
  /// published and never again.
  struct FunctionSlot {
    explicit FunctionSlot(std::atomic_ref<const Resolved*> published) : current(published) {}
    const std::atomic_ref<const Resolved*> current;
    std::once_flag once;
    std::exception_ptr error;
    std::once_flag tuned_once;
    std::exception_ptr tuned_error;
    Resolved quick, tuned;
    CUmodule quick_module = nullptr, tuned_module = nullptr;
    std::atomic<std::int64_t> first_call_ns{0};  // steady clock; 0: the tuned kernel was published first
    std::atomic<bool> queued{false};             // kernel_if_ready() queued the tuned compile
  };
  struct ImageSlot;
  struct Counters;

  const Resolved& resolve(std::uint32_t id, int device, const Request& request);
  FunctionSlot& function_slot(std::uint32_t id, int device);
  void first_use(std::uint32_t id, int device, FunctionSlot& slot) noexcept;
  void ensure_tuned(std::uint32_t id, int device, FunctionSlot& slot) noexcept;
  bool tuned_available(std::uint32_t id, int arch);
  Resolved load(std::uint32_t id, int device, int arch, Tier tier, CUmodule& module);
  ImageSlot& image_slot(std::uint32_t id, int arch, Tier tier);
  const KernelSource& source(std::uint32_t id, Tier tier) const;
  const ShippedPtx* shipped_ptx(std::uint32_t id, int arch, Tier tier) const noexcept;
  // The image for a device: from shipped PTX through the driver's JIT where
  // the kernel ships it (an NVRTC image in the stores still serves first), else image().
  const CompiledImage& device_image(std::uint32_t id, int device, int arch, Tier tier);
  void fetch(ImageSlot& slot, std::uint32_t id, int arch, Tier tier, storage::ImageParts parts);
  CompiledImage tracked_compile(std::uint32_t id, Tier tier, const std::function<CompiledImage()>& run);
  CompiledImage run_compiler(const KernelSource& kernel, int arch, Tier tier) const;

  Catalog catalog_;
  TierConfig tier_config_;
  std::unique_ptr<storage::StoreChain> stores_;
  // Indexed id * kMaxDevices + device, in zero pages: a new registry makes no slot.
  AtomicPointers<const Resolved> current_;
  // The tuned kernel once it is published for every call (kernel()'s hot path), else null.
  AtomicPointers<const Resolved> settled_;
  AtomicPointers<FunctionSlot> slots_;
  std::unique_ptr<Counters[]> counters_;
  struct ImageTable;
  std::unique_ptr<ImageTable> images_;
  std::atomic<unsigned> compiling_{0};
  std::atomic<unsigned> peak_compiling_{0};
  // Last member: destroyed first, so no job outlives what it uses.
  std::unique_ptr<BackgroundPool> pool_;
};

}  // namespace tropical::jit
