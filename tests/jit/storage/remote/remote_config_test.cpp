#include "tropical/storage/remote/remote_config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>

#include "redis_server.hpp"
#include "tropical/storage/remote/key_files.hpp"

namespace tropical::storage::remote {
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
    for (const std::string_view name : kRemoteSettingNames) ::unsetenv(std::string(name).c_str());
    std::string error;
    keys_ = write_key_pair(tmp_.path() / "keys", &error);
    ASSERT_TRUE(keys_) << error;
  }
  void TearDown() override {
    for (const std::string_view name : kRemoteSettingNames) ::unsetenv(std::string(name).c_str());
  }
  // remote_options() over the environment, then the file with text.
  std::optional<RemoteOptions> read_with_file(const std::string& text, std::vector<std::string>* warnings) {
    const auto sink = [warnings](const std::string& line) { warnings->push_back(line); };
    const SettingSources sources = environment_then_file(ConfigFile::parse(text), "/c/tropical.conf", sink);
    return remote_options(sources.get, 7, sink, sources.origin);
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

// What the environment says is echoed with its control characters shown as '?'.
TEST_F(RemoteConfig, warnings_echo_no_control_characters_of_urls_durations_or_key_paths) {
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "redis://\x1b[2Jnowhere";
  s.values["TROPICAL_REMOTE_UNSIGNED"] = "1";
  EXPECT_FALSE(s.read());
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_WAIT"] = "5\x07s";
  s.values["TROPICAL_REMOTE_SIGNING_KEY"] = (tmp_.path() / "no\x1b]0;t\x07.pem").string();
  s.values["TROPICAL_REMOTE_TRUSTED_KEYS"] = (tmp_.path() / "gone\x1b.pem").string();
  EXPECT_TRUE(s.read());
  ASSERT_EQ(s.warnings.size(), 4u);
  EXPECT_NE(s.warnings[0].find("redis://?[2Jnowhere"), std::string::npos) << s.warnings[0];
  for (const std::string& line : s.warnings) {
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    for (const char c : line.substr(0, line.size() - 1)) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << "control byte " << int(c) << " in " << line;
    }
  }
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

TEST_F(RemoteConfig, every_remote_setting_has_a_config_file_key_that_the_file_knows) {
  std::size_t remote_keys = 0;
  for (const std::string_view key : known_config_keys()) remote_keys += key.starts_with("remote") ? 1 : 0;
  EXPECT_EQ(remote_keys, kRemoteSettingNames.size());
  for (const std::string_view name : kRemoteSettingNames) {
    EXPECT_TRUE(is_known_config_key(config_key_of(name))) << name;
  }
  EXPECT_EQ(config_key_of("TROPICAL_REMOTE_CACHE"), "remote");
  EXPECT_EQ(config_key_of("TROPICAL_REMOTE_TRUSTED_KEYS"), "remote_trusted_keys");
  EXPECT_EQ(config_key_of("TROPICAL_CACHE_DIR"), "");
}

TEST_F(RemoteConfig, settings_from_the_file_apply_where_the_environment_is_silent) {
  std::vector<std::string> warnings;
  const auto o = read_with_file("remote = unix:///tmp/x.sock?db=2\nremote_trusted_keys = " +
                                    keys_->public_key.string() + "\nremote_timeout = 300ms\nremote_ttl = 2d\n",
                                &warnings);
  ASSERT_TRUE(o);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(o->client.endpoint.url(), "unix:///tmp/x.sock?db=2");
  EXPECT_EQ(o->client.operation_timeout, milliseconds(300));
  EXPECT_EQ(o->ttl, milliseconds(2 * 86'400'000));
  EXPECT_EQ(o->trusted.size(), 1u);
  EXPECT_FALSE(o->may_write());
}

TEST_F(RemoteConfig, the_environment_overrides_the_file_even_when_set_empty) {
  const std::string file = "remote = unix:///tmp/x.sock\nremote_unsigned = 1\nremote_timeout = 300ms\n";
  std::vector<std::string> warnings;
  ::setenv("TROPICAL_REMOTE_TIMEOUT", "400ms", 1);
  ::setenv("TROPICAL_REMOTE_CACHE", "redis://127.0.0.1:7000", 1);
  auto o = read_with_file(file, &warnings);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->client.operation_timeout, milliseconds(400));
  EXPECT_EQ(o->client.endpoint.url(), "redis://127.0.0.1:7000");
  EXPECT_TRUE(o->allow_unsigned);  // from the file: the environment does not set it
  // Set but empty: the remote the file configures is off for this process, without a word.
  ::setenv("TROPICAL_REMOTE_CACHE", "", 1);
  EXPECT_FALSE(read_with_file(file, &warnings));
  ::setenv("TROPICAL_REMOTE_CACHE", "unix:///tmp/x.sock", 1);
  ::setenv("TROPICAL_REMOTE_UNSIGNED", "0", 1);
  EXPECT_FALSE(read_with_file(file, &warnings));  // unsigned use turned off: no keys, so no remote
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("remote cache off"), std::string::npos);
}

