// The local directory store against damaged entries (every kind of damage, old formats, another
// key under the name) and its file-security rules (modes, symlinks, owners, FIFOs).
#include "tropical/storage/local_store.hpp"

#include <gtest/gtest.h>


#include "test_support.hpp"
#include "tropical/storage/checksum.hpp"

namespace tropical::storage {
namespace {

using namespace test;

// ---------------------------------------------------------------------------
// Damaged entries.

enum class Damage {
  kTruncatedByOneByte,
  kTruncatedInPtx,
  kTruncatedToHeader,
  kFlippedCubinByte,
  kFlippedPtxByte,
  kFlippedKeyByte,
  kFlippedChecksumByte,
  kFlippedPtxChecksumByte,
  kFlippedSizeField,
  kOtherFormatVersion,
  kZeroLength,
  kForeignFile,
  kAppendedByte,
};

// Offsets of the entry layout: version at 8, key size at 16, cubin size at 24, ptx size at 32,
// PTX checksum at 40, main checksum (header before it + key + cubin) at 56, key at 72.
constexpr std::size_t kPtxChecksumAt = 40;
constexpr std::size_t kChecksumAt = 56;
constexpr std::size_t kKeyAt = 72;
static_assert(kPtxChecksumAt == kEntryPtxChecksumOffset && kChecksumAt == kEntryChecksumOffset &&
              kKeyAt == kEntryHeaderSize);

std::uint64_t u64_at(const std::string& bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void damage(const fs::path& path, Damage kind) {
  std::string bytes = read_file(path);
  ASSERT_GT(bytes.size(), 200u);
  const std::uint64_t ptx_size = u64_at(bytes, 32);
  ASSERT_GT(ptx_size, 4u);
  switch (kind) {
    case Damage::kTruncatedByOneByte:
      bytes.pop_back();
      break;
    case Damage::kTruncatedInPtx:
      bytes.resize(bytes.size() - ptx_size / 2);
      break;
    case Damage::kTruncatedToHeader:
      bytes.resize(kKeyAt);
      break;
    case Damage::kFlippedCubinByte:
      bytes[bytes.size() / 2] ^= 0x01;
      break;
    case Damage::kFlippedPtxByte:
      bytes[bytes.size() - 2] ^= 0x20;
      break;
    case Damage::kFlippedKeyByte:
      bytes[kKeyAt + 8] ^= 0x01;
      break;
    case Damage::kFlippedChecksumByte:
      bytes[kChecksumAt + 10] ^= 0x80;
      break;
    case Damage::kFlippedPtxChecksumByte:
      bytes[kPtxChecksumAt + 10] ^= 0x80;
      break;
    case Damage::kFlippedSizeField:
      bytes[24] ^= 0x01;
      bytes[32] ^= 0x01;
      break;
    case Damage::kOtherFormatVersion: {
      // Only the version differs: the main checksum is recomputed to match.
      bytes[8] = static_cast<char>(kCacheFormatVersion + 1);
      Checksum sum;
      sum.update(std::as_bytes(std::span(std::string_view(bytes).substr(0, kChecksumAt))));
      sum.update(std::as_bytes(
          std::span(std::string_view(bytes).substr(kKeyAt, u64_at(bytes, 16) + u64_at(bytes, 24)))));
      const auto checksum = sum.value();
      std::memcpy(bytes.data() + kChecksumAt, checksum.data(), checksum.size());
      break;
    }
    case Damage::kZeroLength:
      bytes.clear();
      break;
    case Damage::kForeignFile:
      bytes = std::string(bytes.size(), 'z');
      break;
    case Damage::kAppendedByte:
      bytes.push_back('\0');
      break;
  }
  write_file(path, bytes);
  ASSERT_EQ(mode_of(path), 0600u);
}

class DamagedEntry : public LocalStoreTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(DamagedEntry, is_detected_recompiled_and_replaced) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), GetParam());

  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);

  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [] { return make_image(1); }, &compiled, ImageParts::kCubinAndPtx),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  EXPECT_EQ(cache.process_stats().errors, 2u) << "one per lookup that met the bad entry";

  LocalStore reader(config());
  const auto loaded = reader.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value()) << "the bad entry was replaced";
  EXPECT_TRUE(same(*loaded, make_image(1)));
  EXPECT_EQ(reader.process_stats().errors, 0u);
}

