#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tropical::storage {

/// Version of the on-disk entry format; part of every key (3: GMAC checksums, 16-byte checksum fields).
inline constexpr std::uint32_t kCacheFormatVersion = 3;

/// Everything that determines a compiled image. Its SHA-256 names the entry;
/// the full serialized key is stored in the entry and compared on load.
struct CacheKey {
  std::string kernel_name;           ///< symbol of the kernel
  std::string source_digest;         ///< hex SHA-256 of the fragment
  std::vector<std::string> options;  ///< NVRTC options, in order
  int arch = 0;                      ///< target sm_XY as 10 * major + minor
  std::string compiler;              ///< nvrtc_identity()

  /// Canonical, unambiguous bytes of every field plus kCacheFormatVersion.
  std::string serialize() const;
  /// Hex SHA-256 of serialize(): the entry's file name.
  std::string digest() const;

  /// What serialize() wrote, with the format version it wrote into *version (any version with the same field
  /// layout, versions 1 to kCacheFormatVersion), or nullopt for bytes that are not a serialized key.
  static std::optional<CacheKey> parse(std::string_view bytes, std::uint32_t* version = nullptr);
};

/// How a stored key differs from the one wanted; the order is the order of importance.
enum class KeyMismatch {
  kNone,      ///< the same key: the entry is usable
  kKernel,    ///< another kernel
  kArch,      ///< another architecture
  kCompiler,  ///< another NVRTC build (identity)
  kFormat,    ///< another entry format version
  kSource,    ///< another source of the kernel
  kOptions,   ///< other compile options
};

/// The first difference, in KeyMismatch's order, between stored (written with format version
/// stored_version, as CacheKey::parse reports it) and wanted (of kCacheFormatVersion).
KeyMismatch key_mismatch(const CacheKey& stored, std::uint32_t stored_version, const CacheKey& wanted);

}  // namespace tropical::storage
