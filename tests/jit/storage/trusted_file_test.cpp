// The one door for trusted files: what is read, and everything refused unread and without
// blocking: FIFOs, devices, links, huge or sparse files, files others can write, other users' files, private
// keys others can read.
#include "tropical/storage/trusted_file.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class TrustedFileTest : public LocalStoreTest {
 protected:
  fs::path file(const std::string& name, const std::string& text, mode_t mode) {
    const fs::path path = root_ / name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
};

// Reads path on another thread and waits at most 5 s; a reader still blocked then (the bug) is released by
// opening the FIFO for writing, so that the test fails instead of hanging.
TrustedRead read_bounded(const fs::path& path, const TrustRule& rule, bool* returned) {
  auto reading = std::async(std::launch::async, [&] { return read_trusted_file(path, rule); });
  *returned = reading.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!*returned) {
    const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer >= 0) ::close(writer);
  }
  return reading.get();
}

TEST_F(TrustedFileTest, own_file_is_read_whole) {
  const fs::path path = file("key.pub", "-----BEGIN PUBLIC KEY-----\n", 0644);
  const TrustedRead read = read_trusted_file(path);
  ASSERT_TRUE(read.bytes) << read.reason;
  EXPECT_EQ(*read.bytes, "-----BEGIN PUBLIC KEY-----\n");
  const fs::path empty = file("empty", "", 0600);
  EXPECT_EQ(read_trusted_file(empty).bytes, "");
}

TEST_F(TrustedFileTest, missing_file_is_missing_not_refused) {
  const TrustedRead read = read_trusted_file(root_ / "absent.pem");
  EXPECT_FALSE(read.bytes);
  EXPECT_TRUE(read.missing);
  EXPECT_TRUE(read_trusted_file(root_ / "absent" / "below.pem").missing);
}

TEST_F(TrustedFileTest, fifo_is_refused_at_once) {
  const fs::path fifo = root_ / "key.pem";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  bool returned = false;
  const auto start = std::chrono::steady_clock::now();
  const TrustedRead read = read_bounded(fifo, {}, &returned);
  EXPECT_TRUE(returned) << "blocked on the FIFO";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(read.bytes);
  EXPECT_FALSE(read.missing);
  EXPECT_NE(read.reason.find("FIFO"), std::string::npos) << read.reason;
}

TEST_F(TrustedFileTest, devices_are_refused_unread) {
  for (const char* device : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    const TrustedRead read = read_trusted_file(device);
    EXPECT_FALSE(read.bytes) << device;
    EXPECT_NE(read.reason.find("character device"), std::string::npos) << read.reason;
  }
}

TEST_F(TrustedFileTest, huge_sparse_file_is_refused_without_reading_it) {
  const fs::path big = file("big.pem", "", 0644);
  ASSERT_EQ(::truncate(big.c_str(), 8ll << 30), 0);
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const TrustedRead read = read_trusted_file(big);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_FALSE(read.bytes);
  EXPECT_NE(read.reason.find("larger than 65536 bytes"), std::string::npos) << read.reason;
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 << 10) << "KiB of peak RSS grown";
  // One byte over the cap is over.
  const fs::path over = file("over", std::string(100, 'x'), 0644);
  TrustRule small;
  small.max_bytes = 99;
  EXPECT_FALSE(read_trusted_file(over, small).bytes);
  small.max_bytes = 100;
  EXPECT_TRUE(read_trusted_file(over, small).bytes);
}

TEST_F(TrustedFileTest, symbolic_link_is_not_followed) {
  const fs::path target = file("target.pub", "key", 0644);
  fs::create_symlink(target, root_ / "link.pub");
  const TrustedRead read = read_trusted_file(root_ / "link.pub");
  EXPECT_FALSE(read.bytes);
  EXPECT_NE(read.reason.find("symbolic link"), std::string::npos) << read.reason;
}

TEST_F(TrustedFileTest, files_others_or_the_group_can_write_are_refused) {
  EXPECT_NE(read_trusted_file(file("a", "k", 0666)).reason.find("mode 0666: writable by others"), std::string::npos);
  EXPECT_NE(read_trusted_file(file("b", "k", 0664)).reason.find("writable by its group"), std::string::npos);
  // tropical.conf's team rule: the group may write the user's own file.
  TrustRule conf;
  conf.group_may_write_own = true;
  EXPECT_TRUE(read_trusted_file(file("c", "k", 0664), conf).bytes);
  EXPECT_FALSE(read_trusted_file(file("d", "k", 0666), conf).bytes);
}

TEST_F(TrustedFileTest, private_key_others_can_read_is_refused) {
  TrustRule secret;
  secret.secret = true;
  EXPECT_TRUE(read_trusted_file(file("p600", "k", 0600), secret).bytes);
  EXPECT_TRUE(read_trusted_file(file("p400", "k", 0400), secret).bytes);
  for (const mode_t mode : {0644, 0640, 0604}) {
    std::string name = "p";  // appended: GCC 12 warns falsely (-Wrestrict) on "p" + std::string&&
    name += std::to_string(mode);
    const TrustedRead read = read_trusted_file(file(name, "k", mode), secret);
    EXPECT_FALSE(read.bytes) << mode;
    EXPECT_NE(read.reason.find("chmod 600"), std::string::npos) << read.reason;
  }
}

TEST_F(TrustedFileTest, another_users_file_is_refused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const fs::path path = file("theirs.pub", "k", 0644);
  ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
  const TrustedRead read = read_trusted_file(path);
  EXPECT_FALSE(read.bytes);
  EXPECT_NE(read.reason.find("owned by uid 4242"), std::string::npos) << read.reason;
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
  EXPECT_TRUE(read_trusted_file(path).bytes) << "root's file is trusted";
}

TEST_F(TrustedFileTest, directory_is_refused) {
  const TrustedRead read = read_trusted_file(root_);
  EXPECT_FALSE(read.bytes);
  EXPECT_NE(read.reason.find("directory"), std::string::npos) << read.reason;
}

}  // namespace
}  // namespace tropical::storage