TEST_F(RemoteConfig, warnings_name_the_file_and_key_a_bad_value_came_from) {
  std::vector<std::string> warnings;
  ::setenv("TROPICAL_REMOTE_LEASE", "forever", 1);
  const auto o = read_with_file("remote = unix:///tmp/x.sock\nremote_unsigned = yes\nremote_ttl = soon\n"
                                "remote_lease = 5s\n",
                                &warnings);
  ASSERT_TRUE(o);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("/c/tropical.conf: remote_ttl='soon'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("TROPICAL_REMOTE_LEASE='forever'"), std::string::npos) << warnings[1];
  EXPECT_EQ(o->lease, milliseconds(20'000));  // the bad environment value is not replaced by the file's
  warnings.clear();
  EXPECT_FALSE(read_with_file("remote = redis://nowhere\nremote_unsigned = 1\n", &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/c/tropical.conf: remote='redis://nowhere'"), std::string::npos) << warnings[0];
}

TEST_F(RemoteConfig, a_relative_key_path_in_the_file_is_left_out_with_a_warning) {
  std::vector<std::string> warnings;
  const auto o = read_with_file("remote = unix:///tmp/x.sock\nremote_trusted_keys = keys/pub.pem:" +
                                    keys_->public_key.string() + "\nremote_signing_key = private.pem\n",
                                &warnings);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->trusted.size(), 1u);
  EXPECT_EQ(o->signer, nullptr);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("'private.pem' is not an absolute path"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("'keys/pub.pem' is not an absolute path"), std::string::npos) << warnings[1];
}

TEST_F(RemoteConfig, setting_problem_accepts_what_remote_options_reads_and_names_the_rest) {
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_CACHE", "redis://10.0.0.1:6379/2"));
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_CACHE", ""));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_CACHE", "redis://nowhere"));
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_TTL", "30d"));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_TTL", "10ms"));  // below its bound of a second
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_TIMEOUT", "soon"));
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_UNSIGNED", "off"));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_UNSIGNED", "maybe"));
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_TRUSTED_KEYS", "/a.pem:/b.pem"));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_TRUSTED_KEYS", "/a.pem:b.pem"));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_SIGNING_KEY", "key.pem"));
  EXPECT_TRUE(setting_problem("TROPICAL_CACHE_DIR", "/x"));
}

// A value is one line of tropical.conf; a line break in it would set another key.
TEST_F(RemoteConfig, setting_problem_refuses_control_characters_and_climbing_key_paths) {
  for (const std::string_view name : kRemoteSettingNames) {
    for (const std::string value : {"/etc/k.pem\nremote_unsigned = 1", "/etc/k.pem\r", "/etc/\x1b[2Jk.pem", "1\n"}) {
      const auto problem = setting_problem(name, value);
      ASSERT_TRUE(problem) << name << " accepted a control character";
      EXPECT_NE(problem->find("control characters"), std::string::npos) << *problem;
    }
  }
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_TRUSTED_KEYS", "/etc/tropical/../../tmp/k.pem"));
  EXPECT_TRUE(setting_problem("TROPICAL_REMOTE_SIGNING_KEY", "/etc/.."));
  EXPECT_FALSE(setting_problem("TROPICAL_REMOTE_TRUSTED_KEYS", "/etc/tropical/..k.pem"));
}

// A key file others can write is refused with one warning naming the file; the node is off
// when it was the only key.
TEST_F(RemoteConfig, key_file_others_can_write_is_refused_with_a_warning_naming_it) {
  ASSERT_EQ(::chmod(keys_->public_key.c_str(), 0666), 0);
  Settings s;
  s.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  s.values["TROPICAL_REMOTE_TRUSTED_KEYS"] = keys_->public_key.string();
  EXPECT_FALSE(s.read());
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find(keys_->public_key.string() + ": mode 0666: writable by others"), std::string::npos)
      << s.warnings[0];
  ASSERT_EQ(::chmod(keys_->private_key.c_str(), 0644), 0);
  Settings w;
  w.values["TROPICAL_REMOTE_CACHE"] = "unix:///tmp/x.sock";
  w.values["TROPICAL_REMOTE_SIGNING_KEY"] = keys_->private_key.string();
  EXPECT_FALSE(w.read());
  ASSERT_FALSE(w.warnings.empty());
  EXPECT_NE(w.warnings[0].find("will not publish"), std::string::npos) << w.warnings[0];
}

}  // namespace
}  // namespace tropical::storage::remote
