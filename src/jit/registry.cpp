#include "tropical/jit/registry.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::jit {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct Registry::ImageSlot {
  std::once_flag once;
  std::optional<CompiledImage> image;
  std::exception_ptr error;
};

// Image slots are created on first use of (kernel, arch): the map is touched
// on the slow path only, and a slot never moves once created.
struct Registry::ImageTable {
  std::mutex mutex;
  std::map<std::pair<std::uint32_t, int>, std::unique_ptr<ImageSlot>> slots;
};

struct Registry::Counters {
  std::atomic<std::uint64_t> compiles{0};
  std::atomic<std::uint64_t> compile_ns{0};
  std::atomic<std::uint64_t> disk_hits{0};
  std::atomic<std::uint64_t> loads{0};
  std::atomic<std::uint64_t> load_ns{0};
};

Registry::Registry(Catalog catalog, CacheConfig cache)
    : catalog_(catalog),
      tiers_(std::make_unique<Tiers>(cache)),
      functions_(std::make_unique<FunctionSlot[]>(catalog.size() * kMaxDevices)),
      counters_(std::make_unique<Counters[]>(catalog.size())),
      images_(std::make_unique<ImageTable>()) {
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    if (catalog_[i].id != i) {
      throw InvalidArgument("tropical: catalog entry " + std::to_string(i) + " (" +
                            std::string(catalog_[i].name) + ") has id " +
                            std::to_string(catalog_[i].id));
    }
  }
}

Registry::~Registry() {
  // Modules go with the registry. The process-wide registry of the tropical
  // API is never destroyed, so this never runs while the driver shuts down.
  if (!driver::available()) return;
  const auto& api = driver::api();
  for (std::size_t i = 0; i < catalog_.size() * kMaxDevices; ++i) {
    if (functions_[i].module == nullptr) continue;
    const int device = static_cast<int>(i % kMaxDevices);
    driver::ScopedContext context(device);
    api.cuModuleUnload(functions_[i].module);
  }
}

CacheKey Registry::cache_key(std::uint32_t id, int arch) const {
  const KernelSource& kernel = catalog_[id];
  return CacheKey{std::string(kernel.name), std::string(kernel.digest), compile_options(arch), arch,
                  nvrtc_identity()};
}

Registry::ImageSlot& Registry::image_slot(std::uint32_t id, int arch) {
  std::lock_guard lock(images_->mutex);
  auto& slot = images_->slots[{id, arch}];
  if (!slot) slot = std::make_unique<ImageSlot>();
  return *slot;
}

const CompiledImage& Registry::image(std::uint32_t id, int arch) {
  if (id >= catalog_.size()) {
    throw InvalidArgument("tropical: kernel id " + std::to_string(id) + " is not in the catalog");
  }
  ImageSlot& slot = image_slot(id, arch);
  bool ran = false;
  // Nothing may leave a call_once callable by exception: the slot keeps the
  // image or the error, and every caller rethrows it outside.
  std::call_once(slot.once, [&]() noexcept {
    ran = true;
    try {
      Counters& counters = counters_[id];
      bool compiled = false;
      slot.image = tiers_->get_or_compile(
          cache_key(id, arch),
          [&] {
            const auto start = Clock::now();
            // Track how many compiles overlap, so warm() can show it used every core.
            const unsigned running = ++compiling_;
            unsigned peak = peak_compiling_.load();
            while (running > peak && !peak_compiling_.compare_exchange_weak(peak, running)) {
            }
            struct Leave {
              std::atomic<unsigned>& n;
              ~Leave() { --n; }
            } leave{compiling_};
            CompiledImage image = compile(catalog_[id], arch);
            counters.compile_ns += nanoseconds_since(start);
            return image;
          },
          &compiled);
      ++(compiled ? counters.compiles : counters.disk_hits);
    } catch (...) {
      slot.error = std::current_exception();
    }
  });
  if (!ran && slot.image) {
    log_line(tiers_->log(), LogLevel::kDebug, std::string(catalog_[id].name) + " sm_" + std::to_string(arch) + ": memory hit");
  }
  if (slot.error) std::rethrow_exception(slot.error);
  return *slot.image;
}

