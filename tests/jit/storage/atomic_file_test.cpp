// Atomic files: our own temporary names, whole-or-nothing commits, and a file
// size limit that gives EFBIG instead of SIGXFSZ (no signal is masked here).
#include "tropical/storage/atomic_file.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class AtomicFileTest : public LocalStoreTest {
 protected:
  void SetUp() override {
    LocalStoreTest::SetUp();
    fs::create_directories(dir_);
    dir_fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_fd_.valid());
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& item : fs::directory_iterator(dir_)) out.push_back(item.path().filename().string());
    return out;
  }
  Fd dir_fd_;
};

TEST(TempName, only_our_own_pattern_is_a_temporary_name) {
  EXPECT_TRUE(is_temp_name(".tropical-tmp.12.34.5"));
  for (const char* other :
       {"tmp.1.1.1", "tmp.XXXXXX", ".tropical-tmp.1.1", ".tropical-tmp.1.2.3.4", ".tropical-tmp.a.b.c",
        ".tropical-tmp..1.2", ".tropical-tmp.1.2.", "x.tropical-tmp.1.2.3", ".tropical-tmp.1.2.3 ",
        ".tropical-tmp.123456789012345678901.1.1"}) {
    EXPECT_FALSE(is_temp_name(other)) << other;
  }
}

TEST_F(AtomicFileTest, uncommitted_file_is_removed_and_the_final_name_never_appears) {
  {
    AtomicFile file(dir_fd_.get(), "final");
    ASSERT_FALSE(file.create());
    EXPECT_TRUE(is_temp_name(file.temp_name())) << file.temp_name();
    ASSERT_FALSE(file.write("abc", 3));
    EXPECT_EQ(names(), std::vector<std::string>{file.temp_name()});
  }
  EXPECT_TRUE(names().empty());
}

TEST_F(AtomicFileTest, commit_replaces_the_final_name_with_exactly_the_mode_asked) {
  write_file(dir_ / "final", "old");
  const mode_t old_umask = ::umask(0277);
  AtomicFile file(dir_fd_.get(), "final");
  ASSERT_FALSE(file.create(0600));
  ::umask(old_umask);
  ASSERT_FALSE(file.write("new", 3));
  ASSERT_FALSE(file.sync());
  ASSERT_FALSE(file.commit());
  EXPECT_EQ(read_file(dir_ / "final"), "new");
  EXPECT_EQ(mode_of(dir_ / "final"), 0600u);
  EXPECT_EQ(names(), std::vector<std::string>{"final"});
}

TEST_F(AtomicFileTest, commit_if_absent_leaves_an_existing_file_alone) {
  write_file(dir_ / "final", "someone's");
  const Untouched theirs(dir_ / "final");
  {
    AtomicFile file(dir_fd_.get(), "final");
    ASSERT_FALSE(file.create());
    ASSERT_FALSE(file.write("ours", 4));
    ASSERT_FALSE(file.sync());
    const auto failure = file.commit_if_absent();
    ASSERT_TRUE(failure.has_value());
    EXPECT_EQ(failure->error, EEXIST);
  }
  EXPECT_TRUE(theirs.still());
  EXPECT_EQ(names(), std::vector<std::string>{"final"});
  {
    AtomicFile file(dir_fd_.get(), "other");
    ASSERT_FALSE(file.create());
    ASSERT_FALSE(file.write("ours", 4));
    ASSERT_FALSE(file.sync());
    ASSERT_FALSE(file.commit_if_absent());
  }
  EXPECT_EQ(read_file(dir_ / "other"), "ours");
  EXPECT_EQ(names().size(), 2u) << "the temporary name is gone";
}

TEST_F(AtomicFileTest, file_size_limit_gives_efbig_not_a_signal_and_leaves_no_file) {
  Child child([&] {
    rlimit limit{100, 100};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    {
      AtomicFile file(dir_fd_.get(), "final");
      if (file.create()) return 11;
      const std::string big(4096, 'x');
      const auto failure = file.write(big.data(), big.size());
      if (!failure || failure->error != EFBIG) return 12;
    }
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    return sigismember(&pending, SIGXFSZ) ? 13 : 0;
  });
  const Outcome outcome = child.wait(20s);
  EXPECT_EQ(outcome.signal, 0) << "SIGXFSZ is 25";
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(names().empty());
}

TEST_F(AtomicFileTest, a_callers_own_blocked_and_pending_sigxfsz_stays_the_callers) {
  Child child([&] {
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, nullptr);
    ::raise(SIGXFSZ);
    rlimit limit{100, 100};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    AtomicFile file(dir_fd_.get(), "final");
    if (file.create()) return 11;
    const std::string big(4096, 'x');
    if (!file.write(big.data(), big.size())) return 12;
    sigset_t now;
    sigemptyset(&now);
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    if (!sigismember(&now, SIGXFSZ)) return 13;
    sigemptyset(&now);
    sigpending(&now);
    return sigismember(&now, SIGXFSZ) ? 0 : 14;
  });
  const Outcome outcome = child.wait(20s);
  EXPECT_EQ(outcome.signal, 0);
  EXPECT_EQ(outcome.exit_code, 0);
}

}  // namespace
}  // namespace tropical::storage
