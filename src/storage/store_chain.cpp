#include "tropical/storage/store_chain.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tropical/storage/io.hpp"
#include "tropical/storage/remote/fleet_store.hpp"
#include "tropical/storage/layer_store.hpp"
#include "tropical/storage/log.hpp"

namespace tropical::storage {
namespace {

std::string milliseconds(std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(ns) * 1e-6);
  return text;
}

std::string why_missing(const Lookup& lookup) {
  if (!lookup.detail.empty()) return lookup.detail;
  return lookup.miss == Miss::kUnavailable ? "store unavailable" : "no entry";
}

// The parts to read from store i, which the walk found below the first writable store or not: a copy up must be
// whole, so the caller reads the PTX too, unless the store can be read again by the background copier.
ImageParts parts_to_read(std::span<Store* const> stores, std::size_t i, std::size_t writable, ImageParts parts,
                         const Promotions* promotions) {
  const bool copier_reads = promotions != nullptr && stores[i]->rereadable();
  return i > writable && !copier_reads ? ImageParts::kCubinAndPtx : parts;
}

// Copies image, store i's hit, into the stores above i that can store; in the background when promotions is
// given. image is whole (CUBIN and PTX) unless the caller asked for the CUBIN of a rereadable store
// (parts_to_read): that entry is then read again whole by the copier. Returns the image with the parts asked for.
CompiledImage copy_up(std::span<Store* const> stores, std::size_t i, LogLevel log, const StoreKey& k,
                      const std::string& kernel, CompiledImage image, ImageParts parts, Promotions* promotions) {
  std::vector<Store*> into;
  for (std::size_t j = 0; j < i; ++j) {
    if (stores[j]->can_store()) into.push_back(stores[j]);
  }
  if (promotions != nullptr && !into.empty() && parts == ImageParts::kCubin && stores[i]->rereadable()) {
    promotions->copy_from(k, stores[i], std::move(into));
  } else if (promotions != nullptr && !into.empty()) {
    CompiledImage whole;
    whole.cubin = image.cubin;
    whole.ptx = parts == ImageParts::kCubin ? std::move(image.ptx) : image.ptx;
    promotions->copy(k, std::move(whole), std::move(into));
  } else {
    for (Store* store : into) {
      if (store->store(k, image, StoreReason::kPromoted)) {
        log_line(log, LogLevel::kInfo, kernel + ": copied into " + store->name());
        store->after_store(k);
      }
    }
  }
  if (parts == ImageParts::kCubin) image.ptx.clear();
  return image;
}

}  // namespace

