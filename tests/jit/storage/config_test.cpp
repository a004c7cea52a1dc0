#include "tropical/storage/config.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using test::count_of;
namespace fs = std::filesystem;

class CacheConfigFromEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVariables[] = {
      "TROPICAL_CACHE_DIR",     "XDG_CACHE_HOME",        "HOME",        "TROPICAL_CACHE_MAX_SIZE",
      "TROPICAL_CACHE_DISABLE", "TROPICAL_LOCK_TIMEOUT", "TROPICAL_LOG"};
  void SetUp() override {
    for (const char* name : kVariables) {
      const char* value = std::getenv(name);
      saved_.emplace_back(value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
    ::setenv("HOME", "/home/someone", 1);
  }
  void TearDown() override {
    for (std::size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]) {
        ::setenv(kVariables[i], saved_[i]->c_str(), 1);
      } else {
        ::unsetenv(kVariables[i]);
      }
    }
  }
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(CacheConfigFromEnv, defaults_are_home_cache_one_gib_enabled) {
  const CacheConfig config = CacheConfig::from_env();
  EXPECT_EQ(config.dir, fs::path("/home/someone/.cache/tropical"));
  EXPECT_EQ(config.max_bytes, 1ull << 30);
  EXPECT_TRUE(config.enabled);
}

TEST_F(CacheConfigFromEnv, tropical_cache_dir_wins_over_xdg_and_home) {
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("TROPICAL_CACHE_DIR", "/explicit/dir", 1);
  EXPECT_EQ(CacheConfig::from_env().dir, fs::path("/explicit/dir"));
}

TEST_F(CacheConfigFromEnv, xdg_cache_home_wins_over_home) {
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(CacheConfig::from_env().dir, fs::path("/xdg/tropical"));
}

TEST_F(CacheConfigFromEnv, empty_or_relative_xdg_cache_home_is_ignored) {
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(CacheConfig::from_env().dir, fs::path("/home/someone/.cache/tropical"));
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);
  EXPECT_EQ(CacheConfig::from_env().dir, fs::path("/home/someone/.cache/tropical"));
}

TEST_F(CacheConfigFromEnv, relative_tropical_cache_dir_is_made_absolute) {
  ::setenv("TROPICAL_CACHE_DIR", "rel/cache", 1);
  EXPECT_EQ(CacheConfig::from_env().dir, fs::current_path() / "rel/cache");
}

