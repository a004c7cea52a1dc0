// The fleet store inside the store walk: a remote hit is decoded and copied into the primary, a compile is
// published, a signed value that is not this key's entry is never loaded, and "machines" (threads, each
// with its own primary directory and its own store) cold on one key compile it once.
#include "tropical/storage/remote/fleet_store.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "tropical/storage/remote/key_files.hpp"
#include "tropical/storage/store_chain.hpp"
#include "warnings.hpp"

namespace tropical::storage::remote {
namespace {

using testing::RedisServer;
using testing::TempDir;
using testing::Warnings;

CacheKey make_key(int i) {
  return CacheKey{"tropical_backward_a_maxplus_f32", std::string(64, static_cast<char>('a' + i)), {"-arch=sm_90"}, 90,
                  "test-nvrtc"};
}

CompiledImage make_image(int i) {
  CompiledImage image;
  image.cubin.assign(50'000, static_cast<std::byte>(i));
  image.ptx = ".version 8.0 // " + std::to_string(i);
  return image;
}

class FleetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ready()) << server_.explain();
    ASSERT_TRUE(key_.has_value());
    ASSERT_FALSE(root_.path().empty());
  }
  RemoteOptions options(bool sign) const {
    RemoteOptions o;
    o.client.endpoint = server_.endpoint();
    o.format = kCacheFormatVersion;
    if (sign) o.signer = std::make_shared<const SigningKey>(*key_);
    o.trusted.add(key_->public_key());
    return o;
  }
  std::unique_ptr<LocalStore> primary(const std::string& name) const {
    CacheConfig config;
    config.dir = root_.path() / name;
    return std::make_unique<LocalStore>(config);
  }
  // One walk over a primary named name and store; *compiles counts the compile callbacks.
  CompiledImage walk(const std::string& name, FleetStore& store, int i, std::atomic<int>* compiles) {
    auto local = primary(name);
    std::array<Store*, 2> stores = {local.get(), &store};
    return walk_stores(stores, LogLevel::kOff, make_key(i), [&] {
      compiles->fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // long enough for the others to wait
      return make_image(i);
    });
  }

  RedisServer server_;
  TempDir root_;
  std::optional<SigningKey> key_ = SigningKey::generate();
  Warnings warnings_;
};

TEST_F(FleetStoreTest, compile_is_published_and_another_machine_reads_it_into_its_primary) {
  FleetStore producer(options(true), warnings_.sink());
  FleetStore reader(options(false), warnings_.sink());
  std::atomic<int> compiles{0};
  walk("a", producer, 1, &compiles);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(producer.remote().stats().published, 1u);
  const CompiledImage got = walk("b", reader, 1, &compiles);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(got.cubin, make_image(1).cubin);
  EXPECT_EQ(reader.remote().stats().hits, 1u);
  // Copied into b's primary, whole (PTX too): a lookup there needs no remote.
  const auto copied = primary("b")->load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value());
  EXPECT_EQ(copied->ptx, make_image(1).ptx);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

// The lease's own second look replaces the walk's look after the fleet flight, so a cold
// producer's walk makes as many calls as before the double check: lookup (first pass), lookup (under the
// primary's lock), lookup + SET NX + lookup (the flight), SET (publish), EVAL (release).
TEST_F(FleetStoreTest, cold_producer_walk_makes_seven_calls) {
  FleetStore producer(options(true), warnings_.sink());
  std::atomic<int> compiles{0};
  walk("a", producer, 1, &compiles);
  EXPECT_EQ(compiles, 1);
  const RemoteStats s = producer.remote().stats();
  EXPECT_EQ(s.round_trips, 7u);
  EXPECT_EQ(s.misses, 4u);
  EXPECT_EQ(s.published, 1u);
}

TEST_F(FleetStoreTest, signed_value_that_is_not_this_keys_entry_is_never_loaded) {
  FleetStore producer(options(true), warnings_.sink());
  // A trusted producer's bug: key 2's entry published under key 1's digest (the signature is valid).
  const auto other = encode_entry(make_key(2).serialize(), make_image(2));
  ASSERT_EQ(producer.remote().publish(make_key(1).digest(),
                                      std::string_view(reinterpret_cast<const char*>(other.data()), other.size())),
            PublishOutcome::kPublished);
  FleetStore reader(options(false), warnings_.sink());
  std::atomic<int> compiles{0};
  const CompiledImage got = walk("b", reader, 1, &compiles);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(got.cubin, make_image(1).cubin);
  EXPECT_GE(reader.undecodable(), 1u);  // once per look: the walk looks again under the primary's lock
  EXPECT_EQ(warnings_.count(), 1u) << warnings_.text();
}