// A CUBIN-only load reads no PTX byte, so damage confined to the PTX bytes
// goes unseen (and harms nothing it returns); every other damage, a PTX
// region of the wrong length included, is a miss counted as an error.
TEST_P(DamagedEntry, is_a_miss_for_a_cubin_only_load_unless_only_ptx_bytes_changed) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), GetParam());
  const bool unseen = GetParam() == Damage::kFlippedPtxByte;

  const auto loaded = cache.load(key);
  EXPECT_EQ(loaded.has_value(), unseen);
  if (loaded) {
    EXPECT_TRUE(same(*loaded, cubin_only(make_image(1))));
  }
  EXPECT_EQ(cache.process_stats().errors, unseen ? 0u : 1u);

  bool compiled = unseen;
  const CompiledImage image = cache.get_or_compile(
      key, [] { return make_image(1); }, &compiled);
  EXPECT_EQ(compiled, !unseen);
  EXPECT_TRUE(same(image, expected(1, compiled)));
}

std::string damage_name(const ::testing::TestParamInfo<Damage>& info) {
  constexpr const char* kNames[] = {
      "truncated_by_one_byte", "truncated_in_ptx",     "truncated_to_header",   "flipped_cubin_byte",
      "flipped_ptx_byte",      "flipped_key_byte",     "flipped_checksum_byte", "flipped_ptx_checksum_byte",
      "flipped_size_field",    "other_format_version", "zero_length",           "foreign_file",
      "appended_byte"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(EachKind, DamagedEntry,
                         ::testing::Values(Damage::kTruncatedByOneByte, Damage::kTruncatedInPtx,
                                           Damage::kTruncatedToHeader, Damage::kFlippedCubinByte,
                                           Damage::kFlippedPtxByte, Damage::kFlippedKeyByte,
                                           Damage::kFlippedChecksumByte, Damage::kFlippedPtxChecksumByte,
                                           Damage::kFlippedSizeField, Damage::kOtherFormatVersion,
                                           Damage::kZeroLength, Damage::kForeignFile, Damage::kAppendedByte),
                         damage_name);

TEST_F(LocalStoreTest, flipped_ptx_byte_fails_a_ptx_load_but_not_a_cubin_only_load) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), Damage::kFlippedPtxByte);

  const auto cubin = cache.load(key);
  ASSERT_TRUE(cubin.has_value()) << "a CUBIN-only load does not look at the PTX";
  EXPECT_TRUE(same(*cubin, cubin_only(make_image(1))));
  EXPECT_EQ(cache.process_stats().errors, 0u);

  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  EXPECT_EQ(cache.process_stats().misses, 1u);

  // Asking for the PTX through get_or_compile replaces the entry.
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [] { return make_image(1); }, &compiled, ImageParts::kCubinAndPtx),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  const auto repaired = cache.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_TRUE(same(*repaired, make_image(1)));
}

TEST_F(LocalStoreTest, entries_of_format_version_1_are_misses) {
  const CacheKey key = make_key(1);
  const CompiledImage image = make_image(1);
  // Version 1: one checksum over the header before it, the key, the CUBIN and the PTX.
  const auto v1_entry = [&](const std::string& serialized_key) {
    std::string bytes("TROPJIT\n");
    put_u32(bytes, 1);
    put_u32(bytes, 0);
    put_u64(bytes, serialized_key.size());
    put_u64(bytes, image.cubin.size());
    put_u64(bytes, image.ptx.size());
    std::string body = serialized_key;
    body.append(reinterpret_cast<const char*>(image.cubin.data()), image.cubin.size());
    body += image.ptx;
    Sha256 sha;
    sha.update(bytes);
    sha.update(body);
    const auto checksum = sha.digest();
    bytes.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
    return bytes + body;
  };
  const auto write_entry = [](const fs::path& path, const std::string& bytes) {
    write_file(path, bytes);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  };
  // The key's serialization holds the format version after its 8-byte-length-prefixed tag.
  const std::string serialized = key.serialize();
  constexpr std::size_t kVersionAt = 8 + std::string_view("tropical.jit.CacheKey").size();
  ASSERT_EQ(serialized[kVersionAt], static_cast<char>(kCacheFormatVersion));
  std::string serialized_v1 = serialized;
  serialized_v1[kVersionAt] = 1;

  LocalStore cache(config());
  // What version 1 wrote for this key lies under another name: never even looked at.
  const fs::path v1_path = dir_ / (Sha256::hex(Sha256::of(serialized_v1)) + ".entry");
  write_entry(v1_path, v1_entry(serialized_v1));
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_EQ(cache.process_stats().errors, 0u);

  // A version 1 entry under the current name (with the current key) is a bad entry, and is replaced.
  write_entry(cache.entry_path(key), v1_entry(serialized));
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 2u);
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [&] { return image; }, &compiled),
                   image));
  EXPECT_TRUE(compiled);
  const auto loaded = cache.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(same(*loaded, image));
}

