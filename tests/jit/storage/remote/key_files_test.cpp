#include "tropical/storage/remote/key_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>

#include "redis_server.hpp"
#include "tropical/storage/remote/ed25519.hpp"

namespace tropical::storage::remote {
namespace {

using testing::TempDir;

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st{};
  stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(KeyFiles, writes_a_loadable_pair_private_0600) {
  TempDir tmp;
  std::string error;
  const auto files = write_key_pair(tmp.path() / "keys", &error);
  ASSERT_TRUE(files) << error;
  EXPECT_EQ(mode_of(tmp.path() / "keys"), 0700u);
  EXPECT_EQ(mode_of(files->private_key), 0600u);
  EXPECT_EQ(mode_of(files->public_key), 0644u);
  const auto key = SigningKey::load(files->private_key, &error);
  ASSERT_TRUE(key) << error;
  const auto pub = PublicKey::load(files->public_key, &error);
  ASSERT_TRUE(pub) << error;
  EXPECT_EQ(key->public_key().raw(), pub->raw());
  const auto signature = key->sign("m");
  ASSERT_TRUE(signature);
  EXPECT_TRUE(pub->verify("m", *signature));
}

TEST(KeyFiles, never_overwrites_an_existing_key) {
  TempDir tmp;
  std::string error;
  const auto first = write_key_pair(tmp.path(), &error);
  ASSERT_TRUE(first) << error;
  const std::string private_before = read(first->private_key);
  EXPECT_FALSE(write_key_pair(tmp.path(), &error));
  EXPECT_NE(error.find("never overwritten"), std::string::npos) << error;
  EXPECT_EQ(read(first->private_key), private_before);

  // Only the public file there: still refused, and nothing new is left behind.
  TempDir other;
  { std::ofstream(other.path() / kPublicKeyFile) << "mine"; }
  EXPECT_FALSE(write_key_pair(other.path(), &error));
  EXPECT_FALSE(std::filesystem::exists(other.path() / kPrivateKeyFile));
  EXPECT_EQ(read(other.path() / kPublicKeyFile), "mine");
}

TEST(KeyFiles, openssl_cli_keys_load_and_wrong_files_do_not) {
  TempDir tmp;
  const auto priv = tmp.path() / "k.pem";
  const auto pub = tmp.path() / "k.pub";
  const std::string command = "openssl genpkey -algorithm ed25519 -out " + priv.string() +
                              " 2>/dev/null && openssl pkey -in " + priv.string() + " -pubout -out " + pub.string() +
                              " 2>/dev/null";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "no openssl command";
  std::string error;
  const auto key = SigningKey::load(priv, &error);
  ASSERT_TRUE(key) << error;
  const auto public_key = PublicKey::load(pub, &error);
  ASSERT_TRUE(public_key) << error;
  EXPECT_EQ(key->public_key().raw(), public_key->raw());
  // A public key is not a private key and the other way round; a missing file is an error.
  EXPECT_FALSE(SigningKey::load(pub, &error));
  EXPECT_FALSE(PublicKey::load(priv, &error));
  EXPECT_FALSE(PublicKey::load(tmp.path() / "absent.pem", &error));
  EXPECT_NE(error.find("absent.pem"), std::string::npos);
}

TEST(KeyFiles, other_algorithms_are_refused) {
  TempDir tmp;
  const auto priv = tmp.path() / "ec.pem";
  const std::string command = "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + priv.string() +
                              " 2>/dev/null";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "no openssl command";
  std::string error;
  EXPECT_FALSE(SigningKey::load(priv, &error));
  EXPECT_NE(error.find("ed25519"), std::string::npos) << error;
}

TEST(KeyFiles, trusted_list_keeps_good_keys_and_reports_bad_ones) {
  TempDir tmp;
  std::string error;
  const auto a = write_key_pair(tmp.path() / "a", &error);
  const auto b = write_key_pair(tmp.path() / "b", &error);
  ASSERT_TRUE(a && b) << error;
  std::vector<std::string> errors;
  const TrustedKeys keys = TrustedKeys::load_list(
      a->public_key.string() + "::" + (tmp.path() / "nope.pem").string() + ":" + b->public_key.string() + ":" +
          a->public_key.string(),
      &errors);
  EXPECT_EQ(keys.size(), 2u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("nope.pem"), std::string::npos);
}

// Keygen into a directory others can write says no (they could replace the keys).
TEST(KeyFiles, keygen_refuses_a_directory_others_can_write) {
  TempDir tmp;
  const auto open_dir = tmp.path() / "open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  std::string error;
  EXPECT_FALSE(write_key_pair(open_dir, &error));
  EXPECT_NE(error.find("writable by others"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(open_dir / kPrivateKeyFile));
  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // sticky, as /tmp: nobody else can replace our files
  EXPECT_TRUE(write_key_pair(open_dir, &error)) << error;
}

// Key files come in through the one door (trusted_file.hpp).

TEST(KeyFiles, fifo_at_a_key_path_is_refused_at_once) {
  TempDir tmp;
  const auto fifo = tmp.path() / "trusted.pub.pem";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  std::string error;
  auto loading = std::async(std::launch::async, [&] { return PublicKey::load(fifo, &error).has_value(); });
  const bool returned = loading.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!returned) {  // release the blocked reader so that the test fails instead of hanging
    const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer >= 0) close(writer);
  }
  EXPECT_TRUE(returned) << "PublicKey::load blocked on a FIFO";
  EXPECT_FALSE(loading.get());
  EXPECT_NE(error.find("FIFO"), std::string::npos) << error;
  EXPECT_NE(error.find(fifo.string()), std::string::npos) << error;
}

TEST(KeyFiles, large_key_file_is_refused_before_it_is_read) {
  TempDir tmp;
  const auto big = tmp.path() / "big.pub.pem";
  { std::ofstream(big) << "-----BEGIN PUBLIC KEY-----\n"; }
  ASSERT_EQ(truncate(big.c_str(), 256 << 20), 0);  // sparse: costs no disk
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::string error;
  EXPECT_FALSE(PublicKey::load(big, &error));  // (/dev/zero is trusted_file_test's: a regression would eat memory)
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 << 10) << "KiB of peak RSS grown: the file was read";
}

