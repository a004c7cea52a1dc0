// The local directory store degrading with one warning and never failing the caller: unusable paths,
// file-size limits, full disks, removed directories, a disabled cache.
#include "tropical/storage/local_store.hpp"

#include <gtest/gtest.h>


#include "test_support.hpp"
#include "tropical/storage/atomic_file.hpp"

namespace tropical::storage {
namespace {

using namespace test;

// ---------------------------------------------------------------------------
// Degrading.

TEST_F(LocalStoreTest, cache_path_that_is_a_file_degrades_with_one_warning) {
  write_file(dir_, "not a directory");
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  int calls = 0;
  const auto compile = [&] {
    ++calls;
    return make_image(1);
  };
  const auto first = cache.get_or_compile(make_key(1), compile);
  const auto second = cache.get_or_compile(make_key(1), compile);
  const bool loaded = cache.load(make_key(1)).has_value();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(first, make_image(1)));
  EXPECT_TRUE(same(second, make_image(1)));
  EXPECT_FALSE(loaded);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.info().enabled);
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find("disk cache " + dir_.string() + " unusable"), std::string::npos) << err;
  EXPECT_NE(err.find("continuing without it"), std::string::npos) << err;
  EXPECT_EQ(cache.machine_stats().compiles, 0u);
  EXPECT_EQ(cache.process_stats().compiles, 2u);
  EXPECT_EQ(read_file(dir_), "not a directory");
}

TEST_F(LocalStoreTest, path_below_a_file_degrades_with_one_warning) {
  write_file(root_ / "file", "x");
  dir_ = root_ / "file" / "cache";
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  const auto image = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(image, make_image(1)));
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
}

TEST_F(LocalStoreTest, file_size_limit_degrades_with_one_warning) {
  Child child(
      [&] {
        LocalStore cache(config());
        rlimit limit{1000, 1000};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
        for (int i = 0; i < 3; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i, 8192); }, &compiled);
          if (!compiled || !same(image, make_image(i, 8192))) return 20 + i;
        }
        if (cache.process_stats().errors != 3) return 30;
        // The signal was neither left blocked nor pending, nor its disposition changed.
        sigset_t now;
        sigemptyset(&now);
        pthread_sigmask(SIG_BLOCK, nullptr, &now);
        if (sigismember(&now, SIGXFSZ)) return 40;
        sigemptyset(&now);
        sigpending(&now);
        if (sigismember(&now, SIGXFSZ)) return 41;
        struct sigaction action {};
        sigaction(SIGXFSZ, nullptr, &action);
        return action.sa_handler == SIG_DFL ? 0 : 42;
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  EXPECT_EQ(outcome.signal, 0) << "killed by a signal (SIGXFSZ is 25)\n" << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 1) << outcome.err;
  EXPECT_NE(outcome.err.find("File too large"), std::string::npos) << outcome.err;

  LocalStore cache(config());
  EXPECT_FALSE(cache.load(make_key(0)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 0u) << "no partial entry was left under an entry name";
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(item.path().filename().string().starts_with(kTempPrefix)) << item.path();
  }
}

TEST_F(LocalStoreTest, cache_that_cannot_store_still_serves_existing_entries_with_one_warning) {
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  fs::remove_all(dir_ / "locks");
  write_file(dir_ / "locks", "not a directory");
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  bool compiled = true;
  const auto old_image = cache.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  const bool old_compiled = compiled;
  const auto new_image = cache.get_or_compile(
      make_key(2), [] { return make_image(2); }, &compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(old_compiled);
  EXPECT_TRUE(same(old_image, cubin_only(make_image(1))));
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(new_image, make_image(2)));
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find("cannot store entries"), std::string::npos) << err;
}

TEST_F(LocalStoreTest, directory_removed_while_in_use_degrades_with_one_warning) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  fs::remove_all(dir_);
  ::testing::internal::CaptureStderr();
  for (int i = 2; i < 5; ++i) {
    EXPECT_TRUE(same(cache.get_or_compile(make_key(i), [&] { return make_image(i); }), make_image(i)));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.process_stats().compiles, 4u);
}