TEST_F(CacheConfigFromEnv, sizes_take_k_m_g_t_suffixes_alone_or_with_b_or_ib_in_any_case) {
  const std::vector<std::pair<std::string, std::uint64_t>> cases = {
      {"0", 0},
      {"12345", 12345},
      {"18446744073709551615", ~std::uint64_t{0}},
      {"4K", 4096},
      {"4k", 4096},
      {"4KB", 4096},
      {"4kb", 4096},
      {"4KiB", 4096},
      {"4kib", 4096},
      {"4KIB", 4096},
      {"3M", 3ull << 20},
      {"3MB", 3ull << 20},
      {"3MiB", 3ull << 20},
      {"2G", 2ull << 30},
      {"2g", 2ull << 30},
      {"2GB", 2ull << 30},
      {"2Gb", 2ull << 30},
      {"2GiB", 2ull << 30},
      {"1T", 1ull << 40},
      {"1TB", 1ull << 40},
      {"1tib", 1ull << 40},
      {"17179869183G", 17179869183ull << 30},
  };
  ::testing::internal::CaptureStderr();
  for (const auto& [text, bytes] : cases) {
    ::setenv("TROPICAL_CACHE_MAX_SIZE", text.c_str(), 1);
    EXPECT_EQ(CacheConfig::from_env().max_bytes, bytes) << text;
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(CacheConfigFromEnv, malformed_size_warns_once_and_keeps_the_default) {
  // Once per value per process: a value warned about before (say, in an earlier
  // --gtest_repeat round) stays quiet.
  static std::set<std::string> warned;
  std::vector<std::pair<std::string, std::string>> cases;  // the value, as the warning shows it
  for (const char* text : {"lots", "abc", "10X", "-5", " 5", "5 ", "1.5G", "G", "KB", "5iB", "5KiBs", "5KBi",
                           "5kk", "5K B", "99999999999999999999", "17179869184G", "16777216TiB"}) {
    cases.emplace_back(text, text);
  }
  cases.emplace_back("1\x1b[2J\n", "1?[2J?");  // no control character reaches the terminal
  for (const auto& [text, shown] : cases) {
    ::setenv("TROPICAL_CACHE_MAX_SIZE", text.c_str(), 1);
    ::testing::internal::CaptureStderr();
    const CacheConfig first = CacheConfig::from_env();
    const CacheConfig second = CacheConfig::from_env();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(first.max_bytes, kDefaultCacheMaxBytes) << shown;
    EXPECT_EQ(second.max_bytes, kDefaultCacheMaxBytes) << shown;
    EXPECT_TRUE(first.enabled) << shown;
    if (!warned.insert(text).second) continue;
    EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << shown << "\n" << err;
    EXPECT_NE(err.find("TROPICAL_CACHE_MAX_SIZE='" + shown + "' is not a size"), std::string::npos) << err;
    EXPECT_NE(err.find("using the default 1G"), std::string::npos) << err;
  }
}

TEST_F(CacheConfigFromEnv, disable_variable_turns_the_disk_store_off) {
  for (const char* text : {"1", "true", "yes", "ON"}) {
    ::setenv("TROPICAL_CACHE_DISABLE", text, 1);
    EXPECT_FALSE(CacheConfig::from_env().enabled) << text;
  }
  for (const char* text : {"0", "", "false", "no", "off"}) {
    ::setenv("TROPICAL_CACHE_DISABLE", text, 1);
    EXPECT_TRUE(CacheConfig::from_env().enabled) << text;
  }
}

TEST_F(CacheConfigFromEnv, lock_timeout_takes_seconds_or_milliseconds_and_defaults_to_thirty_seconds) {
  EXPECT_EQ(CacheConfig::from_env().lock_timeout, std::chrono::seconds(30));
  const std::vector<std::pair<std::string, std::chrono::milliseconds>> cases = {
      {"0", std::chrono::milliseconds(0)}, {"5", std::chrono::seconds(5)},
      {"5s", std::chrono::seconds(5)},     {"250ms", std::chrono::milliseconds(250)},
      {"86400", std::chrono::hours(24)},
  };
  ::testing::internal::CaptureStderr();
  for (const auto& [text, duration] : cases) {
    ::setenv("TROPICAL_LOCK_TIMEOUT", text.c_str(), 1);
    EXPECT_EQ(CacheConfig::from_env().lock_timeout, duration) << text;
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(CacheConfigFromEnv, malformed_lock_timeout_warns_once_and_keeps_the_default) {
  for (const char* text : {"soon", "-1", "1.5", "5 s", "5m", "86401", "99999999999999999999ms", "5S"}) {
    ::setenv("TROPICAL_LOCK_TIMEOUT", text, 1);
    ::testing::internal::CaptureStderr();
    const CacheConfig first = CacheConfig::from_env();
    const CacheConfig second = CacheConfig::from_env();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(first.lock_timeout, kDefaultLockTimeout) << text;
    EXPECT_EQ(second.lock_timeout, kDefaultLockTimeout) << text;
    // Once per value per process (an earlier --gtest_repeat round may have warned already).
    static std::set<std::string> warned;
    if (!warned.insert(text).second) continue;
    EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << text << "\n" << err;
    EXPECT_NE(err.find("TROPICAL_LOCK_TIMEOUT='" + std::string(text) + "' is not a duration"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("using the default 30s"), std::string::npos) << err;
  }
}

TEST_F(CacheConfigFromEnv, tropical_log_turns_the_decision_log_on) {
  EXPECT_EQ(CacheConfig::from_env().log, LogLevel::kOff);
  ::setenv("TROPICAL_LOG", "info", 1);
  EXPECT_EQ(CacheConfig::from_env().log, LogLevel::kInfo);
  ::setenv("TROPICAL_LOG", "debug", 1);
  EXPECT_EQ(CacheConfig::from_env().log, LogLevel::kDebug);
  for (const char* off : {"", "0", "off", "verbose"}) {
    ::setenv("TROPICAL_LOG", off, 1);
    EXPECT_EQ(CacheConfig::from_env().log, LogLevel::kOff) << off;
  }
}

TEST(ParseSize, is_the_parser_the_configuration_file_shares) {
  EXPECT_EQ(parse_size("64MiB"), std::optional<std::uint64_t>(64ull << 20));
  EXPECT_EQ(parse_size("1g"), std::optional<std::uint64_t>(1ull << 30));
  EXPECT_FALSE(parse_size("").has_value());
  EXPECT_FALSE(parse_size("1.5G").has_value());
  EXPECT_FALSE(parse_size("18446744073709551616").has_value());
}

}  // namespace
}  // namespace tropical::storage
