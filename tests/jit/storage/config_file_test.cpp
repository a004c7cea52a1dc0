// tropical.conf: parsing, unknown keys kept, atomic save, trust, and its place below the environment.
#include "tropical/storage/config_file.hpp"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "tropical/storage/config.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class ConfigFileTest : public LocalStoreTest {
 protected:
  void SetUp() override {
    LocalStoreTest::SetUp();
    fs::create_directory(dir_);
    for (const char* name : {"TROPICAL_CACHE_MAX_SIZE", "TROPICAL_CACHE_LAYERS"}) ::unsetenv(name);
    ::setenv("TROPICAL_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("TROPICAL_CACHE_DIR");
    LocalStoreTest::TearDown();
  }
  void write(const std::string& text) { std::ofstream(dir_ / kConfigFileName) << text; }
};

TEST_F(ConfigFileTest, parses_keys_values_comments_and_keeps_unknown_keys) {
  const ConfigFile file =
      ConfigFile::parse("# c\n\n max_size =  10M \nlayers=/a:/b\nremote = redis://x\nnot a line\n");
  EXPECT_EQ(file.get("max_size"), "10M");
  EXPECT_EQ(file.get("layers"), "/a:/b");
  EXPECT_EQ(file.get("remote"), "redis://x");
  EXPECT_EQ(file.values().size(), 3u);
  EXPECT_TRUE(is_known_config_key("max_size"));
  EXPECT_FALSE(is_known_config_key("colour"));
}