CUfunction Registry::resolve(std::uint32_t id, int device) {
  if (id >= catalog_.size()) {
    throw InvalidArgument("tropical: kernel id " + std::to_string(id) + " is not in the catalog");
  }
  if (device < 0 || device >= kMaxDevices || device >= driver::device_count()) {
    throw InvalidArgument("tropical: device " + std::to_string(device) + " does not exist");
  }
  FunctionSlot& slot = functions_[id * kMaxDevices + device];
  std::call_once(slot.once, [&]() noexcept {
    try {
      const auto& api = driver::api();
      const auto start = Clock::now();
      const int arch = driver::device_arch(device);
      const CompiledImage& img = image(id, arch);
      driver::ScopedContext context(device);
      CUmodule module = nullptr;
      CUresult result = api.cuModuleLoadData(&module, img.cubin.data());
      if (result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE ||
          result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
        // A driver that cannot take the CUBIN may still JIT the PTX (slow, but it
        // runs). A disk hit brings no PTX, so fetch it now: from the entry, else
        // by compiling again (which also replaces an entry whose PTX is damaged).
        // Other failures (no memory, a broken context) are reported as they are.
        std::string ptx = img.ptx;
        if (ptx.empty()) {
          const auto compile_ptx = [&] {
            const auto compile_start = Clock::now();
            CompiledImage compiled = compile(catalog_[id], arch);
            ++counters_[id].compiles;
            counters_[id].compile_ns += nanoseconds_since(compile_start);
            return compiled;
          };
          ptx =
              tiers_->get_or_compile(cache_key(id, arch), compile_ptx, nullptr, ImageParts::kCubinAndPtx).ptx;
        }
        if (!ptx.empty() && api.cuModuleLoadData(&module, ptx.c_str()) == CUDA_SUCCESS) result = CUDA_SUCCESS;
      }
      driver::check(result, "cuModuleLoadData");
      CUfunction function = nullptr;
      const std::string name(catalog_[id].name);
      if (const CUresult r = api.cuModuleGetFunction(&function, module, name.c_str()); r != CUDA_SUCCESS) {
        api.cuModuleUnload(module);
        driver::check(r, "cuModuleGetFunction");
      }
      slot.module = module;
      Counters& counters = counters_[id];
      ++counters.loads;
      counters.load_ns += nanoseconds_since(start);
      slot.function.store(function, std::memory_order_release);
    } catch (...) {
      slot.error = std::current_exception();
    }
  });
  if (slot.error) std::rethrow_exception(slot.error);
  return slot.function.load(std::memory_order_acquire);
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

  std::uint64_t compiles_before = 0;
  for (auto id : todo) {
    if (id < catalog_.size()) compiles_before += counters_[id].compiles;
  }
  peak_compiling_ = 0;
  const auto start = Clock::now();
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex report_mutex;
  auto worker = [&] {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      std::string error;
      bool unavailable = false;
      try {
        image(todo[i], arch);
      } catch (const Unavailable& e) {
        error = e.what();
        unavailable = true;
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::lock_guard lock(report_mutex);
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
  report.seconds = static_cast<double>(nanoseconds_since(start)) * 1e-9;
  report.peak_compiles = peak_compiling_.load();

  std::uint64_t compiles_after = 0;
  for (auto id : todo) {
    if (id < catalog_.size()) compiles_after += counters_[id].compiles;
  }
  report.compiled = static_cast<std::size_t>(compiles_after - compiles_before);
  report.ready = report.kernels - report.compiled - report.errors.size();
  return report;
}

std::vector<KernelStats> Registry::stats() const {
  std::vector<KernelStats> out(catalog_.size());
  for (std::size_t i = 0; i < catalog_.size(); ++i) {
    const Counters& c = counters_[i];
    out[i] = KernelStats{c.compiles.load(), c.compile_ns.load(), c.disk_hits.load(), c.loads.load(),
                         c.load_ns.load()};
  }
  return out;
}

}  // namespace tropical::jit
