#include "tropical/jit/storage/remote/key_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "redis_server.hpp"
#include "tropical/jit/storage/remote/ed25519.hpp"

namespace tropical::jit::remote {
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

}  // namespace
}  // namespace tropical::jit::remote
