// Fleet store benchmarks (CPU only): signing and verifying one entry, and a remote hit
// (GETEX + transfer + signature check) from a real redis-server on this machine, over its
// unix socket and over TCP loopback, and a node's warm first use through the walk over the stores (empty primary,
// the entry in Redis), side by side with the copy into the primary made durable (fsync) and left out.
// The server is started like the tests start it (tests/jit/storage/remote/redis_server.hpp): a temporary
// directory, nothing persisted; $TROPICAL_TEST_REDIS_SERVER names the redis-server binary (default
// /usr/bin/redis-server).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "redis_server.hpp"
#include "tropical/storage/remote/remote_store.hpp"
#include "tropical/storage/remote/fleet_store.hpp"
#include "tropical/storage/store_chain.hpp"

namespace {

using namespace tropical::storage::remote;

const std::string kDigest = "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e";

std::string entry_of(std::size_t bytes) {
  std::string entry(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) entry[i] = static_cast<char>(i * 2654435761u >> 13);
  return entry;
}

const SigningKey& key() {
  static const SigningKey k = *SigningKey::generate();
  return k;
}

void BM_sign_entry(benchmark::State& state) {
  const std::string entry = entry_of(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(seal_value(entry, "tropical:2:" + kDigest, &key()));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_sign_entry)->Arg(16 << 10)->Arg(200 << 10)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

// The signature check of one entry as a reader does it (the trailer parsed, the key found among
// the trusted ones, ed25519 over domain + Redis key + bytes).
void BM_verify_entry(benchmark::State& state) {
  const std::string key_name = "tropical:2:" + kDigest;
  const std::string sealed = *seal_value(entry_of(static_cast<std::size_t>(state.range(0))), key_name, &key());
  TrustedKeys trusted;
  trusted.add(key().public_key());
  for (auto _ : state) {
    state.PauseTiming();
    std::string value = sealed;
    state.ResumeTiming();
    const OpenedValue opened = open_value(&value, key_name, trusted, false);
    if (opened.verdict != ValueVerdict::kAccepted) state.SkipWithError("refused");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_verify_entry)->Arg(16 << 10)->Arg(200 << 10)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

// Destroyed at exit: the server is stopped and its temporary directory removed.
tropical::storage::remote::testing::RedisServer& server() {
  static tropical::storage::remote::testing::RedisServer s(/*tcp=*/true);
  return s;
}

// A remote hit of a 0.2 MB entry (lookup: GETEX with TTL refresh, transfer, verify), what a node
// with an empty primary pays per kernel before it writes the entry to disk and loads it.
void remote_hit(benchmark::State& state, bool tcp) {
  if (!server().ready()) {
    state.SkipWithError(server().explain().c_str());
    return;
  }
  RemoteOptions options;
  options.client.endpoint = *parse_redis_url(tcp ? server().tcp_url() : server().unix_url());
  options.format = 2;
  options.signer = std::make_shared<const SigningKey>(key());
  options.trusted.add(key().public_key());
  RemoteStore store(options);
  const std::string entry = entry_of(static_cast<std::size_t>(state.range(0)));
  if (store.publish(kDigest, entry) != PublishOutcome::kPublished) {
    state.SkipWithError("publish failed");
    return;
  }
  for (auto _ : state) {
    const LookupResult found = store.lookup(kDigest);
    if (found.outcome != LookupOutcome::kHit || found.entry.size() != entry.size()) state.SkipWithError("no hit");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  const RemoteStats s = store.stats();
  state.counters["verify_us"] = s.hits ? s.verify_ns / 1e3 / static_cast<double>(s.hits) : 0;
}

void BM_remote_hit_unix(benchmark::State& state) { remote_hit(state, false); }
void BM_remote_hit_tcp_loopback(benchmark::State& state) { remote_hit(state, true); }
BENCHMARK(BM_remote_hit_unix)->Arg(200 << 10)->Arg(1 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_remote_hit_tcp_loopback)->Arg(200 << 10)->Arg(1 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A cold leader's flight on a fresh key: RemoteStore::begin as it is (lookup, SET NX, the second
// lookup under the lease), side by side with the single-checked flight it replaced (lookup, SET NX), each
// followed by the lease's release (EVAL). The difference is the double check's extra round trip (a nil
// GETEX). The round_trips counter is per iteration, the release included.
void leader_flight(benchmark::State& state, bool double_checked) {
  if (!server().ready()) {
    state.SkipWithError(server().explain().c_str());
    return;
  }
  RemoteOptions options;
  options.client.endpoint = *parse_redis_url(server().unix_url());
  options.format = 2;
  options.signer = std::make_shared<const SigningKey>(key());
  options.trusted.add(key().public_key());
  RemoteStore store(options);
  std::string digest = kDigest;
  std::uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    digest.replace(0, 16, [&] {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(n++));
      return std::string(hex);
    }());
    state.ResumeTiming();
    if (double_checked) {
      FleetFlight flight = store.begin(digest);
      if (flight.role != FleetFlight::Role::kLeader) state.SkipWithError("not a leader");
    } else {
      if (store.lookup(digest).outcome != LookupOutcome::kMiss) state.SkipWithError("not a miss");
      Lease lease = store.try_lease(digest);
      if (!lease.held()) state.SkipWithError("no lease");
    }
  }
  state.counters["round_trips"] =
      static_cast<double>(store.stats().round_trips) / static_cast<double>(std::max<std::uint64_t>(n, 1));
}

void BM_leader_flight_unix(benchmark::State& state) { leader_flight(state, true); }
void BM_leader_flight_unix_single_check(benchmark::State& state) { leader_flight(state, false); }
BENCHMARK(BM_leader_flight_unix)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_leader_flight_unix_single_check)->Unit(benchmark::kMicrosecond)->UseRealTime();

// How the walk's copy of the remote hit reaches the primary.
enum class Copy {
  kPromoted,  // as the walk does it: a promotion, temp file and rename without fsync
  kDurable,   // as a compiled entry is stored (temp file, fsync, rename, directory fsync): the walk before
              // promotions skipped the fsync, measured side by side
  kNone,      // not written at all: what returning the image before writing would leave on the caller's path
};

// The primary directory with its stores steered by the mode.
class SteeredPrimary final : public tropical::storage::Store {
 public:
  SteeredPrimary(std::unique_ptr<tropical::storage::LocalStore> local, Copy copy)
      : local_(std::move(local)), copy_(copy) {}
  const std::string& name() const noexcept override { return local_->name(); }
  tropical::storage::Lookup lookup(const tropical::storage::StoreKey& key, tropical::storage::ImageParts parts) override {
    return local_->lookup(key, parts);
  }
  bool can_store() const noexcept override { return local_->can_store(); }
  bool store(const tropical::storage::StoreKey& key, const tropical::storage::CompiledImage& image,
             tropical::storage::StoreReason reason) override {
    if (copy_ == Copy::kNone) return false;
    return local_->store(key, image, copy_ == Copy::kDurable ? tropical::storage::StoreReason::kCompiled : reason);
  }
  void after_store(const tropical::storage::StoreKey& key) override { local_->after_store(key); }
  void count_miss(bool bad) override { local_->count_miss(bad); }
  void count_compile(std::uint64_t ns) override { local_->count_compile(ns); }

 private:
  std::unique_ptr<tropical::storage::LocalStore> local_;
  Copy copy_;
};

// Warm first use on a fleet node: an empty primary directory, the entry in Redis. The whole walk: primary
// miss, remote lookup (GETEX, transfer, signature check), entry decode (checksums, full key), the copy into
// the primary (per Copy), the CUBIN returned. No compile: the callback aborts the run.
void fleet_first_use(benchmark::State& state, bool tcp, Copy copy) {
  if (!server().ready()) {
    state.SkipWithError(server().explain().c_str());
    return;
  }
  RemoteOptions options;
  options.client.endpoint = *parse_redis_url(tcp ? server().tcp_url() : server().unix_url());
  options.format = tropical::storage::kCacheFormatVersion;
  options.signer = std::make_shared<const SigningKey>(key());
  options.trusted.add(key().public_key());
  FleetStore remote(options);
  const tropical::storage::CacheKey cache_key{"tropical_gemm_maxplus_f32", std::string(64, 'a'), {"-arch=sm_90"}, 90,
                                          "bench"};
  tropical::storage::CompiledImage image;
  image.cubin.resize(static_cast<std::size_t>(state.range(0)), std::byte{0x5a});
  image.ptx = std::string(static_cast<std::size_t>(state.range(0)) / 4, 'p');
  if (!remote.store(tropical::storage::StoreKey(cache_key), image, tropical::storage::StoreReason::kCompiled)) {
    state.SkipWithError("publish failed");
    return;
  }
  // $TROPICAL_BENCH_DIR: the primaries on a chosen file system (the fsync's cost is the disk's).
  const char* base = std::getenv("TROPICAL_BENCH_DIR");
  const auto root = (base != nullptr && *base != '\0' ? std::filesystem::path(base)
                                                       : std::filesystem::temp_directory_path()) /
                    ("tropical-fleet-bench-" + std::to_string(getpid()));
  std::size_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tropical::storage::CacheConfig config;
    config.dir = root / std::to_string(n++);
    SteeredPrimary primary(std::make_unique<tropical::storage::LocalStore>(config), copy);
    std::array<tropical::storage::Store*, 2> stores = {&primary, &remote};
    state.ResumeTiming();
    bool compiled = false;
    const auto got = tropical::storage::walk_stores(stores, tropical::storage::LogLevel::kOff, cache_key,
                                                []() -> tropical::storage::CompiledImage { std::abort(); }, &compiled);
    if (compiled || got.cubin.size() != image.cubin.size()) state.SkipWithError("not a remote hit");
  }
  std::filesystem::remove_all(root);
  const RemoteStats s = remote.remote().stats();
  state.counters["verify_us"] = s.hits ? s.verify_ns / 1e3 / static_cast<double>(s.hits) : 0;
}

void BM_fleet_first_use_unix(benchmark::State& state) { fleet_first_use(state, false, Copy::kPromoted); }
void BM_fleet_first_use_tcp_loopback(benchmark::State& state) { fleet_first_use(state, true, Copy::kPromoted); }
void BM_fleet_first_use_unix_fsync_copy(benchmark::State& state) { fleet_first_use(state, false, Copy::kDurable); }
void BM_fleet_first_use_unix_no_copy(benchmark::State& state) { fleet_first_use(state, false, Copy::kNone); }
BENCHMARK(BM_fleet_first_use_unix)->Arg(200 << 10)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_fleet_first_use_tcp_loopback)->Arg(200 << 10)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_fleet_first_use_unix_fsync_copy)->Arg(200 << 10)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_fleet_first_use_unix_no_copy)->Arg(200 << 10)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