TEST_F(LocalStoreTest, full_disk_degrades_without_a_signal_and_still_compiles) {
  const fs::path small = root_ / "small";
  fs::create_directory(small);
  dir_ = small / "cache";
  Child child(
      [&] {
        if (const std::string why = mount_private_tmpfs(small, "64k"); !why.empty()) {
          std::fprintf(stderr, "cannot mount a small tmpfs (%s)\n", why.c_str());
          return kChildCannotSetUp;
        }
        // The directory is there before the disk fills up; the statistics file and the entries are not.
        if (::mkdir(dir_.c_str(), 0700) != 0 || !fill_up(small / "filler")) return 10;
        LocalStore cache(config());
        for (int i = 0; i < 3; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i); }, &compiled);
          if (!compiled || !same(image, make_image(i))) return 20 + i;
        }
        if (cache.process_stats().compiles != 3 || cache.machine_stats().compiles != 0) return 30;
        return cache.enabled() ? 0 : 31;  // space may come back: a full disk does not switch the cache off
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  if (outcome.exit_code == kChildCannotSetUp) GTEST_SKIP() << outcome.err;
  EXPECT_EQ(outcome.signal, 0) << "killed by a signal (SIGBUS is 7)\n" << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "has no machine-wide statistics"), 1) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "cannot store an entry"), 1) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 2) << outcome.err;
  EXPECT_NE(outcome.err.find("No space left on device"), std::string::npos) << outcome.err;
}

TEST_F(LocalStoreTest, failed_directory_sync_after_the_rename_still_stores_and_evicts_without_warning) {
  const std::uint64_t size = entry_size();
  Child child(
      [&] {
        LocalStore cache(config(2 * size + size / 2));
        const int dir_fd = descriptor_of(dir_);
        if (dir_fd < 0) return 10;
        if (!make_fsync_fail(dir_fd)) {
          std::fprintf(stderr, "cannot install a seccomp filter (%s)\n", std::strerror(errno));
          return kChildCannotSetUp;
        }
        if (::fsync(dir_fd) == 0 || errno != EIO) return 11;
        for (int i = 0; i < 5; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i); }, &compiled);
          if (!compiled || !same(image, make_image(i))) return 20 + i;
        }
        const CacheStats stats = cache.process_stats();
        if (stats.evictions != 3) return 30;
        if (stats.errors != 5) return 31;  // each failed sync is counted
        return cache.enabled() ? 0 : 32;
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  if (outcome.exit_code == kChildCannotSetUp) GTEST_SKIP() << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 0) << outcome.err;

  LocalStore cache(config());
  EXPECT_EQ(cache.info().entries, 2u);
  EXPECT_TRUE(cache.load(make_key(3)).has_value());
  EXPECT_TRUE(cache.load(make_key(4)).has_value());
}

TEST_F(LocalStoreTest, each_kind_of_problem_warns_once_and_none_hides_another) {
  const auto plant_foreign_statistics = [&] {
    fs::create_directories(dir_);
    write_file(dir_ / StatsFile::kName, std::string(4096, '\x7f'));
    fs::permissions(dir_ / StatsFile::kName, fs::perms::owner_read | fs::perms::owner_write);
  };
  plant_foreign_statistics();
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  fs::remove_all(dir_);
  for (int i = 2; i < 5; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  plant_foreign_statistics();
  LocalStore again(config());
  again.get_or_compile(make_key(5), [] { return make_image(5); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "has no machine-wide statistics"), 1) << err;
  EXPECT_EQ(count_of(err, "cannot store entries"), 1) << err;
  EXPECT_EQ(count_of(err, "tropical: warning:"), 2) << err;
  EXPECT_FALSE(cache.enabled());
  EXPECT_TRUE(again.enabled());
  EXPECT_TRUE(again.load(make_key(5)).has_value());
}

TEST_F(LocalStoreTest, disabled_cache_never_touches_the_disk) {
  CacheConfig c = config();
  c.enabled = false;
  LocalStore cache(c);
  int calls = 0;
  bool compiled = false;
  for (int i = 0; i < 2; ++i) {
    const auto image = cache.get_or_compile(
        make_key(1),
        [&] {
          ++calls;
          return make_image(1);
        },
        &compiled);
    EXPECT_TRUE(same(image, make_image(1)));
    EXPECT_TRUE(compiled);
  }
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.clear(), 0u);
  const CacheInfo info = cache.info();
  EXPECT_FALSE(info.enabled);
  EXPECT_EQ(info.entries, 0u);
  EXPECT_EQ(cache.machine_stats().hits + cache.machine_stats().compiles, 0u);
  EXPECT_EQ(cache.process_stats().compiles, 2u);
  EXPECT_FALSE(fs::exists(dir_));
}

// A directory planted under an entry's name is named in the warning and left alone.
TEST_F(LocalStoreTest, directory_planted_under_an_entry_name_is_named_and_left_alone) {
  LocalStore cache(config());
  ASSERT_TRUE(cache.enabled());
  const fs::path planted = cache.entry_path(make_key(1));
  ASSERT_TRUE(fs::create_directory(planted));
  ::testing::internal::CaptureStderr();
  bool compiled = false;
  const auto image = cache.get_or_compile(make_key(1), [] { return make_image(1); }, &compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(image, make_image(1)));
  EXPECT_NE(err.find(planted.filename().string() + ": a directory someone made"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_directory(planted));
}

}  // namespace
}  // namespace tropical::storage
