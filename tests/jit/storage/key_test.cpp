#include "tropical/storage/key.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using test::make_key;

TEST(CacheKey, digest_is_hex_sha256_of_serialization) {
  const CacheKey key = make_key(1);
  EXPECT_EQ(key.digest(), Sha256::hex(Sha256::of(key.serialize())));
  EXPECT_EQ(key.digest().size(), 64u);
}

TEST(CacheKey, every_field_changes_the_digest) {
  const CacheKey base = make_key(1);
  std::vector<CacheKey> variants(6, base);
  variants[0].kernel_name += "x";
  variants[1].source_digest[0] = variants[1].source_digest[0] == 'a' ? 'b' : 'a';
  variants[2].options.push_back("-lineinfo");
  std::swap(variants[3].options[0], variants[3].options[1]);
  variants[4].arch = 100;
  variants[5].compiler = "libnvrtc.so.13.1.0";
  for (const auto& variant : variants) EXPECT_NE(variant.digest(), base.digest());
}

TEST(CacheKey, field_boundaries_are_unambiguous) {
  CacheKey a = make_key(1), b = make_key(1);
  a.options = {"ab", "c"};
  b.options = {"a", "bc"};
  EXPECT_NE(a.serialize(), b.serialize());
  a = b = make_key(1);
  a.kernel_name = "k";
  a.source_digest = "xy";
  b.kernel_name = "kx";
  b.source_digest = "y";
  EXPECT_NE(a.serialize(), b.serialize());
  a = b = make_key(1);
  a.options = {""};
  b.options = {};
  EXPECT_NE(a.serialize(), b.serialize());
}

TEST(CacheKey, serialization_is_deterministic) {
  EXPECT_EQ(make_key(3).serialize(), make_key(3).serialize());
}

TEST(CacheKey, parse_gives_back_every_field_and_the_version) {
  CacheKey key = make_key(4);
  key.options.push_back("");
  key.arch = -7;
  std::uint32_t version = 0;
  const auto parsed = CacheKey::parse(key.serialize(), &version);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(version, kCacheFormatVersion);
  EXPECT_EQ(parsed->serialize(), key.serialize());
  EXPECT_EQ(parsed->compiler, key.compiler);
  EXPECT_EQ(parsed->options, key.options);
  EXPECT_EQ(parsed->arch, -7);
}

TEST(CacheKey, parse_refuses_truncated_extended_and_foreign_bytes) {
  const std::string bytes = make_key(1).serialize();
  for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_FALSE(CacheKey::parse(bytes.substr(0, cut)).has_value()) << cut;
  }
  EXPECT_FALSE(CacheKey::parse(bytes + "x").has_value());
  EXPECT_FALSE(CacheKey::parse(std::string(bytes.size(), '\xff')).has_value());
  std::string future = bytes;
  future[8 + std::string_view("tropical.jit.CacheKey").size()] = static_cast<char>(kCacheFormatVersion + 1);
  EXPECT_FALSE(CacheKey::parse(future).has_value());
}

TEST(CacheKey, mismatch_names_the_most_telling_difference_first) {
  const CacheKey wanted = make_key(1);
  EXPECT_EQ(key_mismatch(wanted, kCacheFormatVersion, wanted), KeyMismatch::kNone);
  CacheKey stored = wanted;
  stored.options.push_back("-lineinfo");
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion, wanted), KeyMismatch::kOptions);
  stored.source_digest[0] = stored.source_digest[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion, wanted), KeyMismatch::kSource);
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion - 1, wanted), KeyMismatch::kFormat);
  EXPECT_EQ(key_mismatch(wanted, kCacheFormatVersion - 1, wanted), KeyMismatch::kFormat)
      << "the same fields in another format are another key";
  stored.compiler = "libnvrtc.so.13.0.48:108000000";
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion - 1, wanted), KeyMismatch::kCompiler);
  stored.arch = 80;
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion - 1, wanted), KeyMismatch::kArch);
  stored.kernel_name += "_quick";
  EXPECT_EQ(key_mismatch(stored, kCacheFormatVersion - 1, wanted), KeyMismatch::kKernel);
}

}  // namespace
}  // namespace tropical::storage