TEST_F(LocalStoreTest, entry_of_another_key_under_this_name_is_a_miss) {
  // A digest collision, simulated: key 2's entry copied under key 1's name.
  LocalStore cache(config());
  cache.get_or_compile(make_key(2), [] { return make_image(2); });
  fs::copy_file(cache.entry_path(make_key(2)), cache.entry_path(make_key(1)));
  fs::permissions(cache.entry_path(make_key(1)), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  EXPECT_TRUE(same(cache.get_or_compile(make_key(1), [] { return make_image(1); }), make_image(1)));
}

TEST_F(LocalStoreTest, directory_under_entry_name_is_an_error_and_degrades_with_one_warning) {
  LocalStore cache(config());
  fs::create_directory(cache.entry_path(make_key(1)));
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  ::testing::internal::CaptureStderr();
  const auto first = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const auto second = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(first, make_image(1)));
  EXPECT_TRUE(same(second, make_image(1)));
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find(dir_.string()), std::string::npos) << err;
  EXPECT_TRUE(cache.enabled()) << "one odd entry does not switch the cache off";
  EXPECT_TRUE(same(cache.get_or_compile(make_key(2), [] { return make_image(2); }), make_image(2)));
  EXPECT_TRUE(cache.load(make_key(2)).has_value());
}

// ---------------------------------------------------------------------------
// Security.

TEST_F(LocalStoreTest, created_directories_are_0700_and_files_0600) {
  dir_ = root_ / "a" / "b" / "cache";
  const mode_t old_umask = ::umask(0);
  {
    LocalStore cache(config());
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    EXPECT_EQ(mode_of(cache.entry_path(make_key(1))), 0600u);
  }
  ::umask(old_umask);
  EXPECT_EQ(mode_of(root_ / "a"), 0700u);
  EXPECT_EQ(mode_of(root_ / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(dir_), 0700u);
  EXPECT_EQ(mode_of(dir_ / "locks"), 0700u);
  EXPECT_EQ(mode_of(dir_ / StatsFile::kName), 0600u);
  for (const auto& item : fs::directory_iterator(dir_ / "locks")) EXPECT_EQ(mode_of(item.path()), 0600u);
}

TEST_F(LocalStoreTest, entries_are_0600_under_a_restrictive_umask) {
  const mode_t old_umask = ::umask(0277);
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ::umask(old_umask);
  EXPECT_EQ(mode_of(cache.entry_path(make_key(1))), 0600u);
  EXPECT_TRUE(cache.load(make_key(1)).has_value());
}

TEST_F(LocalStoreTest, symlinked_entry_is_refused_and_replaced) {
  CacheConfig elsewhere;
  elsewhere.dir = root_ / "elsewhere";
  LocalStore other(elsewhere);
  other.get_or_compile(make_key(1), [] { return make_image(1); });

  LocalStore cache(config());
  fs::create_symlink(other.entry_path(make_key(1)), cache.entry_path(make_key(1)));
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(1), [] { return make_image(1); }, &compiled),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  EXPECT_FALSE(fs::is_symlink(cache.entry_path(make_key(1))));
  EXPECT_TRUE(fs::is_regular_file(other.entry_path(make_key(1))));
}

TEST_F(LocalStoreTest, entry_owned_by_another_user_is_refused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ASSERT_EQ(::chown(cache.entry_path(make_key(1)).c_str(), 65534, 65534), 0);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  bool compiled = false;
  cache.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(cache.load(make_key(1)).has_value());
}

TEST_F(LocalStoreTest, entry_readable_by_others_is_refused) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ASSERT_EQ(::chmod(cache.entry_path(make_key(1)).c_str(), 0644), 0);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
}

TEST_F(LocalStoreTest, fifo_under_entry_name_does_not_block_the_reader) {
  LocalStore cache(config());
  ASSERT_EQ(::mkfifo(cache.entry_path(make_key(1)).c_str(), 0600), 0);
  Child reader([&] {
    LocalStore cache_in_child(config());
    if (cache_in_child.load(make_key(1)).has_value()) return 1;
    return cache_in_child.process_stats().errors == 1 ? 0 : 2;
  });
  const Outcome outcome = reader.wait(10s);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_code, 0);
}

}  // namespace
}  // namespace tropical::storage
