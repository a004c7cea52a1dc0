#include "tropical/storage/entry.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <stdexcept>

#include "tropical/storage/checksum.hpp"
#include "tropical/storage/io.hpp"
#include "tropical/storage/key.hpp"

namespace tropical::storage {
namespace {

constexpr std::array<char, 8> kMagic = {'T', 'R', 'O', 'P', 'J', 'I', 'T', '\n'};
constexpr std::uint64_t kMaxExplainedKeyBytes = 64 << 10;

void put_u32_at(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put_u64_at(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}

std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

std::span<const std::byte> bytes_of(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

Checksum::Value main_checksum(const std::uint8_t* header, const void* key, std::size_t key_size,
                              const void* cubin, std::size_t cubin_size) {
  Checksum sum;
  sum.update(bytes_of(header, kEntryChecksumOffset));
  sum.update(bytes_of(key, key_size));
  sum.update(bytes_of(cubin, cubin_size));
  return sum.value();
}

}  // namespace

std::vector<std::uint8_t> encode_entry(std::string_view serialized_key, const CompiledImage& image) {
  const std::uint64_t size =
      kEntryHeaderSize + std::uint64_t{serialized_key.size()} + image.cubin.size() + image.ptx.size();
  if (size > kMaxEntryBytes) throw std::length_error("cache entry larger than kMaxEntryBytes");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  std::uint8_t* p = bytes.data();
  std::memcpy(p, kMagic.data(), kMagic.size());
  put_u32_at(p + 8, kCacheFormatVersion);
  put_u32_at(p + 12, 0);
  put_u64_at(p + 16, serialized_key.size());
  put_u64_at(p + 24, image.cubin.size());
  put_u64_at(p + 32, image.ptx.size());
  std::uint8_t* at = p + kEntryHeaderSize;
  at = std::copy(serialized_key.begin(), serialized_key.end(), at);
  if (!image.cubin.empty()) std::memcpy(at, image.cubin.data(), image.cubin.size());
  at += image.cubin.size();
  std::copy(image.ptx.begin(), image.ptx.end(), at);
  // The PTX checksum first: the main checksum covers it.
  const Checksum::Value ptx_sum = Checksum::of(image.ptx);
  std::copy(ptx_sum.begin(), ptx_sum.end(), p + kEntryPtxChecksumOffset);
  const Checksum::Value sum = main_checksum(p, p + kEntryHeaderSize, serialized_key.size(),
                                            p + kEntryHeaderSize + serialized_key.size(), image.cubin.size());
  std::copy(sum.begin(), sum.end(), p + kEntryChecksumOffset);
  return bytes;
}

// The checks of read_entry() over any source of bytes: read(dst, size, offset) returns 0 on success.
namespace {

template <typename ReadAt>
EntryRead read_entry_from(const ReadAt& read, std::uint64_t file_size, std::string_view serialized_key,
                          ImageParts parts) {
  EntryRead out;
  if (file_size > kMaxEntryBytes) {
    out.status = EntryStatus::kTooLarge;
    return out;
  }
  const std::uint64_t head_size = kEntryHeaderSize + std::uint64_t{serialized_key.size()};
  if (file_size < head_size) return out;
  // Header and key first, checked against the file size, so that a damaged
  // size field cannot make the reader allocate or read nonsense; then the
  // payload goes straight into the image, without another copy.
  std::vector<std::uint8_t> head(static_cast<std::size_t>(head_size));
  if (read(head.data(), head.size(), 0) != 0) return out;
  out.bytes_read = head.size();
  const std::uint8_t* p = head.data();
  if (std::memcmp(p, kMagic.data(), kMagic.size()) != 0) return out;
  if (get_u32(p + 8) != kCacheFormatVersion) {
    out.status = EntryStatus::kOtherFormat;
    return out;
  }
  const std::uint64_t key_size = get_u64(p + 16);
  const std::uint64_t cubin_size = get_u64(p + 24);
  const std::uint64_t ptx_size = get_u64(p + 32);
  if (key_size != serialized_key.size()) {
    // A sound header for a key of another length is another key's entry.
    out.status = key_size <= file_size - kEntryHeaderSize ? EntryStatus::kOtherKey : EntryStatus::kCorrupt;
    return out;
  }
  const std::uint64_t payload = file_size - head_size;
  // Each size is checked against the file size first, so the sum cannot overflow.
  if (get_u32(p + 12) != 0 || cubin_size > payload || ptx_size > payload ||
      cubin_size + ptx_size != payload) {
    return out;
  }
  CompiledImage& image = out.image;
  image.cubin.resize(static_cast<std::size_t>(cubin_size));
  if (read(image.cubin.data(), image.cubin.size(), head_size) != 0) return out;
  out.bytes_read += cubin_size;
  const Checksum::Value sum =
      main_checksum(p, p + kEntryHeaderSize, key_size, image.cubin.data(), image.cubin.size());
  if (std::memcmp(p + kEntryChecksumOffset, sum.data(), sum.size()) != 0) return out;
  // Compared after the checksum, so that a damaged key reads as damage, not as another key.
  if (std::memcmp(p + kEntryHeaderSize, serialized_key.data(), serialized_key.size()) != 0) {
    out.status = EntryStatus::kOtherKey;
    return out;
  }
  if (parts == ImageParts::kCubinAndPtx) {
    image.ptx.resize(static_cast<std::size_t>(ptx_size));
    if (read(image.ptx.data(), image.ptx.size(), head_size + cubin_size) != 0) return out;
    out.bytes_read += ptx_size;
    const Checksum::Value ptx_sum = Checksum::of(image.ptx);
    if (std::memcmp(p + kEntryPtxChecksumOffset, ptx_sum.data(), ptx_sum.size()) != 0) return out;
  }
  out.status = EntryStatus::kOk;
  return out;
}

}  // namespace

EntryRead read_entry(int fd, std::uint64_t file_size, std::string_view serialized_key, ImageParts parts) {
  return read_entry_from([fd](void* dst, std::size_t size, std::uint64_t offset) { return read_at(fd, dst, size, offset); },
                         file_size, serialized_key, parts);
}

EntryRead decode_entry(std::span<const std::uint8_t> bytes, std::string_view serialized_key, ImageParts parts) {
  const auto copy = [bytes](void* dst, std::size_t size, std::uint64_t offset) {
    // read_entry_from() checks every size against bytes.size() first; this is a second guard.
    if (offset > bytes.size() || size > bytes.size() - offset) return -1;
    if (size != 0) std::memcpy(dst, bytes.data() + offset, size);
    return 0;
  };
  return read_entry_from(copy, bytes.size(), serialized_key, parts);
}

std::optional<std::string> read_entry_key(int fd, std::uint64_t file_size, std::uint32_t* version) {
  constexpr std::size_t kFixed = 40;  // magic, version, flags and the three sizes: the same in every version
  if (file_size < kFixed || file_size > kMaxEntryBytes) return std::nullopt;
  std::array<std::uint8_t, kFixed> header{};
  if (read_at(fd, header.data(), header.size(), 0) != 0) return std::nullopt;
  if (std::memcmp(header.data(), kMagic.data(), kMagic.size()) != 0) return std::nullopt;
  const std::uint32_t written = get_u32(header.data() + 8);
  // Version 2 had two 32-byte SHA-256 checksums; versions 1 and 3 end their header at 72 bytes.
  const std::uint64_t key_at = written == 2 ? 104 : kEntryHeaderSize;
  const std::uint64_t key_size = get_u64(header.data() + 16);
  if (file_size < key_at || key_size > kMaxExplainedKeyBytes || key_size > file_size - key_at)
    return std::nullopt;
  std::string key(static_cast<std::size_t>(key_size), '\0');
  if (read_at(fd, key.data(), key.size(), key_at) != 0) return std::nullopt;
  if (version != nullptr) *version = written;
  return key;
}

}  // namespace tropical::storage
