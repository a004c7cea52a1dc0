#include "tropical/jit/storage/remote/remote_config.hpp"

#include <gtest/gtest.h>

#include <map>

#include "redis_server.hpp"
#include "tropical/jit/storage/remote/key_files.hpp"

namespace tropical::jit::remote {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

struct Settings {
  std::map<std::string, std::string, std::less<>> values;
  std::vector<std::string> warnings;

  std::optional<RemoteOptions> read() {
    return remote_options(
        [this](std::string_view name) -> std::optional<std::string> {
          const auto it = values.find(name);
          if (it == values.end()) return std::nullopt;
          return it->second;
        },
        7, [this](const std::string& line) { warnings.push_back(line); });
  }
};

class RemoteConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    keys_ = write_key_pair(tmp_.path() / "keys", &error);
    ASSERT_TRUE(keys_) << error;
  }
  TempDir tmp_;
  std::optional<KeyPairFiles> keys_;
};

TEST_F(RemoteConfig, unset_or_empty_url_is_off_without_a_word) {
  Settings s;
  EXPECT_FALSE(s.read());
  s.values["TROPICAL_REMOTE_CACHE"] = "";
  EXPECT_FALSE(s.read());
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(RemoteConfig, bad_url_is_one_warning_and_off) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "redis://nowhere";
  s.values["TROPICAL_REMOTE_UNSIGNED"] = "1";
  EXPECT_FALSE(s.read());
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("redis://nowhere"), std::string::npos);
  EXPECT_NE(s.warnings[0].find("remote cache off"), std::string::npos);
}

TEST_F(RemoteConfig, defaults_meet_the_bounds) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_TRUSTED_KEYS"] = keys_->public_key.string();
  const auto o = s.read();
  ASSERT_TRUE(o);
  EXPECT_TRUE(s.warnings.empty());
  EXPECT_LE(o->client.connect_timeout, milliseconds(250));
  EXPECT_LE(o->client.operation_timeout, milliseconds(1000));
  EXPECT_EQ(o->client.cooldown, milliseconds(60'000));
  EXPECT_EQ(o->ttl, std::chrono::hours(24 * 30));
  EXPECT_EQ(o->format, 7u);
  EXPECT_TRUE(o->may_read());
  EXPECT_FALSE(o->may_write());
}

TEST_F(RemoteConfig, durations_parse_and_bad_ones_keep_the_default) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("2"), milliseconds(2000));
  EXPECT_EQ(parse_duration("3m"), milliseconds(180'000));
  EXPECT_EQ(parse_duration("1H"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("30d"), milliseconds(30LL * 86'400'000));
  for (const char* bad : {"", "ms", "-1s", "1.5s", "1 s", "1w", "99999999999999s"}) EXPECT_FALSE(parse_duration(bad)) << bad;

  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "redis://127.0.0.1:1";
  s.values["TROPICAL_REMOTE_UNSIGNED"] = "yes";
  s.values["TROPICAL_REMOTE_TIMEOUT"] = "300ms";
  s.values["TROPICAL_REMOTE_CONNECT_TIMEOUT"] = "soon";
  s.values["TROPICAL_REMOTE_TTL"] = "2d";
  s.values["TROPICAL_REMOTE_LEASE"] = "1ms";
  const auto o = s.read();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->client.operation_timeout, milliseconds(300));
  EXPECT_EQ(o->client.connect_timeout, milliseconds(250));
  EXPECT_EQ(o->ttl, milliseconds(2 * 86'400'000));
  EXPECT_EQ(o->lease, milliseconds(20'000));
  EXPECT_EQ(s.warnings.size(), 2u);
}

TEST_F(RemoteConfig, signing_key_makes_a_writer_that_trusts_itself) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_SIGNING_KEY"] = keys_->private_key.string();
  const auto o = s.read();
  ASSERT_TRUE(o);
  EXPECT_TRUE(s.warnings.empty());
  ASSERT_NE(o->signer, nullptr);
  EXPECT_TRUE(o->may_write());
  EXPECT_NE(o->trusted.find(o->signer->public_key().raw()), nullptr);
  EXPECT_FALSE(o->allow_unsigned);
}

TEST_F(RemoteConfig, reader_without_keys_or_unsigned_opt_in_is_off) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_UNSIGNED"] = "0";
  EXPECT_FALSE(s.read());
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("remote cache off"), std::string::npos);
}

TEST_F(RemoteConfig, unreadable_keys_are_warned_about_and_left_out) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_SIGNING_KEY"] = (tmp_.path() / "missing.pem").string();
  s.values["TROPICAL_REMOTE_TRUSTED_KEYS"] = keys_->public_key.string() + ":" + keys_->private_key.string();
  const auto o = s.read();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->signer, nullptr);
  EXPECT_EQ(o->trusted.size(), 1u);
  EXPECT_EQ(s.warnings.size(), 2u);
}

}  // namespace
}  // namespace tropical::jit::remote
