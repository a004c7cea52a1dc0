// The entry format: round trips, verification, and the size bound that
// rejects a crafted 2 GiB file without reading it.
#include "tropical/storage/entry.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class EntryTest : public LocalStoreTest {
 protected:
  // Writes bytes to a new file and returns it open for reading, with its size.
  Fd put(const std::vector<std::uint8_t>& bytes, std::uint64_t* size) {
    fs::create_directories(dir_);
    const fs::path path = dir_ / "entry";
    write_file(path, std::string(bytes.begin(), bytes.end()));
    *size = fs::file_size(path);
    return Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
};

TEST_F(EntryTest, round_trip_with_and_without_ptx) {
  const std::string key = make_key(1).serialize();
  const CompiledImage image = make_image(1, 10000);
  const auto bytes = encode_entry(key, image);
  EXPECT_EQ(bytes.size(), kEntryHeaderSize + key.size() + image.cubin.size() + image.ptx.size());
  std::uint64_t size = 0;
  const Fd fd = put(bytes, &size);
  const EntryRead cubin = read_entry(fd.get(), size, key, ImageParts::kCubin);
  ASSERT_EQ(cubin.status, EntryStatus::kOk);
  EXPECT_TRUE(same(cubin.image, cubin_only(image)));
  EXPECT_EQ(cubin.bytes_read, size - image.ptx.size());
  const EntryRead whole = read_entry(fd.get(), size, key, ImageParts::kCubinAndPtx);
  ASSERT_EQ(whole.status, EntryStatus::kOk);
  EXPECT_TRUE(same(whole.image, image));
  EXPECT_EQ(whole.bytes_read, size);
}

TEST_F(EntryTest, another_key_is_told_apart_from_damage) {
  const auto bytes = encode_entry(make_key(1).serialize(), make_image(1));
  std::uint64_t size = 0;
  const Fd fd = put(bytes, &size);
  CacheKey same_length = make_key(1);
  same_length.compiler.back() = same_length.compiler.back() == 'x' ? 'y' : 'x';
  EXPECT_EQ(read_entry(fd.get(), size, same_length.serialize(), ImageParts::kCubin).status,
            EntryStatus::kOtherKey);
  EXPECT_EQ(read_entry(fd.get(), size, make_key(2).serialize() + "longer", ImageParts::kCubin).status,
            EntryStatus::kOtherKey);
  EXPECT_EQ(read_entry(fd.get(), size - 1, make_key(1).serialize(), ImageParts::kCubin).status,
            EntryStatus::kCorrupt)
      << "a size that does not add up";
}

TEST_F(EntryTest, encoding_refuses_an_entry_over_the_bound) {
  CompiledImage huge;
  huge.cubin.resize(kMaxEntryBytes);
  EXPECT_THROW(encode_entry("k", huge), std::length_error);
}

TEST_F(EntryTest, sparse_two_gib_entry_with_a_valid_header_is_rejected_unread_within_100_ms) {
  const std::string key = make_key(1).serialize();
  auto bytes = encode_entry(key, make_image(1));
  const std::uint64_t two_gib = std::uint64_t{2} << 30;
  const std::uint64_t cubin = two_gib - kEntryHeaderSize - key.size();
  for (int i = 0; i < 8; ++i) bytes[24 + i] = static_cast<std::uint8_t>(cubin >> (8 * i));
  for (int i = 0; i < 8; ++i) bytes[32 + i] = 0;
  bytes.resize(kEntryHeaderSize + key.size());
  std::uint64_t size = 0;
  Fd fd = put(bytes, &size);
  ASSERT_EQ(::truncate((dir_ / "entry").c_str(), static_cast<off_t>(two_gib)), 0);
  size = fs::file_size(dir_ / "entry");
  ASSERT_EQ(size, two_gib);
  const std::uint64_t read_before = bytes_read_by_process();
  const auto start = std::chrono::steady_clock::now();
  const EntryRead read = read_entry(fd.get(), size, key, ImageParts::kCubinAndPtx);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(read.status, EntryStatus::kTooLarge);
  EXPECT_EQ(read.bytes_read, 0u);
  EXPECT_TRUE(read.image.cubin.empty());
  EXPECT_LT(bytes_read_by_process() - read_before, 4096u) << "the file was read";
  EXPECT_LT(elapsed, 100ms);
}

TEST_F(EntryTest, stored_key_of_this_and_the_previous_layout_is_read_without_the_payload) {
  const std::string key = make_key(3).serialize();
  std::uint64_t size = 0;
  Fd fd = put(encode_entry(key, make_image(3)), &size);
  std::uint32_t version = 0;
  EXPECT_EQ(read_entry_key(fd.get(), size, &version), key);
  EXPECT_EQ(version, kCacheFormatVersion);

  // Version 2: a 104-byte header (two 32-byte checksums) before the key.
  std::string v2(104, '\0');
  std::memcpy(v2.data(), "TROPJIT\n", 8);
  v2[8] = 2;
  for (int i = 0; i < 8; ++i) v2[16 + i] = static_cast<char>(key.size() >> (8 * i));
  v2 += key;
  fd = put(std::vector<std::uint8_t>(v2.begin(), v2.end()), &size);
  EXPECT_EQ(read_entry_key(fd.get(), size, &version), key);
  EXPECT_EQ(version, 2u);
  fd = put(std::vector<std::uint8_t>(200, 'z'), &size);
  EXPECT_FALSE(read_entry_key(fd.get(), size).has_value());
}


TEST_F(EntryTest, decode_from_memory_checks_what_a_file_read_checks) {
  const std::string key = make_key(1).serialize();
  const CompiledImage image = make_image(1, 10000);
  std::vector<std::uint8_t> bytes = encode_entry(key, image);
  const EntryRead whole = decode_entry(bytes, key, ImageParts::kCubinAndPtx);
  ASSERT_EQ(whole.status, EntryStatus::kOk);
  EXPECT_TRUE(same(whole.image, image));
  const EntryRead cubin = decode_entry(bytes, key, ImageParts::kCubin);
  ASSERT_EQ(cubin.status, EntryStatus::kOk);
  EXPECT_TRUE(same(cubin.image, cubin_only(image)));
  EXPECT_EQ(decode_entry(bytes, make_key(2).serialize(), ImageParts::kCubin).status, EntryStatus::kOtherKey);
  EXPECT_EQ(decode_entry(std::span(bytes).first(bytes.size() - 1), key, ImageParts::kCubin).status,
            EntryStatus::kCorrupt);
  EXPECT_EQ(decode_entry(std::span(bytes).first(10), key, ImageParts::kCubin).status, EntryStatus::kCorrupt);
  EXPECT_EQ(decode_entry({}, key, ImageParts::kCubin).status, EntryStatus::kCorrupt);
  bytes[kEntryHeaderSize + key.size() + 5000] ^= 1;  // in the CUBIN
  EXPECT_EQ(decode_entry(bytes, key, ImageParts::kCubin).status, EntryStatus::kCorrupt);
  bytes[kEntryHeaderSize + key.size() + 5000] ^= 1;
  bytes[bytes.size() - 3] ^= 1;  // in the PTX: a CUBIN-only decode does not look at it
  EXPECT_EQ(decode_entry(bytes, key, ImageParts::kCubin).status, EntryStatus::kOk);
  EXPECT_EQ(decode_entry(bytes, key, ImageParts::kCubinAndPtx).status, EntryStatus::kCorrupt);
}

}  // namespace
}  // namespace tropical::storage
