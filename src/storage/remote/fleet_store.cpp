#include "tropical/storage/remote/fleet_store.hpp"

#include <span>
#include <stdexcept>
#include <utility>

#include "tropical/storage/entry.hpp"
#include "tropical/storage/key.hpp"

namespace tropical::storage::remote {
namespace {

// Holds the fleet lease until the walk has published (or given up).
class LeaseFlight final : public Flight {
 public:
  explicit LeaseFlight(Lease lease) : lease_(std::move(lease)) {}

 private:
  Lease lease_;
};

}  // namespace

FleetStore::FleetStore(RemoteOptions options, WarningSink warn)
    : store_(std::move(options), warn),
      name_("remote " + store_.options().client.endpoint.url()),
      warn_(warn ? std::move(warn) : stderr_warnings()) {}

Lookup FleetStore::lookup(const StoreKey& key, ImageParts parts) {
  Lookup out;
  LookupResult found = store_.lookup(key.digest);
  switch (found.outcome) {
    case LookupOutcome::kHit: break;
    case LookupOutcome::kMiss: out.miss = Miss::kNoEntry; return out;
    case LookupOutcome::kRefused:
      out.miss = Miss::kRefused;
      out.detail = "refused (" + std::string(to_string(found.refused)) + ")";
      return out;
    default:
      out.miss = Miss::kUnavailable;
      out.detail = "remote " + std::string(to_string(found.outcome));
      return out;
  }
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(found.entry.data());
  EntryRead read = decode_entry(std::span(bytes, found.entry.size()), key.serialized, parts);
  if (read.status == EntryStatus::kOk) {
    out.image = std::move(read.image);
    return out;
  }
  // Signed by a trusted key and still not this key's sound entry: a producer's bug, never loaded.
  undecodable_.fetch_add(1, std::memory_order_relaxed);
  out.miss = entry_miss(read.status, found.entry.size()).miss;
  out.detail = "a signed entry that does not decode for this key";
  if (!warned_undecodable_.exchange(true)) {
    warn_("tropical: warning: " + name_ + ": " + out.detail + " (" + store_.redis_key(key.digest) +
          "); compiling instead\n");
  }
  return out;
}

bool FleetStore::store(const StoreKey& key, const CompiledImage& image, StoreReason reason) {
  (void)reason;
  if (!can_store()) return false;
  std::vector<std::uint8_t> entry;
  try {
    entry = encode_entry(key.serialized, image);
  } catch (const std::length_error&) {
    return false;
  }
  const std::string_view bytes(reinterpret_cast<const char*>(entry.data()), entry.size());
  return store_.publish(key.digest, bytes) == PublishOutcome::kPublished;
}

FlightResult FleetStore::single_flight(const StoreKey& key) {
  FleetFlight flight = store_.begin(key.digest);
  FlightResult out;
  switch (flight.role) {
    case FleetFlight::Role::kLeader:
      out.state = FlightResult::State::kLeader;
      out.held = std::make_unique<LeaseFlight>(std::move(flight.lease));
      out.checked = true;  // begin looked again under the lease
      break;
    case FleetFlight::Role::kHit:
      // The entry is there now; the walk's next look reads (and promotes) it.
      out.state = FlightResult::State::kLeader;
      break;
    case FleetFlight::Role::kAlone:
      out.state = FlightResult::State::kTimedOut;
      out.why = name_ + ": no lease (another node's compile ran past the wait, or the remote is failing)";
      break;
  }
  return out;
}

std::unique_ptr<FleetStore> make_fleet_store(const CacheConfig& config, const SettingLookup& get,
                                             const SettingOrigin& origin) {
  if (!config.enabled) return nullptr;
  std::optional<RemoteOptions> options = remote_options(get, kCacheFormatVersion, stderr_warnings(), origin);
  if (!options) return nullptr;
  return std::make_unique<FleetStore>(std::move(*options));
}

std::unique_ptr<FleetStore> make_fleet_store(const CacheConfig& config) {
  if (!config.enabled) return nullptr;
  const SettingSources sources =
      environment_then_file(config.file, (config.dir / kConfigFileName).string(), stderr_warnings());
  return make_fleet_store(config, sources.get, sources.origin);
}

}  // namespace tropical::storage::remote
