#include "tropical/storage/remote/remote_store.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#include "tropical/storage/log.hpp"

namespace tropical::storage::remote {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

constexpr milliseconds kMaxPoll{250};

// Compare-and-delete: a holder whose lease expired and was taken by another node must not
// delete that node's lease.
constexpr std::string_view kReleaseScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

// SET NX PX in one call, and a lease that cannot be ours to wait for (no TTL, as anyone who can write the
// Redis may leave, or a TTL above the lease: it would stall producers for its lifetime) is treated as absent
// and replaced. 1: taken, 2: taken over such a lease, 0: held by another node.
constexpr std::string_view kLeaseScript =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
    "local ttl = redis.call('pttl', KEYS[1]) "
    "if ttl == -1 or ttl > tonumber(ARGV[2]) then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end "
    "return 0";

bool valid_digest(std::string_view hex) {
  return !hex.empty() && hex.size() <= 128 &&
         std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string random_token() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // Uniqueness, not secrecy, is what a token needs.
    std::random_device device;
    for (auto& b : bytes) b = static_cast<unsigned char>(device());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (const unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) { counter.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

struct RemoteStore::Counters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, refused_unsigned{0}, refused_untrusted{0}, refused_bad_signature{0},
      refused_garbage{0}, errors{0}, skipped{0}, published{0}, bytes_read{0}, bytes_written{0}, round_trips{0},
      round_trip_ns{0}, max_round_trip_ns{0}, verify_ns{0}, leases{0}, lease_waits{0}, lease_wait_ns{0},
      lease_timeouts{0}, leases_replaced{0};
};

std::string_view to_string(LookupOutcome outcome) noexcept {
  switch (outcome) {
    case LookupOutcome::kHit: return "hit";
    case LookupOutcome::kMiss: return "miss";
    case LookupOutcome::kRefused: return "refused";
    case LookupOutcome::kError: return "error";
    case LookupOutcome::kSkipped: return "skipped";
    case LookupOutcome::kOff: return "off";
  }
  return "unknown";
}

RemoteStore::RemoteStore(RemoteOptions options, WarningSink warn)
    : options_(std::move(options)),
      warn_(warn ? std::move(warn) : stderr_warnings()),
      client_(options_.client, warn_),
      counters_(std::make_unique<Counters>()) {}

RemoteStore::~RemoteStore() = default;

std::string RemoteStore::redis_key(std::string_view digest_hex) const {
  return "tropical:" + std::to_string(options_.format) + ":" + std::string(digest_hex);
}

std::string RemoteStore::lock_key(std::string_view digest_hex) const {
  return "tropical:lock:" + std::to_string(options_.format) + ":" + std::string(digest_hex);
}

void RemoteStore::warn_once(const std::string& cause, const std::string& line) {
  {
    std::lock_guard lock(warned_mutex_);
    if (!warned_.insert(cause).second) return;
  }
  warn_(line);
}

CallResult RemoteStore::call(std::initializer_list<std::string_view> args) {
  CallResult result = client_.call(args);
  Counters& c = *counters_;
  switch (result.status) {
    case CallStatus::kSkipped: add(c.skipped); break;
    case CallStatus::kFailed: add(c.errors); break;
    case CallStatus::kOk: {
      const auto ns = static_cast<std::uint64_t>(result.elapsed.count());
      add(c.round_trips);
      add(c.round_trip_ns, ns);
      std::uint64_t seen = c.max_round_trip_ns.load(std::memory_order_relaxed);
      while (ns > seen && !c.max_round_trip_ns.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
      }
      if (result.reply.type == RedisReply::Type::kError) add(c.errors);
      break;
    }
  }
  return result;
}

LookupResult RemoteStore::get_value(const std::string& key) {
  LookupResult result;
  const std::string ttl = std::to_string(options_.ttl.count());
  CallResult got;
  if (getex_.load(std::memory_order_relaxed)) {
    got = call({"GETEX", key, "PX", ttl});
    // Redis before 6.2 has no GETEX: GET, then PEXPIRE after a hit.
    if (got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kError &&
        got.reply.text.find("unknown command") != std::string::npos) {
      getex_.store(false, std::memory_order_relaxed);
      counters_->errors.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (!getex_.load(std::memory_order_relaxed)) {
    got = call({"GET", key});
    if (got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kString) call({"PEXPIRE", key, ttl});
  }
  if (got.status == CallStatus::kSkipped) {
    result.outcome = LookupOutcome::kSkipped;
    return result;
  }
  if (got.status == CallStatus::kFailed) {
    result.outcome = LookupOutcome::kError;
    return result;
  }
  switch (got.reply.type) {
    case RedisReply::Type::kNil:
      result.outcome = LookupOutcome::kMiss;
      break;
    case RedisReply::Type::kString:
      result.outcome = LookupOutcome::kHit;
      result.entry = std::move(got.reply.text);
      break;
    case RedisReply::Type::kError:
      warn_once("error reply", "tropical: warning: remote cache " + options_.client.endpoint.url() +
                                   " answered an error (" + printable(got.reply.text) + "); treated as a miss\n");
      result.outcome = LookupOutcome::kError;
      break;
    default:
      result.outcome = LookupOutcome::kRefused;
      result.refused = ValueVerdict::kGarbage;
      break;
  }
  return result;
}

LookupResult RemoteStore::lookup(std::string_view digest_hex) {
  LookupResult result;
  if (!options_.may_read()) return result;
  Counters& c = *counters_;
  if (!valid_digest(digest_hex)) {
    result.outcome = LookupOutcome::kMiss;
    add(c.misses);
    return result;
  }
  const std::string key = redis_key(digest_hex);
  result = get_value(key);
  if (result.outcome == LookupOutcome::kMiss) add(c.misses);
  if (result.outcome != LookupOutcome::kHit && result.outcome != LookupOutcome::kRefused) return result;
  if (result.outcome == LookupOutcome::kHit) {
    add(c.bytes_read, result.entry.size());
    const auto start = Clock::now();
    const OpenedValue opened = open_value(&result.entry, key, options_.trusted, options_.allow_unsigned);
    add(c.verify_ns, static_cast<std::uint64_t>(duration_cast<nanoseconds>(Clock::now() - start).count()));
    if (opened.verdict == ValueVerdict::kAccepted) {
      add(c.hits);
      return result;
    }
    result.outcome = LookupOutcome::kRefused;
    result.refused = opened.verdict;
    result.entry.clear();
    if (opened.signer) result.entry = " signed by " + key_id(*opened.signer);
  }
  const std::string cause(to_string(result.refused));
  warn_once("refused " + cause, "tropical: warning: remote cache " + options_.client.endpoint.url() +
                                    ": refused the entry " + key + result.entry + " (" + cause +
                                    "); compiling instead (further refusals of this kind are counted, not shown)\n");
  result.entry.clear();
  switch (result.refused) {
    case ValueVerdict::kUnsigned: add(c.refused_unsigned); break;
    case ValueVerdict::kUntrusted: add(c.refused_untrusted); break;
    case ValueVerdict::kBadSignature: add(c.refused_bad_signature); break;
    default: add(c.refused_garbage); break;
  }
  return result;
}

PublishOutcome RemoteStore::publish(std::string_view digest_hex, std::string_view entry) {
  if (!options_.may_write() || !valid_digest(digest_hex)) return PublishOutcome::kNotAllowed;
  const std::string key = redis_key(digest_hex);
  const auto value = seal_value(entry, key, options_.signer.get());
  if (!value) {
    warn_once("sign", "tropical: warning: remote cache: OpenSSL could not sign an entry; not published\n");
    return PublishOutcome::kFailed;
  }
  const CallResult got = call({"SET", key, *value, "PX", std::to_string(options_.ttl.count())});
  if (got.status == CallStatus::kSkipped) return PublishOutcome::kSkipped;
  if (got.status == CallStatus::kFailed) return PublishOutcome::kFailed;
  if (got.reply.type != RedisReply::Type::kStatus) {
    // For example OOM under maxmemory-policy noeviction: the run goes on, unpublished.
    warn_once("publish", "tropical: warning: remote cache " + options_.client.endpoint.url() +
                             " refused a write (" + printable(got.reply.text) + "); entries are not published\n");
    return PublishOutcome::kFailed;
  }
  add(counters_->published);
  add(counters_->bytes_written, value->size());
  return PublishOutcome::kPublished;
}

Lease RemoteStore::try_lease(std::string_view digest_hex, bool* failed) {
  Lease lease;
  if (failed != nullptr) *failed = false;
  if (!valid_digest(digest_hex)) return lease;
  std::string key = lock_key(digest_hex);
  std::string token = random_token();
  const std::string px = std::to_string(options_.lease.count());
  bool taken = false;
  CallResult got;
  if (scripted_lease_.load(std::memory_order_relaxed)) {
    got = call({"EVAL", kLeaseScript, "1", key, token, px});
    // A server (or proxy) that runs no scripts: plain SET NX, without the check of the lease's TTL.
    if (got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kError) {
      scripted_lease_.store(false, std::memory_order_relaxed);
      counters_->errors.fetch_sub(1, std::memory_order_relaxed);
      warn_once("lease script", "tropical: warning: remote cache " + options_.client.endpoint.url() +
                                    " runs no scripts (" + printable(got.reply.text) +
                                    "); plain SET NX leases, a lease without a TTL replaced in two steps\n");
    } else if (got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kInteger) {
      taken = got.reply.integer != 0;
      if (got.reply.integer == 2) {
        add(counters_->leases_replaced);
        warn_once("stale lease", "tropical: warning: remote cache " + options_.client.endpoint.url() +
                                     ": a lease without a TTL (or longer than " + px + " ms) on " + key +
                                     " was ignored and replaced\n");
      }
    }
  }
  if (!scripted_lease_.load(std::memory_order_relaxed)) {
    got = call({"SET", key, token, "NX", "PX", px});
    taken = got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kStatus;
    if (!taken && got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kNil) {
      // Without scripts a lease that never ends (or outlives ours) is replaced in two steps: PTTL, then SET
      // XX. Not atomic: a node that did the same in between makes two compiles of one kernel, never a wait.
      const CallResult ttl = call({"PTTL", key});
      if (ttl.status == CallStatus::kOk && ttl.reply.type == RedisReply::Type::kInteger &&
          (ttl.reply.integer == -1 || ttl.reply.integer > options_.lease.count())) {
        got = call({"SET", key, token, "XX", "PX", px});
        taken = got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kStatus;
        if (taken) {
          add(counters_->leases_replaced);
          warn_once("stale lease", "tropical: warning: remote cache " + options_.client.endpoint.url() +
                                       ": a lease without a TTL (or longer than " + px + " ms) on " + key +
                                       " was ignored and replaced\n");
        }
      }
    }
  }
  if (got.status != CallStatus::kOk || got.reply.type == RedisReply::Type::kError) {
    if (failed != nullptr) *failed = true;
    return lease;
  }
  if (taken) {
    lease.store_ = this;
    lease.lock_key_ = std::move(key);
    lease.token_ = std::move(token);
    add(counters_->leases);
  }
  return lease;
}

void RemoteStore::release(const std::string& lock_key, const std::string& token) noexcept {
  try {
    call({"EVAL", kReleaseScript, "1", lock_key, token});
  } catch (...) {
    // Out of memory building the call: the lease expires on its own.
  }
}

FleetFlight RemoteStore::begin(std::string_view digest_hex) {
  FleetFlight flight;
  const auto start = Clock::now();
  // What is left of this store's total wait bounds this flight's (a fleet whose leases never end in entries
  // costs the process wait_total in all, not wait per kernel).
  const auto left = options_.wait_total - nanoseconds(waited_ns_.load(std::memory_order_relaxed));
  const auto deadline = start + std::clamp<Clock::duration>(left, Clock::duration::zero(), options_.wait);
  auto delay = std::max(options_.poll, milliseconds(1));
  std::minstd_rand jitter(static_cast<unsigned>(start.time_since_epoch().count()));
  bool waited = false;
  const auto finish = [&](FleetFlight::Role role) {
    flight.role = role;
    if (waited) {
      const auto ns = duration_cast<nanoseconds>(Clock::now() - start).count();
      add(counters_->lease_wait_ns, static_cast<std::uint64_t>(ns));
      waited_ns_.fetch_add(ns, std::memory_order_relaxed);
    }
    return std::move(flight);
  };
  for (;;) {
    LookupResult found = lookup(digest_hex);
    if (found.outcome == LookupOutcome::kHit) {
      flight.entry = std::move(found.entry);
      return finish(FleetFlight::Role::kHit);
    }
    if (found.outcome != LookupOutcome::kMiss && found.outcome != LookupOutcome::kRefused) {
      return finish(FleetFlight::Role::kAlone);
    }
    if (options_.test_hook) options_.test_hook(FlightStep::kMissed);
    // Check, lease, check again: a leader that published and let its lease go between the lookup above and
    // this node's SET NX (or EXISTS) leaves a free lease and a stored entry; without the second look this
    // node would compile the entry again.
    const auto look_again = [&]() -> bool {
      LookupResult again = lookup(digest_hex);
      if (again.outcome != LookupOutcome::kHit) return false;
      flight.entry = std::move(again.entry);
      return true;
    };
    if (options_.may_write()) {
      bool failed = false;
      flight.lease = try_lease(digest_hex, &failed);
      if (flight.lease.held()) {
        if (!look_again()) return finish(FleetFlight::Role::kLeader);
        flight.lease.release();
        return finish(FleetFlight::Role::kHit);
      }
      if (failed) return finish(FleetFlight::Role::kAlone);
    } else {
      // A node that cannot publish takes no lease; it waits only while a writer holds one (a lease with no
      // TTL, or longer than ours, is no writer's: -2 is no lease, -1 no TTL).
      const CallResult got = call({"PTTL", lock_key(digest_hex)});
      const bool answered = got.status == CallStatus::kOk && got.reply.type == RedisReply::Type::kInteger;
      if (!answered || got.reply.integer < 0 || got.reply.integer > options_.lease.count()) {
        return finish(answered && look_again() ? FleetFlight::Role::kHit : FleetFlight::Role::kAlone);
      }
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      add(counters_->lease_timeouts);
      return finish(FleetFlight::Role::kAlone);
    }
    if (!waited) add(counters_->lease_waits);
    waited = true;
    // Jitter spreads the polls of many nodes that missed at the same moment.
    const auto jittered = delay / 2 + milliseconds(jitter() % static_cast<unsigned>(delay.count() / 2 + 1));
    std::this_thread::sleep_for(std::min<Clock::duration>(jittered, deadline - now));
    delay = std::min(delay * 2, kMaxPoll);
  }
}

RemoteStats RemoteStore::stats() const noexcept {
  const Counters& c = *counters_;
  const auto get = [](const std::atomic<std::uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  RemoteStats s;
  s.hits = get(c.hits);
  s.misses = get(c.misses);
  s.refused_unsigned = get(c.refused_unsigned);
  s.refused_untrusted = get(c.refused_untrusted);
  s.refused_bad_signature = get(c.refused_bad_signature);
  s.refused_garbage = get(c.refused_garbage);
  s.errors = get(c.errors);
  s.skipped = get(c.skipped);
  s.published = get(c.published);
  s.bytes_read = get(c.bytes_read);
  s.bytes_written = get(c.bytes_written);
  s.round_trips = get(c.round_trips);
  s.round_trip_ns = get(c.round_trip_ns);
  s.max_round_trip_ns = get(c.max_round_trip_ns);
  s.verify_ns = get(c.verify_ns);
  s.leases = get(c.leases);
  s.lease_waits = get(c.lease_waits);
  s.lease_wait_ns = get(c.lease_wait_ns);
  s.lease_timeouts = get(c.lease_timeouts);
  s.leases_replaced = get(c.leases_replaced);
  return s;
}

Lease::Lease(Lease&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      lock_key_(std::move(other.lock_key_)),
      token_(std::move(other.token_)) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    store_ = std::exchange(other.store_, nullptr);
    lock_key_ = std::move(other.lock_key_);
    token_ = std::move(other.token_);
  }
  return *this;
}

void Lease::release() noexcept {
  if (store_ == nullptr) return;
  store_->release(lock_key_, token_);
  store_ = nullptr;
}

}  // namespace tropical::storage::remote