CompiledImage walk_stores(std::span<Store* const> stores, LogLevel log, const CacheKey& key,
                          const std::function<CompiledImage()>& compile, bool* compiled, ImageParts parts,
                          Promotions* promotions) {
  if (compiled != nullptr) *compiled = false;
  const StoreKey k(key);
  const std::string kernel = key.kernel_name + " sm_" + std::to_string(key.arch);
  const std::size_t n = stores.size();
  std::size_t writable = n;  // the first store that can store: it runs the single flight
  for (std::size_t i = 0; i < n && writable == n; ++i) {
    if (stores[i]->can_store()) writable = i;
  }
  std::vector<bool> bad(n, false);

  // One pass down the stores. A bad file met in either pass is counted once per walk.
  const auto look = [&](bool log_misses) -> std::optional<CompiledImage> {
    for (std::size_t i = 0; i < n; ++i) {
      Lookup found = stores[i]->lookup(k, parts_to_read(stores, i, writable, parts, promotions));
      if (!found.image) {
        bad[i] = bad[i] || found.bad();
        if (log_misses)
          log_line(log, LogLevel::kInfo,
                   kernel + ": miss in " + stores[i]->name() + ": " + why_missing(found));
        continue;
      }
      log_line(log, LogLevel::kInfo,
               kernel + ": hit in " + stores[i]->name() + " (" +
                   std::to_string(found.image->cubin.size() + found.image->ptx.size()) + " bytes)");
      for (std::size_t j = 0; j < i; ++j) stores[j]->count_miss(bad[j]);
      return copy_up(stores, i, log, k, kernel, std::move(*found.image), parts, promotions);
    }
    return std::nullopt;
  };

  if (auto hit = look(true)) return std::move(*hit);
  FlightResult flight;
  if (writable < n) {
    const auto asked = std::chrono::steady_clock::now();
    flight = stores[writable]->single_flight(k);
    log_line(log, LogLevel::kDebug,
             kernel + ": single flight in " + stores[writable]->name() + " after " +
                 milliseconds(nanoseconds_since(asked)));
  } else {
    flight.why = "no store can store";
  }
  // Another process may have stored the entry while this one waited.
  if (flight.state == FlightResult::State::kLeader) {
    if (auto hit = look(false)) return std::move(*hit);
  }
  // --- fleet store: the writable stores below the first (the remote) have their own single flight
  // (a cross-machine lease), taken only under the first one's, so one process per machine waits on the
  // fleet. A store whose flight this caller does not lead is not written; released before the first's.
  std::vector<FlightResult> below;
  std::vector<bool> unled(n, false);
  bool look_below = false;  // a flight below that did not itself look again under its lease
  for (std::size_t i = writable + 1; flight.state == FlightResult::State::kLeader && i < n; ++i) {
    if (!stores[i]->can_store()) continue;
    below.push_back(stores[i]->single_flight(k));
    unled[i] = below.back().state != FlightResult::State::kLeader;
    look_below = look_below || unled[i] || !below.back().checked;
    log_line(log, LogLevel::kDebug,
             kernel + ": single flight in " + stores[i]->name() + (unled[i] ? ": " + below.back().why : ": led"));
  }
  if (look_below) {
    if (auto hit = look(false)) return std::move(*hit);
  }
  // --- end of the fleet store's part
  for (std::size_t i = 0; i < n; ++i) stores[i]->count_miss(bad[i]);

  const auto start = std::chrono::steady_clock::now();
  CompiledImage image = compile();
  const std::uint64_t compile_ns = nanoseconds_since(start);
  if (n != 0) stores[writable < n ? writable : 0]->count_compile(compile_ns);
  if (compiled != nullptr) *compiled = true;
  log_line(log, LogLevel::kInfo, kernel + ": compiled in " + milliseconds(compile_ns));

  if (flight.state != FlightResult::State::kLeader) {
    log_line(log, LogLevel::kInfo, kernel + ": not stored (" + flight.why + "); kept in memory");
    return image;
  }
  std::vector<Store*> stored;
  for (std::size_t i = 0; i < n; ++i) {
    Store* store = stores[i];
    if (!unled[i] && store->can_store() && store->store(k, image, StoreReason::kCompiled)) {
      stored.push_back(store);
      log_line(log, LogLevel::kInfo,
               kernel + ": stored in " + store->name() + " (" +
                   std::to_string(image.cubin.size() + image.ptx.size()) + " bytes of image)");
    }
  }
  // Waiters may read the entry as soon as the flight ends; eviction needs no lock.
  below.clear();
  flight.held.reset();
  for (Store* store : stored) store->after_store(k);
  return image;
}

std::optional<CompiledImage> find_in_stores(std::span<Store* const> stores, LogLevel log, const CacheKey& key,
                                            ImageParts parts, Promotions* promotions) {
  const StoreKey k(key);
  const std::string kernel = key.kernel_name + " sm_" + std::to_string(key.arch);
  const std::size_t n = stores.size();
  std::size_t writable = n;
  for (std::size_t i = 0; i < n && writable == n; ++i) {
    if (stores[i]->can_store()) writable = i;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Lookup found = stores[i]->lookup(k, parts_to_read(stores, i, writable, parts, promotions));
    if (!found.image) {
      log_line(log, LogLevel::kDebug, kernel + ": not (yet) in " + stores[i]->name() + ": " + why_missing(found));
      continue;
    }
    log_line(log, LogLevel::kInfo,
             kernel + ": found in " + stores[i]->name() + " without compiling (" +
                 std::to_string(found.image->cubin.size() + found.image->ptx.size()) + " bytes)");
    return copy_up(stores, i, log, k, kernel, std::move(*found.image), parts, promotions);
  }
  return std::nullopt;
}

