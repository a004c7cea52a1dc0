// The fleet tier inside the tier walk: a remote hit is decoded and copied into the primary, a compile is
// published, a signed value that is not this key's entry is never loaded, and "machines" (threads, each
// with its own primary directory and its own tier) cold on one key compile it once.
#include "tropical/jit/storage/remote/remote_tier.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "redis_server.hpp"
#include "tropical/jit/storage/tiers.hpp"
#include "warnings.hpp"

namespace tropical::jit::remote {
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

class RemoteTierTest : public ::testing::Test {
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
  // One walk over a primary named name and tier; *compiles counts the compile callbacks.
  CompiledImage walk(const std::string& name, RemoteTier& tier, int i, std::atomic<int>* compiles) {
    auto local = primary(name);
    std::array<Store*, 2> tiers = {local.get(), &tier};
    return walk_tiers(tiers, LogLevel::kOff, make_key(i), [&] {
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

TEST_F(RemoteTierTest, compile_is_published_and_another_machine_reads_it_into_its_primary) {
  RemoteTier producer(options(true), warnings_.sink());
  RemoteTier reader(options(false), warnings_.sink());
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

TEST_F(RemoteTierTest, signed_value_that_is_not_this_keys_entry_is_never_loaded) {
  RemoteTier producer(options(true), warnings_.sink());
  // A trusted producer's bug: key 2's entry published under key 1's digest (the signature is valid).
  const auto other = encode_entry(make_key(2).serialize(), make_image(2));
  ASSERT_EQ(producer.remote().publish(make_key(1).digest(),
                                      std::string_view(reinterpret_cast<const char*>(other.data()), other.size())),
            PublishOutcome::kPublished);
  RemoteTier reader(options(false), warnings_.sink());
  std::atomic<int> compiles{0};
  const CompiledImage got = walk("b", reader, 1, &compiles);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(got.cubin, make_image(1).cubin);
  EXPECT_GE(reader.undecodable(), 1u);  // once per look: the walk looks again under the primary's lock
  EXPECT_EQ(warnings_.count(), 1u) << warnings_.text();
}

TEST_F(RemoteTierTest, machines_cold_on_one_key_compile_it_once) {
  constexpr int kMachines = 6;
  std::vector<std::unique_ptr<RemoteTier>> tiers;
  for (int m = 0; m < kMachines; ++m) tiers.push_back(std::make_unique<RemoteTier>(options(true), warnings_.sink()));
  std::atomic<int> compiles{0};
  std::vector<std::thread> machines;
  for (int m = 0; m < kMachines; ++m) {
    machines.emplace_back([&, m] {
      std::string name = "m";  // appended: GCC 12 warns falsely (-Wrestrict) on "m" + std::string&&
      name += std::to_string(m);
      const CompiledImage got = walk(name, *tiers[static_cast<std::size_t>(m)], 3, &compiles);
      EXPECT_EQ(got.cubin, make_image(3).cubin);
    });
  }
  for (auto& t : machines) t.join();
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(warnings_.count(), 0u) << warnings_.text();
}

TEST_F(RemoteTierTest, made_from_settings_only_when_configured_and_the_cache_is_enabled) {
  CacheConfig config;
  config.dir = root_.path() / "c";
  const auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(make_remote_tier(config, none), nullptr);
  const std::string url = server_.endpoint().url();
  const auto unsigned_ok = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "TROPICAL_REMOTE_CACHE") return url;
    if (name == "TROPICAL_REMOTE_UNSIGNED") return "1";
    return std::nullopt;
  };
  const auto tier = make_remote_tier(config, unsigned_ok);
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(tier->can_store());
  EXPECT_EQ(tier->name(), "remote " + url);
  config.enabled = false;
  EXPECT_EQ(make_remote_tier(config, unsigned_ok), nullptr);
}

}  // namespace
}  // namespace tropical::jit::remote
