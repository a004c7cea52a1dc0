#include "tropical/storage/local_store.hpp"

#include "local_store_impl.hpp"

namespace tropical::storage {

LocalStore::LocalStore(CacheConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

LocalStore::~LocalStore() = default;

const std::string& LocalStore::name() const noexcept { return impl_->name; }

Lookup LocalStore::lookup(const StoreKey& key, ImageParts parts) { return impl_->read(key, parts); }

bool LocalStore::can_store() const noexcept { return enabled(); }

bool LocalStore::store(const StoreKey& key, const CompiledImage& image, StoreReason reason) {
  return impl_->write(key, image, reason);
}

void LocalStore::after_store(const StoreKey& key) {
  if (impl_->dir.valid()) impl_->evict(key.digest + std::string(local::kEntrySuffix));
}

FlightResult LocalStore::single_flight(const StoreKey& key) { return impl_->flight(key); }

void LocalStore::count_miss(bool bad) {
  impl_->count(kMisses);
  if (bad) impl_->count(kErrors);
  impl_->publish();
}

void LocalStore::count_compile(std::uint64_t compile_ns) {
  impl_->count(kCompiles);
  impl_->count(kCompileNs, compile_ns);
  impl_->publish();
}

std::optional<CompiledImage> LocalStore::load(const CacheKey& key, ImageParts parts) {
  const StoreKey store_key(key);
  Lookup found = lookup(store_key, parts);
  if (!found.image) count_miss(found.bad());
  return std::move(found.image);
}

CompiledImage LocalStore::get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                                         bool* compiled, ImageParts parts) {
  Store* const stores[] = {this};
  return walk_stores(stores, impl_->config.log, key, compile, compiled, parts);
}

CacheStats LocalStore::machine_stats() const {
  impl_->publish();
  return to_stats(impl_->counters.machine());
}

CacheStats LocalStore::process_stats() const { return to_stats(impl_->counters.process()); }

void LocalStore::zero_stats() { impl_->counters.zero(); }

bool LocalStore::remove(const CacheKey& key) {
  return impl_->dir.valid() &&
         local::remove_own_file(impl_->dir.get(), key.digest() + std::string(local::kEntrySuffix));
}

bool LocalStore::evicted(const CacheKey& key) const {
  return impl_->was_evicted(key.digest() + std::string(local::kEntrySuffix));
}

std::vector<StoredEntry> LocalStore::entries() const {
  const Impl& s = *impl_;
  std::vector<StoredEntry> out;
  if (!s.dir.valid()) return out;
  for (auto& file : local::list_entries(s.dir.get())) {
    StoredEntry entry;
    entry.key = local::read_stored_key(s.dir.get(), file.name, &entry.format);
    if (!entry.key) entry.format = 0;
    entry.file = std::move(file.name);
    entry.bytes = file.size;
    out.push_back(std::move(entry));
  }
  return out;
}

std::uint64_t LocalStore::remove_if(const std::function<bool(const CacheKey&)>& pick) {
  Impl& s = *impl_;
  std::uint64_t removed = 0;
  for (const auto& entry : entries()) {
    // An entry a process stores under this name meanwhile is one of the same key: the name is its digest.
    if (entry.key && pick(*entry.key)) removed += local::remove_own_file(s.dir.get(), entry.file);
  }
  return removed;
}

std::uint64_t LocalStore::clear() {
  Impl& s = *impl_;
  if (!s.dir.valid()) return 0;
  std::uint64_t removed = 0;
  for (const auto& entry : local::list_entries(s.dir.get())) {
    if (::unlinkat(s.dir.get(), entry.name.c_str(), 0) == 0) ++removed;
  }
  local::remove_stale_temps(s.dir.get());
  return removed;
}

CacheInfo LocalStore::info() const {
  const Impl& s = *impl_;
  CacheInfo info;
  info.dir = s.config.dir;
  info.enabled = enabled();
  info.max_bytes = s.config.max_bytes;
  if (s.dir.valid()) {
    for (const auto& entry : local::list_entries(s.dir.get())) {
      ++info.entries;
      info.bytes += entry.size;
    }
  }
  return info;
}

bool LocalStore::enabled() const noexcept { return impl_->dir.valid() && impl_->writable.load(); }

std::filesystem::path LocalStore::entry_path(const CacheKey& key) const {
  return impl_->config.dir / (key.digest() + std::string(local::kEntrySuffix));
}

const CacheConfig& LocalStore::config() const noexcept { return impl_->config; }

const std::filesystem::path& LocalStore::fell_back_from() const noexcept { return impl_->fell_back_from; }

StoreInfo LocalStore::describe() const {
  const Impl& s = *impl_;
  const CacheInfo i = info();
  StoreInfo out;
  out.kind = "local";
  out.location = s.config.dir.string();
  out.usable = s.dir.valid();
  out.writable = enabled();
  out.status = !s.config.enabled ? "disabled"
               : !out.usable     ? "unusable"
               : out.writable    ? "read-write"
                                 : "read-only";
  if (s.team) out.status += ", team directory (group " + std::to_string(s.group) + ")";
  if (!s.network.empty()) out.status += ", on " + s.network + " (statistics per host)";
  if (!s.fell_back_from.empty()) out.status += ", fallback for " + s.fell_back_from.string();
  out.entries = i.entries;
  out.bytes = i.bytes;
  const CacheStats stats = machine_stats();
  out.hits = stats.hits;
  out.misses = stats.misses;
  return out;
}

}  // namespace tropical::storage