namespace {

// The read-only layers config names, in order: TROPICAL_CACHE_LAYERS (or the file's `layers`), then the
// configured primary when it could not store and the fallback is used (its entries are still good), then the
// install's prebuilt layer. A directory already in the list, or the primary itself, is not searched twice.
std::vector<std::unique_ptr<Store>> layers_of(const CacheConfig& config, const LocalStore& primary) {
  std::vector<std::unique_ptr<Store>> layers;
  std::vector<std::filesystem::path> seen = {primary.config().dir.lexically_normal()};
  // A few refused layers are warned about one by one, the rest counted: 500 missing layers are not 500 lines.
  constexpr std::size_t kShown = 3;
  std::size_t refused = 0, unshown = 0;
  const auto add = [&](const std::filesystem::path& dir, bool quiet) {
    const std::filesystem::path normal = dir.lexically_normal();
    if (dir.empty() || std::find(seen.begin(), seen.end(), normal) != seen.end()) return;
    seen.push_back(normal);
    auto layer = std::make_unique<LayerStore>(dir, config.log, quiet || refused >= kShown);
    if (!quiet && !layer->trusted() && refused++ >= kShown) ++unshown;
    layers.push_back(std::move(layer));
  };
  for (const auto& dir : config.layers) add(dir, false);
  if (unshown != 0) {
    warn_once(Problem::kLayerRefused, "... and more",
              "tropical: warning: ... and " + std::to_string(unshown) + " more cache layers not used\n");
  }
  if (!primary.fell_back_from().empty()) add(primary.fell_back_from(), true);
  // Not installed (a build tree, a package built without -Dprebuilt_archs): no store at all.
  std::error_code ignored;
  if (const auto prebuilt = prebuilt_layer_dir();
      config.prebuilt_layer && std::filesystem::is_directory(prebuilt, ignored))
    add(prebuilt, true);
  return layers;
}

}  // namespace

// Only the primary is opened here: a process whose kernels are all in it never needs the rest (a layer's
// checks, the prebuilt layer's search, the fleet's settings), so those are made on the first miss.
StoreChain::StoreChain(const CacheConfig& config)
    : config_(config), primary_(std::make_unique<LocalStore>(config)), log_(config.log), promotions_(log_) {
  order_.push_back(primary_.get());
}

StoreChain::StoreChain(std::unique_ptr<LocalStore> primary, std::vector<std::unique_ptr<Store>> others, LogLevel log)
    : primary_(std::move(primary)), others_(std::move(others)), log_(log), promotions_(log_) {
  order_.push_back(primary_.get());
  for (const auto& store : others_) order_.push_back(store.get());
  made_.store(true, std::memory_order_release);
}

void StoreChain::make_others() {
  if (made_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(making_);
  if (made_.load(std::memory_order_relaxed)) return;
  const CacheConfig& config = *config_;
  std::vector<std::unique_ptr<Store>> others =
      config.enabled ? layers_of(config, *primary_) : std::vector<std::unique_ptr<Store>>{};
  // The fleet store, last (after the layers). Settings: the environment, then the primary's tropical.conf.
  if (config.enabled) {
    if (auto fleet = remote::make_fleet_store(config)) {
      others.push_back(std::move(fleet));
    }
  }
  std::vector<Store*> order = {primary_.get()};
  for (const auto& store : others) order.push_back(store.get());
  // Published whole, so that a throw above (out of memory) leaves the list as it was, to be made again.
  others_ = std::move(others);
  order_ = std::move(order);
  made_.store(true, std::memory_order_release);
}

std::optional<CompiledImage> StoreChain::primary_hit(const CacheKey& key, ImageParts parts) {
  if (made_.load(std::memory_order_acquire)) return std::nullopt;  // the walk asks the primary first
  return find_in_primary(key, parts);
}

std::optional<CompiledImage> StoreChain::find_in_primary(const CacheKey& key, ImageParts parts) {
  // A miss is not counted or logged here: the walk that follows does both.
  Lookup found = primary_->lookup(StoreKey(key), parts);
  if (!found.image) return std::nullopt;
  log_line(log_, LogLevel::kInfo,
           key.kernel_name + " sm_" + std::to_string(key.arch) + ": hit in " + primary_->name() + " (" +
               std::to_string(found.image->cubin.size() + found.image->ptx.size()) + " bytes)");
  return std::move(found.image);
}

std::span<Store* const> StoreChain::list() {
  make_others();
  return order_;
}

CompiledImage StoreChain::get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                                    bool* compiled, ImageParts parts) {
  if (auto hit = primary_hit(key, parts)) {
    if (compiled != nullptr) *compiled = false;
    return std::move(*hit);
  }
  return walk_stores(list(), log_, key, compile, compiled, parts, &promotions_);
}

std::optional<CompiledImage> StoreChain::find(const CacheKey& key, ImageParts parts) {
  if (auto hit = primary_hit(key, parts)) return hit;
  return find_in_stores(list(), log_, key, parts, &promotions_);
}

bool StoreChain::finish_promotions(std::chrono::milliseconds bound) { return promotions_.wait(bound); }

}  // namespace tropical::storage
