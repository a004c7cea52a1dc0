#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/storage/image.hpp"

// The entry file format, all integers little-endian:
//   magic[8] | u32 format version | u32 flags (0) | u64 key size | u64 cubin size | u64 ptx size
//   | checksum of ptx [16] | checksum of (bytes 0..55 + key + cubin) [16] | key | cubin | ptx
// Two checksums (see checksum.hpp), so that a load that needs no PTX (the usual one: PTX matters only when
// the driver refuses the CUBIN) neither reads nor hashes it. The main checksum covers every header byte
// before it, the PTX checksum and size included, so a CUBIN-only load still verifies the whole header.

namespace tropical::storage {

/// What a lookup reads and returns: the CUBIN alone (the start-up path; PTX left empty), or CUBIN and PTX.
enum class ImageParts { kCubin, kCubinAndPtx };

/// Largest entry file read or written: 64 MiB, some 200 times the largest entry of the catalog (307 kB), so
/// that a crafted or damaged file is rejected by its size before a byte of it is read.
inline constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{64} << 20;

/// Offsets of the layout above.
inline constexpr std::size_t kEntryPtxChecksumOffset = 40;
inline constexpr std::size_t kEntryChecksumOffset = 56;
inline constexpr std::size_t kEntryHeaderSize = 72;

/// The outcome of reading one entry file.
enum class EntryStatus {
  kOk,           ///< verified; the image is returned
  kTooLarge,     ///< larger than kMaxEntryBytes: rejected unread
  kCorrupt,      ///< truncated, extended, or a checksum does not match
  kOtherFormat,  ///< a well-formed header of another format version
  kOtherKey,     ///< a sound entry for another key
};

/// One entry read: the status, the image if kOk, and how many bytes were read.
struct EntryRead {
  EntryStatus status = EntryStatus::kCorrupt;
  CompiledImage image;
  std::uint64_t bytes_read = 0;
};

/// The bytes of the entry for serialized_key and image; throws std::length_error if they would exceed
/// kMaxEntryBytes.
std::vector<std::uint8_t> encode_entry(std::string_view serialized_key, const CompiledImage& image);

/// Reads and verifies the entry open on fd, whose size (from fstat) is file_size, for serialized_key: header,
/// key and CUBIN always, PTX too with kCubinAndPtx. Sizes are checked against file_size before anything
/// is allocated or read, and nothing at all is read from a file over kMaxEntryBytes. Uses pread only.
EntryRead read_entry(int fd, std::uint64_t file_size, std::string_view serialized_key, ImageParts parts);

/// read_entry() over bytes already in memory (an entry received from the fleet store), with the same checks.
EntryRead decode_entry(std::span<const std::uint8_t> bytes, std::string_view serialized_key, ImageParts parts);

/// The serialized key stored in the entry open on fd (header and key only, key at most 64 KiB), with the
/// entry's format version in *version, or nullopt if the file does not start like an entry; for explaining
/// a miss, so the payload is neither read nor verified.
std::optional<std::string> read_entry_key(int fd, std::uint64_t file_size, std::uint32_t* version = nullptr);

}  // namespace tropical::storage
