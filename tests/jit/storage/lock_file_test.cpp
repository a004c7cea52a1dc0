// Lock files: created whole with their magic, never a planted FIFO, symlink
// or foreign file, and every wait bounded (a SIGSTOPped holder included).
#include "tropical/storage/lock_file.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class LockFileTest : public LocalStoreTest {
 protected:
  void SetUp() override {
    LocalStoreTest::SetUp();
    fs::create_directories(dir_);
    dir_fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_fd_.valid());
  }
  // A mutex of its own per test, as a directory's stripes have.
  std::mutex& mutex(std::size_t index = 0) {
    struct stat st {};
    EXPECT_EQ(::fstat(dir_fd_.get(), &st), 0);
    return process_lock_mutex(st.st_dev, st.st_ino, index);
  }
  static auto in(std::chrono::milliseconds ms) { return std::chrono::steady_clock::now() + ms; }
  Fd dir_fd_;
};

TEST_F(LockFileTest, lock_file_is_created_whole_with_its_magic_and_0600) {
  FileLock lock;
  ASSERT_EQ(lock.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)), LockResult::kLocked);
  EXPECT_TRUE(lock.locked());
  EXPECT_EQ(read_file(dir_ / "a.lock"), std::string(kLockFileMagic));
  EXPECT_EQ(mode_of(dir_ / "a.lock"), 0600u);
  lock.unlock();
  EXPECT_FALSE(lock.locked());
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_EQ(item.path().filename(), "a.lock");
  }
}

class BadLockFile : public LockFileTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(BadLockFile, is_refused_untouched_and_blamed_on_the_file) {
  const fs::path path = dir_ / "a.lock";
  write_file(dir_ / "target", "someone's file");
  if (GetParam() == "fifo") {
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  }
  if (GetParam() == "symlink") fs::create_symlink(dir_ / "target", path);
  if (GetParam() == "foreign") write_file(path, "not a lock file\n");
  if (GetParam() == "magic_and_more") write_file(path, std::string(kLockFileMagic) + "x");
  if (GetParam() == "directory") fs::create_directory(path);
  if (GetParam() == "readable_by_nobody") {
    write_file(path, std::string(kLockFileMagic));
    fs::permissions(path, fs::perms::none);
    if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  }
  const Untouched target(dir_ / "target");
  const auto start = std::chrono::steady_clock::now();
  FileLock lock;
  EXPECT_EQ(lock.lock(mutex(), dir_fd_.get(), "a.lock", in(5000ms)), LockResult::kUnusable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "refused at once, not after the bound";
  EXPECT_TRUE(lock.bad_file()) << lock.failure().reason();
  EXPECT_FALSE(lock.locked());
  EXPECT_TRUE(target.still());
  if (GetParam() == "foreign") {
    EXPECT_EQ(read_file(path), "not a lock file\n");
  }
  EXPECT_TRUE(fs::is_symlink(path) || fs::exists(path)) << "never removed";
}

INSTANTIATE_TEST_SUITE_P(Planted, BadLockFile,
                         ::testing::Values("fifo", "symlink", "foreign", "magic_and_more", "directory",
                                           "readable_by_nobody"));

TEST_F(LockFileTest, another_thread_holding_the_mutex_times_out_the_waiter_naming_this_process) {
  FileLock first;
  ASSERT_EQ(first.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)), LockResult::kLocked);
  std::thread other([&] {
    FileLock second;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(second.lock(mutex(), dir_fd_.get(), "a.lock", in(100ms)), LockResult::kTimedOut);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_EQ(second.holder(), ::getpid());
  });
  other.join();
}

TEST_F(LockFileTest, stopped_holder_makes_the_waiter_give_up_by_the_bound_and_names_its_pid) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  Child holder([&] {
    FileLock lock;
    if (lock.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)) != LockResult::kLocked) return 1;
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) return 2;
    ::raise(SIGSTOP);
    return 0;
  });
  ::close(ready[1]);
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);

  FileLock lock;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(lock.lock(mutex(), dir_fd_.get(), "a.lock", in(300ms)), LockResult::kTimedOut);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 3s);
  EXPECT_GT(lock.holder(), 0);
  EXPECT_NE(lock.holder(), ::getpid());
  const pid_t stopped = lock.holder();
  EXPECT_EQ(::kill(stopped, SIGKILL), 0);
  EXPECT_EQ(holder.wait().signal, SIGKILL);
  // The kernel released the dead holder's lock.
  EXPECT_EQ(lock.lock(mutex(), dir_fd_.get(), "a.lock", in(2000ms)), LockResult::kLocked);
}

TEST_F(LockFileTest, waiter_gets_the_lock_soon_after_the_holder_releases_it) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  Child holder([&] {
    FileLock lock;
    if (lock.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)) != LockResult::kLocked) return 1;
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) return 2;
    std::this_thread::sleep_for(200ms);
    return 0;
  });
  ::close(ready[1]);
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  FileLock lock;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(lock.lock(mutex(), dir_fd_.get(), "a.lock", in(10'000ms)), LockResult::kLocked);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(holder.wait().exit_code, 0);
}

TEST_F(LockFileTest, replaced_lock_file_is_locked_under_its_new_inode) {
  FileLock first;
  ASSERT_EQ(first.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)), LockResult::kLocked);
  first.unlock();
  struct stat old {};
  ASSERT_EQ(::stat((dir_ / "a.lock").c_str(), &old), 0);
  const ino_t before = old.st_ino;
  write_file(dir_ / "b", std::string(kLockFileMagic));
  fs::permissions(dir_ / "b", fs::perms::owner_read | fs::perms::owner_write);
  fs::rename(dir_ / "b", dir_ / "a.lock");
  FileLock again;
  ASSERT_EQ(again.lock(mutex(), dir_fd_.get(), "a.lock", in(1000ms)), LockResult::kLocked);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "a.lock").c_str(), &st), 0);
  EXPECT_NE(st.st_ino, before);
}

}  // namespace
}  // namespace tropical::storage
