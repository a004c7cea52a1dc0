// Where the registry gets a kernel's image: memory, the stores, NVRTC,
// or the driver's JIT of shipped PTX (Registry::image, Registry::device_image).
#include <string>
#include <utility>

#include "registry_parts.hpp"
#include "tropical/error.hpp"
#include "tropical/storage/io.hpp"

namespace tropical::jit {

storage::CacheKey Registry::cache_key(std::uint32_t id, int arch, Tier tier) const {
  const KernelSource& kernel = source(id, tier);
  // The options name sm_<arch>a for an arch-specific kernel: its key differs from any sm_<arch> image's.
  return storage::CacheKey{std::string(kernel.name), std::string(kernel.digest),
                           compile_options(kernel, arch, effort_of(tier)), arch, nvrtc_identity()};
}

Registry::ImageSlot& Registry::image_slot(std::uint32_t id, int arch, Tier tier) {
  std::lock_guard lock(images_->mutex);
  auto& slot = images_->slots[{id, arch, tier}];
  if (!slot) slot = std::make_unique<ImageSlot>();
  return *slot;
}

CompiledImage Registry::tracked_compile(std::uint32_t id, Tier tier, const std::function<CompiledImage()>& run) {
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
  CompiledImage image = run();
  Counters& counters = counters_[id];
  counters.compile_ns += storage::nanoseconds_since(start);
  if (tier == Tier::kQuick) ++counters.quick_compiles;
  if (t_background) ++counters.background_compiles;
  return image;
}

void Registry::fetch(ImageSlot& slot, std::uint32_t id, int arch, Tier tier, storage::ImageParts parts) {
  bool compiled = false;
  slot.image = stores_->get_or_compile(
      cache_key(id, arch, tier),
      [&] { return tracked_compile(id, tier, [&] { return run_compiler(source(id, tier), arch, tier); }); },
      &compiled, parts);
  ++(compiled ? counters_[id].compiles : counters_[id].disk_hits);
  t_compiles += compiled;
}

const CompiledImage& Registry::image(std::uint32_t id, int arch, Tier tier, storage::ImageParts parts) {
  const KernelSource& kernel = source(id, tier);
  ImageSlot& slot = image_slot(id, arch, tier);
  bool ran = false;
  // Nothing may leave a call_once callable by exception: the slot keeps the
  // image or the error, and every caller rethrows it outside.
  std::call_once(slot.once, [&]() noexcept {
    ran = true;
    try {
      fetch(slot, id, arch, tier, parts);
    } catch (...) {
      slot.error = std::current_exception();
    }
    slot.done.store(true, std::memory_order_release);
  });
  if (!ran && slot.image) {
    storage::log_line(stores_->log(), storage::LogLevel::kDebug,
             std::string(kernel.name) + " sm_" + std::to_string(arch) + ": memory hit");
  }
  if (slot.error) std::rethrow_exception(slot.error);
  return *slot.image;
}

const ShippedPtx* Registry::shipped_ptx(std::uint32_t id, int arch, Tier tier) const noexcept {
  const auto& table = tier_config_.ptx;
  if (id >= table.size() || table[id].text.empty() || table[id].tier != tier || arch < table[id].arch) return nullptr;
  // An arch-specific kernel's portable PTX would be its stub (codegen/ptx.py ships none: this guards the table).
  if (source(id, tier).feature_arch != 0) return nullptr;
  return &table[id];
}

std::optional<storage::CacheKey> Registry::jit_cache_key(std::uint32_t id, int arch, Tier tier) const {
  const ShippedPtx* ptx = shipped_ptx(id, arch, tier);
  std::string identity = ptx != nullptr ? tier_config_.loader->jit_identity() : std::string();
  if (identity.empty()) return std::nullopt;
  return storage::CacheKey{std::string(source(id, tier).name), std::string(ptx->digest),
                  {std::string(kDriverJitOption), "--ptx-arch=compute_" + std::to_string(ptx->arch)}, arch,
                  std::move(identity)};
}

const CompiledImage& Registry::device_image(std::uint32_t id, int device, int arch, Tier tier) {
  const std::optional<storage::CacheKey> jit_key = jit_cache_key(id, arch, tier);
  if (!jit_key) return image(id, arch, tier);
  ImageSlot& slot = image_slot(id, arch, tier);
  std::call_once(slot.once, [&]() noexcept {
    try {
      Counters& counters = counters_[id];
      // The JIT's image from an earlier run, else one NVRTC made (tropical
      // warm, a layer, the prebuilt layer), else the JIT now.
      std::optional<CompiledImage> found = stores_->find_in_primary(*jit_key);
      if (!found) found = stores_->find(cache_key(id, arch, tier));
      if (found) {
        slot.image = std::move(found);
        ++counters.disk_hits;
      } else {
        try {
          bool compiled = false;
          slot.image = stores_->get_or_compile(
              *jit_key,
              [&] {
                return tracked_compile(id, tier, [&] {
                  std::optional<std::vector<std::byte>> cubin =
                      tier_config_.loader->jit(device, shipped_ptx(id, arch, tier)->text, jit_key->kernel_name);
                  if (!cubin) throw Unavailable("tropical: this device loader has no JIT");
                  ++counters.jit_compiles;
                  return CompiledImage{std::move(*cubin), {}};
                });
              },
              &compiled);
          ++(compiled ? counters.compiles : counters.disk_hits);
          t_compiles += compiled;
        } catch (const Error& e) {
          // The driver refused the PTX (older than the NVRTC that made it, or
          // a JIT error): NVRTC compiles the fragment, as without shipped PTX.
          storage::log_line(stores_->log(), storage::LogLevel::kInfo,
                   jit_key->kernel_name + " sm_" + std::to_string(arch) + ": shipped PTX not usable (" + e.what() +
                       "); compiling with NVRTC");
          fetch(slot, id, arch, tier, storage::ImageParts::kCubin);
        }
      }
    } catch (...) {
      slot.error = std::current_exception();
    }
    slot.done.store(true, std::memory_order_release);
  });
  if (slot.error) std::rethrow_exception(slot.error);
  return *slot.image;
}

bool Registry::tuned_available(std::uint32_t id, int arch) {
  ImageSlot& slot = image_slot(id, arch, Tier::kTuned);
  if (slot.done.load(std::memory_order_acquire)) return !slot.error;
  // A look through every persistent store that never compiles and never waits for a writer.
  std::optional<CompiledImage> found = stores_->find(cache_key(id, arch));
  if (!found) return false;
  std::call_once(slot.once, [&]() noexcept {
    slot.image = std::move(found);
    ++counters_[id].disk_hits;
    slot.done.store(true, std::memory_order_release);
  });
  return !slot.error;
}

}  // namespace tropical::jit
