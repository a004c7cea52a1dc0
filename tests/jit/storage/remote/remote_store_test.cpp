#include "tropical/storage/remote/remote_store.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "fake_server.hpp"
#include "redis_server.hpp"
#include "warnings.hpp"

namespace tropical::storage::remote {
namespace {

using std::chrono::milliseconds;
using testing::FakeServer;
using testing::RedisServer;
using testing::Warnings;

const std::string kDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kOther = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
// Built by appending: GCC 12 warns falsely (-Wrestrict) on std::string + std::string&&.
const std::string kEntry = [] {
  std::string entry = "TROPJIT\n";
  entry.append(200'000, '\x42');
  return entry;
}();

class RemoteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ready()) << server_.explain();
    ASSERT_TRUE(producer_key_ && stranger_key_);
  }

  RemoteOptions base() const {
    RemoteOptions o;
    o.client.endpoint = server_.endpoint();
    o.format = 2;
    return o;
  }
  // A node that signs with producer_key_ (and so trusts it).
  RemoteOptions producer() const {
    RemoteOptions o = base();
    o.signer = std::make_shared<const SigningKey>(*producer_key_);
    o.trusted.add(producer_key_->public_key());
    return o;
  }
  // A node that trusts producer_key_ and cannot write.
  RemoteOptions reader() const {
    RemoteOptions o = base();
    o.trusted.add(producer_key_->public_key());
    return o;
  }

  RedisServer server_;
  std::optional<SigningKey> producer_key_ = SigningKey::generate();
  std::optional<SigningKey> stranger_key_ = SigningKey::generate();
  Warnings warnings_;
};

TEST_F(RemoteStoreTest, published_entry_is_read_back_by_a_trusting_reader) {
  RemoteStore writer(producer(), warnings_.sink());
  RemoteStore node(reader(), warnings_.sink());
  EXPECT_EQ(node.lookup(kDigest).outcome, LookupOutcome::kMiss);
  ASSERT_EQ(writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
  const LookupResult found = node.lookup(kDigest);
  ASSERT_EQ(found.outcome, LookupOutcome::kHit);
  EXPECT_EQ(found.entry, kEntry);
  const RemoteStats s = node.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.bytes_read, kEntry.size() + kTrailerSize);
  EXPECT_EQ(s.round_trips, 2u);
  EXPECT_GT(s.round_trip_ns, 0u);
  EXPECT_GE(s.round_trip_ns, s.max_round_trip_ns);
  EXPECT_GT(s.verify_ns, 0u);
  EXPECT_EQ(writer.stats().published, 1u);
  EXPECT_EQ(writer.stats().bytes_written, kEntry.size() + kTrailerSize);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
  EXPECT_EQ(node.redis_key(kDigest), "tropical:2:" + kDigest);
  EXPECT_EQ(node.lock_key(kDigest), "tropical:lock:2:" + kDigest);
}

