// The fleet lease against a hostile or careless Redis: a lease with no TTL, or one
// longer than ours, is ignored and replaced; the waits of one process are bounded in total, not per kernel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis_server.hpp"
#include "tropical/storage/remote/remote_store.hpp"
#include "warnings.hpp"

namespace tropical::storage::remote {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;
using testing::Warnings;

const std::string kDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

class RemoteLeaseTest : public ::testing::Test {
 protected:
  /// A real redis-server, with `extra` configuration arguments.
  explicit RemoteLeaseTest(const std::vector<std::string>& extra = {}) : server_(false, extra) {}
  void SetUp() override {
    ASSERT_TRUE(server_.ready()) << server_.explain();
    ASSERT_TRUE(key_);
  }
  RemoteOptions producer() const {
    RemoteOptions o;
    o.client.endpoint = server_.endpoint();
    o.format = 2;
    o.signer = std::make_shared<const SigningKey>(*key_);
    o.trusted.add(key_->public_key());
    o.wait = milliseconds(2000);
    return o;
  }
  /// Plants a lease without a TTL on kDigest, then checks that store's flight replaces it at once, leads,
  /// and holds a lease of ours (our TTL); returns the flight.
  FleetFlight expect_planted_lease_replaced(RemoteStore& store) {
    EXPECT_EQ(server_.command({"SET", store.lock_key(kDigest), "planted"}).text, "OK");  // no expiry
    const auto start = Clock::now();
    FleetFlight flight = store.begin(kDigest);
    EXPECT_LT(Clock::now() - start, milliseconds(500)) << "waited on a lease that never ends";
    EXPECT_EQ(flight.role, FleetFlight::Role::kLeader);
    EXPECT_TRUE(flight.lease.held());
    const long long pttl = server_.command({"PTTL", store.lock_key(kDigest)}).integer;
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, store.options().lease.count());
    EXPECT_EQ(store.stats().leases_replaced, 1u);
    EXPECT_EQ(store.stats().lease_waits, 0u);
    return flight;
  }
  static std::string digest(int i) {
    std::string d = kDigest;
    d[0] = static_cast<char>('a' + i);
    return d;
  }

  RedisServer server_;
  std::optional<SigningKey> key_ = SigningKey::generate();
  Warnings warnings_;
};

TEST_F(RemoteLeaseTest, lease_without_a_ttl_is_ignored_and_replaced) {
  RemoteStore store(producer(), warnings_.sink());
  FleetFlight flight = expect_planted_lease_replaced(store);
  ASSERT_EQ(warnings_.count(), 1u) << warnings_.text();
  EXPECT_NE(warnings_.text().find("without a TTL"), std::string::npos) << warnings_.text();
  flight.lease.release();
  EXPECT_EQ(server_.command({"EXISTS", store.lock_key(kDigest)}).integer, 0);
}

// A server (or proxy) that runs no scripts.
class RemoteLeaseWithoutScripts : public RemoteLeaseTest {
 protected:
  RemoteLeaseWithoutScripts() : RemoteLeaseTest({"--rename-command", "EVAL", ""}) {}
};

// The lease is a plain SET NX there, and a planted one without a TTL is replaced in two steps (PTTL, SET
// XX) instead of stalling the node for the wait.
TEST_F(RemoteLeaseWithoutScripts, lease_without_a_ttl_is_replaced_without_waiting) {
  RemoteStore store(producer(), warnings_.sink());
  const FleetFlight flight = expect_planted_lease_replaced(store);
  EXPECT_NE(warnings_.text().find("runs no scripts"), std::string::npos) << warnings_.text();
  EXPECT_NE(warnings_.text().find("was ignored and replaced"), std::string::npos) << warnings_.text();
  EXPECT_NE(server_.command({"GET", store.lock_key(kDigest)}).text, "planted");
  // A fair lease (a TTL within ours) is still waited on, and the lease itself still works.
  std::string other = kDigest;
  other[0] = 'f';
  const auto fair_start = Clock::now();  // before the SET: the lease ends 400 ms after it, whatever the load
  ASSERT_EQ(server_.command({"SET", store.lock_key(other), "fair", "PX", "400"}).text, "OK");
  FleetFlight fair = store.begin(other);
  EXPECT_GE(Clock::now() - fair_start, milliseconds(350)) << "did not wait for a fair lease";
  EXPECT_EQ(fair.role, FleetFlight::Role::kLeader);
  EXPECT_TRUE(fair.lease.held());
}