TEST_F(FleetStoreTest, machines_cold_on_one_key_compile_it_once) {
  constexpr int kMachines = 6;
  std::vector<std::unique_ptr<FleetStore>> stores;
  for (int m = 0; m < kMachines; ++m) stores.push_back(std::make_unique<FleetStore>(options(true), warnings_.sink()));
  std::atomic<int> compiles{0};
  std::vector<std::thread> machines;
  for (int m = 0; m < kMachines; ++m) {
    machines.emplace_back([&, m] {
      std::string name = "m";  // appended: GCC 12 warns falsely (-Wrestrict) on "m" + std::string&&
      name += std::to_string(m);
      const CompiledImage got = walk(name, *stores[static_cast<std::size_t>(m)], 3, &compiles);
      EXPECT_EQ(got.cubin, make_image(3).cubin);
    });
  }
  for (auto& t : machines) t.join();
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

TEST_F(FleetStoreTest, made_from_settings_only_when_configured_and_the_cache_is_enabled) {
  CacheConfig config;
  config.dir = root_.path() / "c";
  const auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(make_fleet_store(config, none), nullptr);
  const std::string url = server_.endpoint().url();
  const auto unsigned_ok = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "TROPICAL_REMOTE_CACHE") return url;
    if (name == "TROPICAL_REMOTE_UNSIGNED") return "1";
    return std::nullopt;
  };
  const auto store = make_fleet_store(config, unsigned_ok);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->can_store());
  EXPECT_EQ(store->name(), "remote " + url);
  config.enabled = false;
  EXPECT_EQ(make_fleet_store(config, unsigned_ok), nullptr);
}

// A primary that records why each store was written.
class RecordingPrimary final : public Store {
 public:
  explicit RecordingPrimary(std::unique_ptr<LocalStore> local) : local_(std::move(local)) {}
  const std::string& name() const noexcept override { return local_->name(); }
  Lookup lookup(const StoreKey& key, ImageParts parts) override { return local_->lookup(key, parts); }
  bool can_store() const noexcept override { return local_->can_store(); }
  bool store(const StoreKey& key, const CompiledImage& image, StoreReason reason) override {
    reasons.push_back(reason);
    return local_->store(key, image, reason);
  }
  FlightResult single_flight(const StoreKey& key) override { return local_->single_flight(key); }
  void count_miss(bool bad) override { local_->count_miss(bad); }
  void count_compile(std::uint64_t ns) override { local_->count_compile(ns); }
  std::vector<StoreReason> reasons;

 private:
  std::unique_ptr<LocalStore> local_;
};

// The copy of a remote hit is a promotion: written without fsync (the remote keeps the original and every
// read is verified), so no disk flush sits on a fleet node's first use of a kernel.
TEST_F(FleetStoreTest, remote_hit_is_copied_into_the_primary_as_a_promotion) {
  FleetStore producer(options(true), warnings_.sink());
  std::atomic<int> compiles{0};
  walk("a", producer, 4, &compiles);
  FleetStore reader(options(false), warnings_.sink());
  RecordingPrimary recording(primary("b"));
  std::array<Store*, 2> stores = {&recording, &reader};
  bool compiled = true;
  const CompiledImage got = walk_stores(
      stores, LogLevel::kOff, make_key(4), [&] { return compiles.fetch_add(1), make_image(4); }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(got.cubin, make_image(4).cubin);
  ASSERT_EQ(recording.reasons.size(), 1u);
  EXPECT_EQ(recording.reasons[0], StoreReason::kPromoted);
  EXPECT_TRUE(primary("b")->load(make_key(4), ImageParts::kCubinAndPtx).has_value());
}

// `remote` and `remote_*` in the primary's tropical.conf make the fleet store as the variables do.
TEST_F(FleetStoreTest, stores_take_the_remote_from_tropical_conf_where_the_environment_is_silent) {
  for (const std::string_view name : kRemoteSettingNames) ::unsetenv(std::string(name).c_str());
  std::string error;
  const auto files = write_key_pair(root_.path() / "keys", &error);
  ASSERT_TRUE(files) << error;
  RemoteOptions signing = options(false);
  signing.signer = std::make_shared<const SigningKey>(*SigningKey::load(files->private_key.string(), &error));
  FleetStore producer(signing, warnings_.sink());
  std::atomic<int> compiles{0};
  walk("a", producer, 5, &compiles);

  CacheConfig config;
  config.dir = root_.path() / "conf-machine";
  config.prebuilt_layer = false;
  std::filesystem::create_directories(config.dir);
  config.file = ConfigFile::parse("remote = " + server_.endpoint().url() +
                                  "\nremote_trusted_keys = " + files->public_key.string() + "\n");
  {
    StoreChain stores(config);
    ASSERT_EQ(stores.list().size(), 2u);
    auto* remote = dynamic_cast<FleetStore*>(stores.list()[1]);
    ASSERT_NE(remote, nullptr);
    EXPECT_FALSE(remote->can_store());  // a reader: no signing key configured
    bool compiled = true;
    const CompiledImage got = stores.get_or_compile(
        make_key(5), [&] { return compiles.fetch_add(1), make_image(5); }, &compiled);
    EXPECT_FALSE(compiled);
    EXPECT_EQ(got.cubin, make_image(5).cubin);
    EXPECT_EQ(remote->remote().stats().hits, 1u);
  }
  // The environment wins, even set empty: no fleet store for this process. (The
  // stores below the primary are made on first need: list() while it is set.)
  ::setenv("TROPICAL_REMOTE_CACHE", "", 1);
  StoreChain without(config);
  EXPECT_EQ(without.list().size(), 1u);
  ::unsetenv("TROPICAL_REMOTE_CACHE");
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

}  // namespace
}  // namespace tropical::storage::remote