TEST(KeyFiles, key_files_others_can_write_are_refused) {
  TempDir tmp;
  std::string error;
  const auto files = write_key_pair(tmp.path() / "keys", &error);
  ASSERT_TRUE(files) << error;
  ASSERT_EQ(chmod(files->public_key.c_str(), 0666), 0);
  EXPECT_FALSE(PublicKey::load(files->public_key, &error));
  EXPECT_NE(error.find("writable by others"), std::string::npos) << error;
  ASSERT_EQ(chmod(files->public_key.c_str(), 0664), 0);
  EXPECT_FALSE(PublicKey::load(files->public_key, &error));
  ASSERT_EQ(chmod(files->public_key.c_str(), 0444), 0);
  EXPECT_TRUE(PublicKey::load(files->public_key, &error)) << error;
  // A link planted under the configured name is not followed.
  std::filesystem::create_symlink(files->public_key, tmp.path() / "link.pub.pem");
  EXPECT_FALSE(PublicKey::load(tmp.path() / "link.pub.pem", &error));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
}

TEST(KeyFiles, private_key_others_can_read_is_refused_as_ssh_does) {
  TempDir tmp;
  std::string error;
  const auto files = write_key_pair(tmp.path() / "keys", &error);
  ASSERT_TRUE(files) << error;
  ASSERT_EQ(chmod(files->private_key.c_str(), 0644), 0);
  EXPECT_FALSE(SigningKey::load(files->private_key, &error));
  EXPECT_NE(error.find("chmod 600"), std::string::npos) << error;
  ASSERT_EQ(chmod(files->private_key.c_str(), 0400), 0);
  EXPECT_TRUE(SigningKey::load(files->private_key, &error)) << error;
}

}  // namespace
}  // namespace tropical::storage::remote