TEST_F(ConfigFileTest, save_then_load_round_trips_and_replaces_the_file_whole) {
  ConfigFile file;
  file.set("max_size", "1G");
  file.set("future_key", "kept");
  ASSERT_FALSE(file.save(dir_));
  EXPECT_EQ(ConfigFile::load(dir_).values(), file.values());
  file.set("max_size", std::nullopt);
  ASSERT_FALSE(file.save(dir_));
  EXPECT_FALSE(conf_value(dir_, "max_size"));
  EXPECT_EQ(conf_value(dir_, "future_key"), "kept");
  EXPECT_EQ(fs::status(dir_ / kConfigFileName).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

TEST_F(ConfigFileTest, file_writable_by_others_is_ignored) {
  write("max_size = 5M\n");
  ::chmod((dir_ / kConfigFileName).c_str(), 0666);
  EXPECT_FALSE(conf_value(dir_, "max_size"));
}

TEST_F(ConfigFileTest, from_env_takes_the_file_below_the_environment) {
  write("max_size = 10M\nlayers = /opt/one:relative:/opt/two\nremote = redis://cache:6379\n");
  CacheConfig config = CacheConfig::from_env();
  EXPECT_EQ(config.file.get("remote"), "redis://cache:6379");  // kept for the store that knows it
  EXPECT_EQ(config.max_bytes, 10u << 20);
  EXPECT_EQ(config.layers, (std::vector<fs::path>{"/opt/one", "/opt/two"}));
  ::setenv("TROPICAL_CACHE_MAX_SIZE", "20M", 1);
  ::setenv("TROPICAL_CACHE_LAYERS", "", 1);
  config = CacheConfig::from_env();
  EXPECT_EQ(config.max_bytes, 20u << 20);
  EXPECT_TRUE(config.layers.empty());
  ASSERT_TRUE(config.fallback_dir);
  EXPECT_NE(config.fallback_dir->filename().string().find("tropical-"), std::string::npos);
}

// 20 writers of 10 keys at once; every key survives (read-modify-write under the lock).
TEST_F(ConfigFileTest, concurrent_updates_of_different_keys_all_survive) {
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int i = 0; i < 20; ++i) {
    writers.emplace_back([&, i] {
      const std::string key = "future_key_" + std::to_string(i % 10);
      if (ConfigFile::update(dir_, key, std::to_string(i))) ++failed;
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(failed.load(), 0);
  const ConfigFile file = ConfigFile::load(dir_);
  EXPECT_EQ(file.values().size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_TRUE(file.get("future_key_" + std::to_string(k))) << k;
}

TEST_F(ConfigFileTest, update_waits_for_the_lock_no_longer_than_asked) {
  const int held = ::open((dir_ / kConfigLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  const auto start = std::chrono::steady_clock::now();
  const auto failure = ConfigFile::update(dir_, "max_size", "1G", std::chrono::milliseconds(200));
  const auto waited = std::chrono::steady_clock::now() - start;
  ::close(held);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, EWOULDBLOCK);
  EXPECT_LT(waited, std::chrono::seconds(2));
  EXPECT_FALSE(ConfigFile::update(dir_, "max_size", "1G"));
  EXPECT_EQ(conf_value(dir_, "max_size"), "1G");
}

// A file of 500 bad lines is three warnings and a count, not 500 warnings.
TEST_F(ConfigFileTest, bad_lines_are_warned_about_a_few_times_then_counted) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "not a setting " + std::to_string(i) + "\n";
  ::testing::internal::CaptureStderr();
  (void)ConfigFile::parse(text + "max_size = 1G\n", "/c/five-hundred.conf");
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t lines = 0;
  for (const char c : err) lines += c == '\n';
  EXPECT_EQ(lines, 4u) << err;
  EXPECT_NE(err.find("and 497 more lines"), std::string::npos) << err;
}

// `tropical config` refuses control characters; a hand-edited value holding one
// (an escape sequence, a stray byte) is not a setting either, and its warning shows none of them.
TEST_F(ConfigFileTest, values_holding_control_characters_are_ignored_with_a_printable_warning) {
  ::testing::internal::CaptureStderr();
  const ConfigFile file = ConfigFile::parse(
      "remote_trusted_keys = /etc/k.pem\x1b[2J\nlayers = /opt/a\x07\nmax_size = 1G\n", "/c/edited.conf");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(file.get("remote_trusted_keys"));
  EXPECT_FALSE(file.get("layers"));
  EXPECT_EQ(file.get("max_size"), "1G");
  EXPECT_NE(err.find("line 1: the value of 'remote_trusted_keys' holds control characters"), std::string::npos)
      << err;
  EXPECT_NE(err.find("line 2:"), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_EQ(err.find('\x07'), std::string::npos) << err;
}

// A refused file is not replaced by an update: its settings are not lost behind the user's back.
TEST_F(ConfigFileTest, update_leaves_a_refused_file_as_it_is_and_fails) {
  write("max_size = 5M\nlayers = /opt/a\n");
  const fs::path path = dir_ / kConfigFileName;
  ::chmod(path.c_str(), 0666);
  ::testing::internal::CaptureStderr();
  const auto failure = ConfigFile::update(dir_, "remote", "redis://127.0.0.1:6379");
  (void)::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(failure);
  EXPECT_NE(failure->reason().find("fix or remove it"), std::string::npos) << failure->reason();
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms(0666));
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "max_size = 5M\nlayers = /opt/a\n");
  // Once its owner fixes the mode, the update keeps what the file held.
  ::chmod(path.c_str(), 0644);
  EXPECT_FALSE(ConfigFile::update(dir_, "remote", "redis://127.0.0.1:6379"));
  EXPECT_EQ(conf_value(dir_, "max_size"), "5M");
  EXPECT_EQ(conf_value(dir_, "remote"), "redis://127.0.0.1:6379");
}

// Nor is a file whose lines parse() skips: rewriting it would delete them.
TEST_F(ConfigFileTest, update_leaves_a_file_with_lines_it_cannot_keep_as_it_is_and_fails) {
  const std::string text = "max_size = 5M\nnot a setting\nlayers = /opt/a\x1b[2J\n";
  write(text);
  ::testing::internal::CaptureStderr();
  const auto failure = ConfigFile::update(dir_, "remote", "redis://127.0.0.1:6379");
  (void)::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(failure);
  EXPECT_NE(failure->reason().find("2 lines that are not settings"), std::string::npos) << failure->reason();
  std::ifstream in(dir_ / kConfigFileName);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), text);
}

// The file tropical.conf comes in by the same door as the key files.
TEST_F(ConfigFileTest, fifo_or_link_under_the_name_is_ignored_at_once) {
  ASSERT_EQ(::mkfifo((dir_ / kConfigFileName).c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ConfigFile::load(dir_).values().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  fs::remove(dir_ / kConfigFileName);
  std::ofstream(root_ / "elsewhere.conf") << "max_size = 5M\n";
  fs::create_symlink(root_ / "elsewhere.conf", dir_ / kConfigFileName);
  EXPECT_FALSE(conf_value(dir_, "max_size"));
}

}  // namespace
}  // namespace tropical::storage
