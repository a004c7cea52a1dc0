#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "tropical/storage/remote/redis_client.hpp"
#include "tropical/storage/remote/remote_config.hpp"
#include "tropical/storage/remote/signed_value.hpp"

namespace tropical::storage::remote {

/// Counters of one RemoteStore (this process's traffic with the fleet cache).
struct RemoteStats {
  std::uint64_t hits = 0;                   ///< entries read and accepted
  std::uint64_t misses = 0;                 ///< lookups that found no entry
  std::uint64_t refused_unsigned = 0;       ///< values refused: no signature
  std::uint64_t refused_untrusted = 0;      ///< values refused: signer not trusted
  std::uint64_t refused_bad_signature = 0;  ///< values refused: signature does not cover key and bytes
  std::uint64_t refused_garbage = 0;        ///< values or replies that are not of the format
  std::uint64_t errors = 0;                 ///< failed calls (connect, timeout, I/O) and error replies
  std::uint64_t skipped = 0;                ///< calls not made: cooling down after a failure
  std::uint64_t published = 0;              ///< entries written
  std::uint64_t bytes_read = 0;             ///< value bytes received
  std::uint64_t bytes_written = 0;          ///< value bytes sent
  std::uint64_t round_trips = 0;            ///< calls that got a reply
  std::uint64_t round_trip_ns = 0;          ///< their total wall time
  std::uint64_t max_round_trip_ns = 0;      ///< the slowest of them
  std::uint64_t verify_ns = 0;              ///< time spent checking signatures
  std::uint64_t leases = 0;                 ///< compile leases taken
  std::uint64_t lease_waits = 0;            ///< flights that waited for another node's compile
  std::uint64_t lease_wait_ns = 0;          ///< total time of those waits
  std::uint64_t lease_timeouts = 0;         ///< waits that gave up and compiled here
  std::uint64_t leases_replaced = 0;        ///< leases taken over one with no TTL (or a TTL above ours)
};

/// How a lookup ended.
enum class LookupOutcome {
  kHit,      ///< entry holds the verified entry bytes
  kMiss,     ///< no value under the key
  kRefused,  ///< a value was there and refused (see LookupResult::refused); a miss to the caller
  kError,    ///< the call failed or the server answered an error; a miss
  kSkipped,  ///< no call made: cooling down after a failure; a miss
  kOff,      ///< this node may not read remote entries (no trusted key, no unsigned opt-in)
};

/// A lookup's outcome and, on a hit, the entry bytes (the trailer removed).
struct LookupResult {
  LookupOutcome outcome = LookupOutcome::kOff;      ///< see LookupOutcome
  ValueVerdict refused = ValueVerdict::kAccepted;   ///< kRefused: why
  std::string entry;                                ///< kHit: the entry bytes
};

/// How a publish ended.
enum class PublishOutcome { kPublished, kNotAllowed, kFailed, kSkipped };

class RemoteStore;

/// A held compile lease on one key; releases it (only if still ours) when released or destroyed.
/// Move-only; not thread-safe.
class Lease {
 public:
  Lease() = default;
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;
  ~Lease() { release(); }
  /// True while this object holds a lease.
  bool held() const noexcept { return store_ != nullptr; }
  /// Deletes the lock key if it still holds our token (a bounded call); a no-op if not held.
  void release() noexcept;

 private:
  friend class RemoteStore;
  RemoteStore* store_ = nullptr;
  std::string lock_key_;
  std::string token_;
};

/// The outcome of RemoteStore::begin: use the entry, or compile (holding the lease, or alone).
struct FleetFlight {
  enum class Role {
    kHit,     ///< entry holds the verified entry bytes
    kLeader,  ///< this node holds the lease: compile, publish(), then let the lease go
    kAlone,   ///< compile without a lease (remote failing, read-only node, or the wait ran out)
  };
  Role role = Role::kAlone;  ///< see Role
  std::string entry;         ///< kHit: the entry bytes
  Lease lease;               ///< kLeader: the lease
};

/// The fleet store over one Redis: lookups of signed entries with TTL refresh, publishing, and
/// cross-machine single flight by lease. Keys are `tropical:<format>:<hex digest>`, leases
/// `tropical:lock:<format>:<hex digest>`. The entry bytes are opaque here: the caller checks
/// them as it checks any entry (checksum, full key). All members are thread-safe, never throw
/// but bad_alloc, and return within the client's bounds (begin: within `wait` plus those);
/// each refusal cause and each failure cause is warned about once per store.
class RemoteStore {
 public:
  /// A store over options (a client is made from options.client); warn receives warnings (stderr if empty).
  explicit RemoteStore(RemoteOptions options, WarningSink warn = {});
  ~RemoteStore();
  RemoteStore(const RemoteStore&) = delete;
  RemoteStore& operator=(const RemoteStore&) = delete;

  /// The entry stored for digest_hex, verified (signature over the Redis key and bytes), its TTL
  /// refreshed; or why not. digest_hex: lower-case hex, 1..128 characters (else kMiss).
  LookupResult lookup(std::string_view digest_hex);
  /// Stores entry for digest_hex (signed with the signing key, or unsigned if allowed) with the TTL.
  PublishOutcome publish(std::string_view digest_hex, std::string_view entry);
  /// The compile lease for digest_hex if free (SET NX PX lease, in one EVAL with the next check); a lease
  /// with no TTL or a TTL above `lease` counts as free and is replaced (one warning). An unheld Lease
  /// otherwise. *failed (if given) is set when the call itself failed.
  Lease try_lease(std::string_view digest_hex, bool* failed = nullptr);
  /// Single flight across machines: a hit, or the lease, or, after waiting up to `wait` for
  /// another node's entry (polling, the interval doubling from `poll` to 250 ms), compile alone. The
  /// waits of all flights of this store together last at most `wait_total`; then flights wait no more.
  /// Check, lease, check again: a free lease (or, on a read-only node, no writer's lease) is followed by
  /// a second lookup, whose hit ends the flight as kHit with the lease released.
  FleetFlight begin(std::string_view digest_hex);

  /// The Redis key of digest_hex.
  std::string redis_key(std::string_view digest_hex) const;
  /// The Redis key of digest_hex's lease.
  std::string lock_key(std::string_view digest_hex) const;
  /// A snapshot of the counters.
  RemoteStats stats() const noexcept;
  /// The options in use.
  const RemoteOptions& options() const noexcept { return options_; }
  /// The client (tests: cool-down state).
  RedisClient& client() noexcept { return client_; }

 private:
  friend class Lease;
  struct Counters;
  CallResult call(std::initializer_list<std::string_view> args);
  LookupResult get_value(const std::string& key);
  void release(const std::string& lock_key, const std::string& token) noexcept;
  void warn_once(const std::string& cause, const std::string& line);

  RemoteOptions options_;
  WarningSink warn_;
  RedisClient client_;
  std::unique_ptr<Counters> counters_;
  std::atomic<bool> getex_{true};
  std::atomic<bool> scripted_lease_{true};
  std::atomic<std::int64_t> waited_ns_{0};  // summed over this store's flights, against options_.wait_total
  std::mutex warned_mutex_;
  std::set<std::string> warned_;
};

/// A short name of outcome ("hit", "miss", ...).
std::string_view to_string(LookupOutcome outcome) noexcept;

}  // namespace tropical::storage::remote