TEST_F(RemoteStoreTest, entries_get_the_ttl_and_a_hit_refreshes_it) {
  RemoteOptions o = producer();
  o.ttl = std::chrono::hours(24 * 30);
  RemoteStore store(o, warnings_.sink());
  ASSERT_EQ(store.publish(kDigest, kEntry), PublishOutcome::kPublished);
  const auto ttl_ms = [&] { return server_.command({"PTTL", store.redis_key(kDigest)}).integer; };
  const long long full = o.ttl.count();
  EXPECT_GT(ttl_ms(), full - 60'000);
  EXPECT_LE(ttl_ms(), full);
  ASSERT_EQ(server_.command({"PEXPIRE", store.redis_key(kDigest), "50000"}).integer, 1);
  EXPECT_LE(ttl_ms(), 50'000);
  ASSERT_EQ(store.lookup(kDigest).outcome, LookupOutcome::kHit);
  EXPECT_GT(ttl_ms(), full - 60'000);
}

TEST_F(RemoteStoreTest, flipped_byte_is_refused_as_bad_signature_and_warned_once) {
  RemoteStore writer(producer(), warnings_.sink());
  ASSERT_EQ(writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
  RemoteStore node(reader(), warnings_.sink());
  std::string value = server_.command({"GET", node.redis_key(kDigest)}).text;
  for (const std::size_t at : {std::size_t{0}, kEntry.size() / 2, kEntry.size() - 1, value.size() - kTrailerSize + 60}) {
    std::string tampered = value;
    tampered[at] = static_cast<char>(tampered[at] ^ 0x20);
    server_.command({"SET", node.redis_key(kDigest), tampered});
    const LookupResult found = node.lookup(kDigest);
    EXPECT_EQ(found.outcome, LookupOutcome::kRefused) << at;
    EXPECT_EQ(found.refused, ValueVerdict::kBadSignature) << at;
    EXPECT_TRUE(found.entry.empty());
  }
  EXPECT_EQ(node.stats().refused_bad_signature, 4u);
  EXPECT_EQ(node.stats().hits, 0u);
  ASSERT_EQ(warnings_.count(), 1u) << warnings_.text();
  EXPECT_NE(warnings_.text().find("bad signature"), std::string::npos);
}

TEST_F(RemoteStoreTest, another_keys_valid_entry_under_this_key_is_refused) {
  RemoteStore writer(producer(), warnings_.sink());
  ASSERT_EQ(writer.publish(kOther, "the other kernel"), PublishOutcome::kPublished);
  const std::string other_value = server_.command({"GET", writer.redis_key(kOther)}).text;
  server_.command({"SET", writer.redis_key(kDigest), other_value});
  RemoteStore node(reader(), warnings_.sink());
  const LookupResult found = node.lookup(kDigest);
  EXPECT_EQ(found.outcome, LookupOutcome::kRefused);
  EXPECT_EQ(found.refused, ValueVerdict::kBadSignature);
  EXPECT_EQ(node.lookup(kOther).outcome, LookupOutcome::kHit);
}

TEST_F(RemoteStoreTest, unsigned_entry_is_refused_unless_opted_in) {
  RemoteOptions open_network = base();
  open_network.allow_unsigned = true;
  RemoteStore unsigned_writer(open_network, warnings_.sink());
  ASSERT_EQ(unsigned_writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
  RemoteStore node(reader(), warnings_.sink());
  const LookupResult found = node.lookup(kDigest);
  EXPECT_EQ(found.outcome, LookupOutcome::kRefused);
  EXPECT_EQ(found.refused, ValueVerdict::kUnsigned);
  EXPECT_EQ(node.stats().refused_unsigned, 1u);
  // The opted-in node reads it.
  EXPECT_EQ(unsigned_writer.lookup(kDigest).entry, kEntry);
  EXPECT_EQ(warnings_.count(), 1u) << warnings_.text();
}

TEST_F(RemoteStoreTest, entry_signed_by_an_untrusted_key_is_refused) {
  RemoteOptions o = base();
  o.signer = std::make_shared<const SigningKey>(*stranger_key_);
  RemoteStore stranger(o, warnings_.sink());
  ASSERT_EQ(stranger.publish(kDigest, kEntry), PublishOutcome::kPublished);
  RemoteStore node(reader(), warnings_.sink());
  const LookupResult found = node.lookup(kDigest);
  EXPECT_EQ(found.outcome, LookupOutcome::kRefused);
  EXPECT_EQ(found.refused, ValueVerdict::kUntrusted);
  EXPECT_EQ(node.stats().refused_untrusted, 1u);
  EXPECT_NE(warnings_.text().find(stranger_key_->public_key().id()), std::string::npos) << warnings_.text();
}

TEST_F(RemoteStoreTest, garbage_values_and_wrong_types_are_misses) {
  RemoteStore node(reader(), warnings_.sink());
  server_.command({"SET", node.redis_key(kDigest), "not an entry"});
  EXPECT_EQ(node.lookup(kDigest).refused, ValueVerdict::kGarbage);
  server_.command({"DEL", node.redis_key(kDigest)});
  server_.command({"RPUSH", node.redis_key(kDigest), "a list"});
  EXPECT_EQ(node.lookup(kDigest).outcome, LookupOutcome::kError);  // WRONGTYPE: an error reply, not a failure
  EXPECT_FALSE(node.client().cooling_down());
  EXPECT_EQ(node.stats().refused_garbage, 1u);
  EXPECT_EQ(node.stats().errors, 1u);
  EXPECT_EQ(node.lookup("not hex").outcome, LookupOutcome::kMiss);
}

TEST_F(RemoteStoreTest, reader_without_keys_never_reads_and_never_writes) {
  RemoteStore writer(producer(), warnings_.sink());
  ASSERT_EQ(writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
  RemoteStore keyless(base(), warnings_.sink());
  EXPECT_EQ(keyless.lookup(kDigest).outcome, LookupOutcome::kOff);
  EXPECT_EQ(keyless.publish(kDigest, kEntry), PublishOutcome::kNotAllowed);
  EXPECT_EQ(keyless.begin(kDigest).role, FleetFlight::Role::kAlone);
  EXPECT_EQ(keyless.stats().round_trips, 0u);
  EXPECT_EQ(keyless.stats().hits, 0u);
}

TEST_F(RemoteStoreTest, read_only_node_does_not_publish) {
  RemoteStore node(reader(), warnings_.sink());
  EXPECT_EQ(node.publish(kDigest, kEntry), PublishOutcome::kNotAllowed);
  EXPECT_EQ(server_.command({"EXISTS", node.redis_key(kDigest)}).integer, 0);
}

TEST_F(RemoteStoreTest, lease_is_exclusive_and_released_only_by_its_holder) {
  RemoteStore a(producer(), warnings_.sink());
  RemoteStore b(producer(), warnings_.sink());
  Lease first = a.try_lease(kDigest);
  ASSERT_TRUE(first.held());
  bool failed = true;
  EXPECT_FALSE(b.try_lease(kDigest, &failed).held());
  EXPECT_FALSE(failed);
  const long long pttl = server_.command({"PTTL", a.lock_key(kDigest)}).integer;
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, a.options().lease.count());
  // The lease changed hands behind first's back (expiry): first's release must not delete it.
  server_.command({"SET", a.lock_key(kDigest), "someone-else"});
  first.release();
  EXPECT_EQ(server_.command({"GET", a.lock_key(kDigest)}).text, "someone-else");
  server_.command({"DEL", a.lock_key(kDigest)});
  {
    Lease second = b.try_lease(kDigest);
    ASSERT_TRUE(second.held());
  }
  EXPECT_EQ(server_.command({"EXISTS", a.lock_key(kDigest)}).integer, 0);
}

TEST_F(RemoteStoreTest, eight_nodes_cold_on_one_key_elect_one_leader) {
  std::atomic<int> leaders{0}, hits{0}, alone{0}, compiles{0};
  std::vector<std::thread> nodes;
  for (int n = 0; n < 8; ++n) {
    nodes.emplace_back([&] {
      RemoteStore store(producer(), warnings_.sink());  // each "machine" its own client
      FleetFlight flight = store.begin(kDigest);
      if (flight.role == FleetFlight::Role::kHit) {
        if (flight.entry == kEntry) ++hits;
        return;
      }
      ++(flight.role == FleetFlight::Role::kLeader ? leaders : alone);
      ++compiles;
      std::this_thread::sleep_for(milliseconds(300));  // the compile
      store.publish(kDigest, kEntry);
    });
  }
  for (auto& t : nodes) t.join();
  EXPECT_EQ(leaders.load(), 1);
  EXPECT_EQ(alone.load(), 0);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(hits.load(), 7);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

// The lease's window, ordered by the hook (no sleeps): the follower's lookup misses, then the leader
// publishes and lets its lease go, then the follower takes the free lease. Double-checked, it ends as a
// hit with the lease given back, not as a second leader that compiles again.
TEST_F(RemoteStoreTest, lease_taken_after_the_leader_finished_ends_as_a_hit) {
  RemoteStore leader_node(producer(), warnings_.sink());
  FleetFlight leader = leader_node.begin(kDigest);
  ASSERT_EQ(leader.role, FleetFlight::Role::kLeader);
  RemoteOptions o = producer();
  int missed = 0;
  o.test_hook = [&](FlightStep step) {
    if (step != FlightStep::kMissed || missed++ > 0) return;
    ASSERT_EQ(leader_node.publish(kDigest, kEntry), PublishOutcome::kPublished);
    leader.lease.release();
  };
  RemoteStore follower(o, warnings_.sink());
  const FleetFlight flight = follower.begin(kDigest);
  EXPECT_EQ(flight.role, FleetFlight::Role::kHit);
  EXPECT_TRUE(flight.entry == kEntry) << flight.entry.size() << " bytes";
  EXPECT_FALSE(flight.lease.held());
  EXPECT_EQ(missed, 1);
  EXPECT_EQ(follower.stats().leases, 1u);
  EXPECT_EQ(follower.stats().lease_waits, 0u);
  EXPECT_EQ(server_.command({"EXISTS", follower.lock_key(kDigest)}).integer, 0);  // given back
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

// The same window on a node that cannot publish: its lookup misses, the writer publishes and lets go, and
// the node, finding no lease, looks once more instead of compiling alone.
TEST_F(RemoteStoreTest, read_only_node_that_misses_as_the_leader_finishes_reads_the_entry) {
  RemoteStore writer(producer(), warnings_.sink());
  FleetFlight leader = writer.begin(kDigest);
  ASSERT_EQ(leader.role, FleetFlight::Role::kLeader);
  RemoteOptions o = reader();
  int missed = 0;
  o.test_hook = [&](FlightStep step) {
    if (step != FlightStep::kMissed || missed++ > 0) return;
    ASSERT_EQ(writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
    leader.lease.release();
  };
  RemoteStore node(o, warnings_.sink());
  const FleetFlight flight = node.begin(kDigest);
  EXPECT_EQ(flight.role, FleetFlight::Role::kHit);
  EXPECT_TRUE(flight.entry == kEntry) << flight.entry.size() << " bytes";
  EXPECT_EQ(missed, 1);
}

// What the double check costs: a cold leader makes three calls (lookup, SET NX, lookup), a hit one.
TEST_F(RemoteStoreTest, cold_leader_looks_twice_and_a_hit_once) {
  RemoteStore node(producer(), warnings_.sink());
  FleetFlight flight = node.begin(kDigest);
  ASSERT_EQ(flight.role, FleetFlight::Role::kLeader);
  EXPECT_EQ(node.stats().round_trips, 3u);
  EXPECT_EQ(node.stats().misses, 2u);
  ASSERT_EQ(node.publish(kDigest, kEntry), PublishOutcome::kPublished);
  flight.lease.release();
  RemoteStore other(producer(), warnings_.sink());
  EXPECT_EQ(other.begin(kDigest).role, FleetFlight::Role::kHit);
  EXPECT_EQ(other.stats().round_trips, 1u);
}

TEST_F(RemoteStoreTest, waiter_gives_up_after_the_wait_bound) {
  RemoteStore holder(producer(), warnings_.sink());
  Lease lease = holder.try_lease(kDigest);
  ASSERT_TRUE(lease.held());
  RemoteOptions o = producer();
  o.wait = milliseconds(400);
  RemoteStore waiter(o, warnings_.sink());
  const auto start = Clock::now();
  const FleetFlight flight = waiter.begin(kDigest);
  const auto elapsed = Clock::now() - start;
  EXPECT_EQ(flight.role, FleetFlight::Role::kAlone);
  EXPECT_GE(elapsed, o.wait);
  EXPECT_LE(elapsed, o.wait + milliseconds(300));
  EXPECT_EQ(waiter.stats().lease_timeouts, 1u);
  EXPECT_EQ(waiter.stats().lease_waits, 1u);
}

TEST_F(RemoteStoreTest, read_only_node_waits_only_while_a_writer_holds_the_lease) {
  RemoteStore node(reader(), warnings_.sink());
  EXPECT_EQ(node.begin(kDigest).role, FleetFlight::Role::kAlone);  // nobody compiling: at once
  EXPECT_EQ(node.stats().lease_waits, 0u);
  RemoteStore writer(producer(), warnings_.sink());
  FleetFlight leader = writer.begin(kDigest);
  ASSERT_EQ(leader.role, FleetFlight::Role::kLeader);
  auto waiting = std::async(std::launch::async, [&] { return node.begin(kDigest); });
  std::this_thread::sleep_for(milliseconds(200));
  ASSERT_EQ(writer.publish(kDigest, kEntry), PublishOutcome::kPublished);
  leader.lease.release();
  const FleetFlight flight = waiting.get();
  EXPECT_EQ(flight.role, FleetFlight::Role::kHit);
  EXPECT_EQ(flight.entry, kEntry);
}

TEST_F(RemoteStoreTest, dead_remote_makes_every_flight_compile_alone_within_the_bound) {
  RemoteStore store(producer(), warnings_.sink());
  ASSERT_EQ(store.publish(kOther, kEntry), PublishOutcome::kPublished);
  server_.signal(SIGSTOP);
  const auto start = Clock::now();
  EXPECT_EQ(store.begin(kDigest).role, FleetFlight::Role::kAlone);
  EXPECT_EQ(store.lookup(kOther).outcome, LookupOutcome::kSkipped);
  EXPECT_EQ(store.publish(kOther, kEntry), PublishOutcome::kSkipped);
  const auto elapsed = Clock::now() - start;
  server_.signal(SIGCONT);
  const auto& c = store.options().client;
  EXPECT_LE(elapsed, (c.connect_timeout + c.operation_timeout) * 11 / 10);
  EXPECT_EQ(warnings_.count(), 1u) << warnings_.text();
  EXPECT_EQ(store.stats().errors, 1u);
  EXPECT_EQ(store.stats().skipped, 2u);
}

// A server's error text reaches stderr without the escape sequences or bells it holds.
TEST(RemoteStoreHostile, error_reply_reaches_the_warning_without_control_characters) {
  FakeServer fake("-ERR \x1b[2J\x1b]0;owned\x07 gone\r\n");
  RemoteOptions o;
  o.client.endpoint = *parse_redis_url(fake.url());
  o.client.operation_timeout = milliseconds(2000);
  o.format = 2;
  o.allow_unsigned = true;
  Warnings warnings;
  RemoteStore node(o, warnings.sink());
  EXPECT_EQ(node.lookup(kDigest).outcome, LookupOutcome::kError);
  ASSERT_EQ(warnings.count(), 1u) << warnings.text();
  const std::string line = warnings.text();
  EXPECT_NE(line.find("answered an error (ERR ?[2J?]0;owned? gone)"), std::string::npos) << line;
  for (const char c : line.substr(0, line.size() - 1)) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << "control byte " << int(c) << " in: " << line;
  }
}

}  // namespace
}  // namespace tropical::storage::remote