// A node that cannot publish takes no lease and waits only while a writer holds one: a planted lease (no
// TTL) is no writer's, a fair one is.
TEST_F(RemoteLeaseTest, a_reader_waits_on_a_fair_lease_and_not_on_one_without_a_ttl) {
  RemoteOptions o = producer();
  o.signer = nullptr;  // trusts the key, cannot sign
  RemoteStore reader(o, warnings_.sink());
  ASSERT_EQ(server_.command({"SET", reader.lock_key(kDigest), "planted"}).text, "OK");
  const auto start = Clock::now();
  EXPECT_EQ(reader.begin(kDigest).role, FleetFlight::Role::kAlone);
  EXPECT_LT(Clock::now() - start, milliseconds(500)) << "waited on a lease that never ends";
  const auto fair_start = Clock::now();
  ASSERT_EQ(server_.command({"SET", reader.lock_key(digest(1)), "fair", "PX", "400"}).text, "OK");
  EXPECT_EQ(reader.begin(digest(1)).role, FleetFlight::Role::kAlone);  // no entry came: compiles alone
  EXPECT_GE(Clock::now() - fair_start, milliseconds(350)) << "did not wait for a fair lease";
}

TEST_F(RemoteLeaseTest, lease_longer_than_ours_is_replaced_and_a_fair_one_is_not) {
  RemoteStore store(producer(), warnings_.sink());
  const std::string hour = std::to_string(3'600'000);
  server_.command({"SET", store.lock_key(digest(1)), "an hour", "PX", hour});
  EXPECT_TRUE(store.try_lease(digest(1)).held());
  // A lease within our lifetime is another node's compile: not ours to take.
  server_.command({"SET", store.lock_key(digest(2)), "fair", "PX", std::to_string(store.options().lease.count())});
  EXPECT_FALSE(store.try_lease(digest(2)).held());
  EXPECT_EQ(server_.command({"GET", store.lock_key(digest(2))}).text, "fair");
  EXPECT_EQ(store.stats().leases_replaced, 1u);
}

TEST_F(RemoteLeaseTest, waits_of_one_store_are_bounded_in_total_not_per_kernel) {
  RemoteStore holder(producer(), warnings_.sink());
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) held.push_back(holder.try_lease(digest(i)));
  for (const Lease& lease : held) ASSERT_TRUE(lease.held());
  RemoteOptions o = producer();
  o.wait = milliseconds(400);
  o.wait_total = milliseconds(600);
  RemoteStore waiter(o, warnings_.sink());
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(waiter.begin(digest(i)).role, FleetFlight::Role::kAlone) << i;
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, o.wait_total);
  EXPECT_LE(elapsed, o.wait_total + milliseconds(400)) << "each kernel waited its own `wait`";
  EXPECT_EQ(waiter.stats().lease_timeouts, 3u);
}

TEST_F(RemoteLeaseTest, remote_options_bound_the_total_wait_at_three_waits) {
  const auto options = remote_options(
      [&](std::string_view name) -> std::optional<std::string> {
        if (name == "TROPICAL_REMOTE_CACHE") return server_.unix_url();
        if (name == "TROPICAL_REMOTE_UNSIGNED") return "1";
        if (name == "TROPICAL_REMOTE_WAIT") return "4s";
        return std::nullopt;
      },
      2, warnings_.sink());
  ASSERT_TRUE(options);
  EXPECT_EQ(options->wait_total, milliseconds(12'000));
}

}  // namespace
}  // namespace tropical::storage::remote
