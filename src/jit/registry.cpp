#include "tropical/jit/registry.hpp"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>
#include <utility>

#include "registry_parts.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/exit_guard.hpp"
#include "tropical/storage/io.hpp"

namespace tropical::jit {
namespace {

/// Steady-clock time in ns; never 0 (0 marks "not set" in the slots).
std::int64_t now_ns() {
  return std::max<std::int64_t>(
      1, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

}  // namespace

thread_local bool t_background = false;
thread_local std::uint64_t t_compiles = 0;

namespace {

/// Queues `ensure` (a tuned kernel's compile and load) on `pool`, the exit guard armed before the job can run
/// and the job run under its scope (nothing starts once the process exits); false where the pool takes no job.
template <class Ensure>
bool queue_tuned(BackgroundPool& pool, Ensure ensure) {
  exit_guard::arm(exit_guard::After::kDriver);
  return pool.submit([ensure]() noexcept {
    const exit_guard::Scope guard;
    if (!guard) return;
    t_background = true;
    ensure();
    t_background = false;
  });
}

}  // namespace

Registry::Registry(Catalog catalog, storage::CacheConfig cache, TierConfig tiers)
    : catalog_(catalog),
      tier_config_(std::move(tiers)),
      stores_(std::make_unique<storage::StoreChain>(cache)),
      current_(catalog.size() * kMaxDevices),
      settled_(catalog.size() * kMaxDevices),
      slots_(catalog.size() * kMaxDevices),
      counters_(std::make_unique<Counters[]>(catalog.size())),
      images_(std::make_unique<ImageTable>()),
      pool_(std::make_unique<BackgroundPool>(tier_config_.background_threads)) {
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    if (catalog_[i].id != i) {
      throw InvalidArgument("tropical: catalog entry " + std::to_string(i) + " (" +
                            std::string(catalog_[i].name) + ") has id " +
                            std::to_string(catalog_[i].id));
    }
  }
  const TierTable& t = tier_config_.table;
  if (!t.quick.empty() && (t.quick.size() != catalog_.size() || t.tuned_launch.size() != catalog_.size() ||
                           t.quick_launch.size() != catalog_.size() || t.cost.size() != catalog_.size())) {
    throw InvalidArgument("tropical: the tier table does not have one entry per kernel");
  }
  if (!tier_config_.loader) tier_config_.loader = driver_loader();
}

CompiledImage Registry::run_compiler(const KernelSource& kernel, int arch, Tier tier) const {
  return tier_config_.compiler ? tier_config_.compiler(kernel, arch) : compile(kernel, arch, effort_of(tier));
}

Registry::~Registry() {
  // Background jobs use the slots and the disk store: they stop first.
  pool_.reset();
  // Modules go with the registry. The process-wide registry of the tropical
  // API is never destroyed, so this never runs while the driver shuts down.
  for (std::size_t i = 0; i < catalog_.size() * kMaxDevices; ++i) {
    const std::unique_ptr<FunctionSlot> slot(slots_[i].load());
    if (slot == nullptr) continue;
    const int device = static_cast<int>(i % kMaxDevices);
    for (CUmodule module : {slot->quick_module, slot->tuned_module}) {
      if (module != nullptr) tier_config_.loader->unload(device, module);
    }
  }
}

Registry::FunctionSlot& Registry::function_slot(std::uint32_t id, int device) {
  const std::size_t i = std::size_t{id} * kMaxDevices + static_cast<std::size_t>(device);
  FunctionSlot* slot = slots_[i].load(std::memory_order_acquire);
  if (slot != nullptr) return *slot;
  auto made = std::make_unique<FunctionSlot>(current_[i]);
  // Two first callers may race here: one slot wins, the other is dropped unused.
  if (slots_[i].compare_exchange_strong(slot, made.get(), std::memory_order_acq_rel)) return *made.release();
  return *slot;
}

bool Registry::tiered(std::uint32_t id) const noexcept {
  return tier_config_.mode != TierMode::kTunedOnly && has_tier(id, Tier::kQuick);
}

bool Registry::has_tier(std::uint32_t id, Tier tier) const noexcept {
  if (id >= catalog_.size()) return false;
  return tier == Tier::kTuned ||
         (id < tier_config_.table.quick.size() && !tier_config_.table.quick[id].source.empty());
}

const KernelSource& Registry::source(std::uint32_t id, Tier tier) const {
  if (id >= catalog_.size()) {
    throw InvalidArgument("tropical: kernel id " + std::to_string(id) + " is not in the catalog");
  }
  if (tier == Tier::kTuned) return catalog_[id];
  if (id >= tier_config_.table.quick.size() || tier_config_.table.quick[id].source.empty()) {
    throw InvalidArgument("tropical: kernel " + std::string(catalog_[id].name) + " has no quick tier");
  }
  return tier_config_.table.quick[id];
}

Resolved Registry::load(std::uint32_t id, int device, int arch, Tier tier, CUmodule& module) {
  // A load in the foreground (the driver's JIT, which may load its compiler;
  // a module load; a compile) may register exit handlers while other kernels'
  // tuned compiles run in the background: the exit guard's handler goes after
  // them again, however the load ends (a background job's guard does that
  // when the job ends).
  struct Rearm {
    ~Rearm() {
      if (!t_background) exit_guard::rearm();
    }
  } const rearm;
  const auto start = Clock::now();
  const CompiledImage& img = device_image(id, device, arch, tier);
  const auto fetch_ptx = [&] {
    // A disk hit brings no PTX: read it from the entry, else compile again
    // (which also replaces an entry whose PTX is damaged).
    const auto compile_ptx = [&] {
      const auto compile_start = Clock::now();
      CompiledImage compiled = run_compiler(source(id, tier), arch, tier);
      ++counters_[id].compiles;
      counters_[id].compile_ns += storage::nanoseconds_since(compile_start);
      return compiled;
    };
    return stores_->get_or_compile(cache_key(id, arch, tier), compile_ptx, nullptr, storage::ImageParts::kCubinAndPtx).ptx;
  };
  const LoadedModule loaded = tier_config_.loader->load(device, img, std::string(source(id, tier).name), fetch_ptx);
  module = loaded.module;
  Counters& counters = counters_[id];
  ++counters.loads;
  counters.load_ns += storage::nanoseconds_since(start);
  const auto& shapes = tier == Tier::kQuick ? tier_config_.table.quick_launch : tier_config_.table.tuned_launch;
  return Resolved{loaded.function, id < shapes.size() ? shapes[id] : LaunchShape{}, tier};
}

void Registry::ensure_tuned(std::uint32_t id, int device, FunctionSlot& slot) noexcept {
  std::call_once(slot.tuned_once, [&]() noexcept {
    try {
      slot.tuned = load(id, device, tier_config_.loader->arch(device), Tier::kTuned, slot.tuned_module);
      // In kQuickOnly the quick kernel stays published; the tuned one serves
      // only the calls that allow nothing else.
      if (tier_config_.mode != TierMode::kQuickOnly || slot.current.load() == nullptr) {
        slot.current.store(&slot.tuned, std::memory_order_release);
        settled_[id * kMaxDevices + static_cast<unsigned>(device)].store(&slot.tuned, std::memory_order_release);
      }
      if (const std::int64_t first = slot.first_call_ns.load(); first != 0) {
        counters_[id].first_to_tuned_ns = static_cast<std::uint64_t>(now_ns() - first);
      }
    } catch (...) {
      slot.tuned_error = std::current_exception();
    }
  });
}

void Registry::first_use(std::uint32_t id, int device, FunctionSlot& slot) noexcept {
  try {
    const int arch = tier_config_.loader->arch(device);
    const bool quick_only = tier_config_.mode == TierMode::kQuickOnly;
    if (tiered(id) && (quick_only || !tuned_available(id, arch))) {
      // A background compile must never be NVRTC's first in the process (see
      // exit_guard.cpp): NVRTC's first compile runs here, before this call
      // returns, on a helper thread while this one gets the quick kernel
      // (which, from shipped PTX, needs no NVRTC). A failure here shows
      // again in the tuned compile.
      const auto prepare = []() noexcept {
        try {
          prepare_compiler();
        } catch (...) {
        }
      };
      std::thread preparing;
      if (!quick_only && !tier_config_.compiler && !nvrtc_compiled()) {
        try {
          preparing = std::thread(prepare);
        } catch (const std::system_error&) {
          // No thread to spare: prepared below, after the quick kernel.
        }
      }
      try {
        slot.quick = load(id, device, arch, Tier::kQuick, slot.quick_module);
        slot.first_call_ns = now_ns();
        slot.current.store(&slot.quick, std::memory_order_release);
      } catch (...) {
        // No quick kernel (it failed to compile or load): the tuned one, now.
        slot.first_call_ns = 0;
      }
      if (preparing.joinable()) preparing.join();
      if (slot.current.load() != nullptr) {
        if (quick_only) return;
        if (!tier_config_.compiler) prepare();
        if (!queue_tuned(*pool_, [this, id, device, &slot]() noexcept { ensure_tuned(id, device, slot); })) {
          ensure_tuned(id, device, slot);
        }
        return;
      }
    }
    ensure_tuned(id, device, slot);
    if (slot.tuned_error) slot.error = slot.tuned_error;
  } catch (...) {
    slot.error = std::current_exception();
  }
}

const Resolved* Registry::kernel_if_ready(std::uint32_t id, int device) noexcept {
  if (const Resolved* r = settled(id, device)) return r;
  if (id >= catalog_.size() || device < 0 || device >= kMaxDevices) return nullptr;
  try {
    if (device >= tier_config_.loader->device_count()) return nullptr;
    FunctionSlot& slot = function_slot(id, device);
    if (slot.queued.exchange(true)) return nullptr;
    // As a first use's tuned compile: NVRTC's first load in the process never on a background thread
    // (exit_guard.cpp), and the exit guard armed before the job can run. A kernel a store has needs no NVRTC.
    if (!tier_config_.compiler && !nvrtc_compiled() &&
        !tuned_available(id, tier_config_.loader->arch(device))) {
      prepare_compiler();
    }
    if (!queue_tuned(*pool_, [this, id, device, &slot]() noexcept { ensure_tuned(id, device, slot); })) {
      slot.queued.store(false);  // no worker to spare: a later call asks again
    }
  } catch (...) {
    // No compiler (NVRTC missing), no device: the kernel is not ready, and the caller does without it.
  }
  return nullptr;
}

const Resolved& Registry::resolve(std::uint32_t id, int device, const Request& request) {
  if (id >= catalog_.size()) {
    throw InvalidArgument("tropical: kernel id " + std::to_string(id) + " is not in the catalog");
  }
  if (device < 0 || device >= kMaxDevices || device >= tier_config_.loader->device_count()) {
    throw InvalidArgument("tropical: device " + std::to_string(device) + " does not exist");
  }
  FunctionSlot& slot = function_slot(id, device);
  std::call_once(slot.once, [&]() noexcept { first_use(id, device, slot); });
  if (slot.error) std::rethrow_exception(slot.error);
  const Resolved* current = slot.current.load(std::memory_order_acquire);
  if (current->tier == Tier::kTuned) return *current;
  // The quick kernel serves unless this call must not take it (the checks
  // cost a driver call, on this path only: until the tuned kernel is published).
  const bool quick_only = tier_config_.mode == TierMode::kQuickOnly;
  const bool quick_ok = request.allow_quick && (quick_only || !tier_config_.loader->capturing(request.stream));
  const std::int64_t waited = now_ns() - slot.first_call_ns.load();
  if (quick_ok && (quick_only || !quick_takes_longer(tier_config_.table.cost[id], request.macs, waited))) {
    ++counters_[id].quick_calls;
    return *current;
  }
  ensure_tuned(id, device, slot);
  if (!slot.tuned_error) return slot.tuned;
  if (!quick_ok) std::rethrow_exception(slot.tuned_error);
  ++counters_[id].quick_calls;  // the cost model only asked to wait: the quick kernel is right too
  return *current;
}

WarmReport Registry::warm(std::span<const std::uint32_t> ids, int arch, unsigned threads,
                          const WarmProgress& progress) {
  std::vector<std::uint32_t> todo(ids.begin(), ids.end());
  if (todo.empty()) {
    for (std::uint32_t i = 0; i < catalog_.size(); ++i) todo.push_back(i);
  }
  WarmReport report;
  report.kernels = todo.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  report.threads = static_cast<unsigned>(std::min<std::size_t>(threads, todo.size()));

  peak_compiling_ = 0;
  const auto start = Clock::now();
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex report_mutex;
  auto worker = [&] {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      std::string error;
      bool unavailable = false;
      const std::uint64_t compiles_before = t_compiles;
      try {
        // Whole entries: what warm leaves in the primary is copied from what it read and verified.
        image(todo[i], arch, Tier::kTuned, storage::ImageParts::kCubinAndPtx);
      } catch (const Unavailable& e) {
        error = e.what();
        unavailable = true;
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::lock_guard lock(report_mutex);
      report.compiled += static_cast<std::size_t>(t_compiles - compiles_before);
      if (!error.empty()) report.errors.push_back(std::move(error));
      report.unavailable += unavailable;
      ++done;
      if (progress) progress(done, todo.size(), todo[i] < catalog_.size() ? catalog_[todo[i]].name : "?");
    }
  };
  std::vector<std::thread> pool;
  try {
    for (unsigned t = 0; t < report.threads; ++t) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // Out of threads (RLIMIT_NPROC, EAGAIN): go on with those that started.
  }
  report.threads = static_cast<unsigned>(pool.size());
  if (pool.empty()) {
    report.threads = 1;
    worker();
  }
  for (auto& t : pool) t.join();
  // Hits of a layer or the remote are copied into the primary in the background: warm leaves them written.
  stores_->finish_promotions();
  report.seconds = static_cast<double>(storage::nanoseconds_since(start)) * 1e-9;
  report.peak_compiles = peak_compiling_.load();

  // Each kernel of this call was compiled by it, failed, or was ready (a compile of it that failed is an error).
  const std::size_t failed = report.errors.size();
  report.ready = report.kernels - std::min(report.kernels, report.compiled + failed);
  return report;
}

std::vector<KernelStats> Registry::stats() const {
  std::vector<KernelStats> out(catalog_.size());
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    const Counters& c = counters_[i];
    out[i] = KernelStats{c.compiles.load(),       c.compile_ns.load(),          c.disk_hits.load(),
                         c.loads.load(),          c.load_ns.load(),             c.quick_compiles.load(),
                         c.quick_calls.load(),    c.background_compiles.load(), c.first_to_tuned_ns.load(),
                         c.jit_compiles.load()};
  }
  return out;
}

}  // namespace tropical::jit
