// tropical.conf: parsing, unknown keys kept, atomic save, trust, and its place below the environment.
#include "tropical/jit/storage/config_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "test_support.hpp"
#include "tropical/jit/storage/config.hpp"

namespace tropical::jit {
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
  EXPECT_EQ(config.file.get("remote"), "redis://cache:6379");  // kept for the tier that knows it
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

}  // namespace
}  // namespace tropical::jit
