#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tropical/storage/remote/ed25519.hpp"

namespace tropical::storage::remote {

/// A remote value is `entry bytes | trailer` (kTrailerSize bytes, integers little-endian):
///   "TRSG" | u8 version (1) | u8 scheme (0 unsigned, 1 ed25519) | u16 0 | u64 entry size
///   | signer's raw public key [32] | signature [64] | "TROPSIG\n"
/// The ed25519 signature covers kSignatureDomain, the length-prefixed Redis key the value is
/// stored under, the trailer's first 48 bytes (through the public key) and the entry bytes, so
/// it binds the exact bytes to the exact key: a valid value copied under another key fails.
/// An unsigned value has scheme 0 and zeros for key and signature.
inline constexpr std::size_t kTrailerSize = 120;
/// The domain-separation prefix of every signed message (never used for anything else).
inline constexpr std::string_view kSignatureDomain{"tropical remote cache entry v1\0", 31};

/// Why a value was not accepted (kAccepted if it was).
enum class ValueVerdict {
  kAccepted,      ///< signed by a trusted key (or allowed unsigned): the entry may be used
  kUnsigned,      ///< no signature, and unsigned values are not allowed
  kUntrusted,     ///< signed by a key not in the trusted set
  kBadSignature,  ///< the signature does not cover these bytes under this key
  kGarbage,       ///< not a value of this format at all
};

/// A short name of verdict ("unsigned", "untrusted key", ...).
std::string_view to_string(ValueVerdict verdict) noexcept;

/// The value to store under redis_key for entry: signed by signer, or unsigned if signer is
/// null. nullopt only if OpenSSL fails to sign. Never throws but std::bad_alloc.
std::optional<std::string> seal_value(std::string_view entry, std::string_view redis_key, const SigningKey* signer);

/// What open_value decided, and who signed.
struct OpenedValue {
  ValueVerdict verdict = ValueVerdict::kGarbage;  ///< kAccepted: *value now holds the entry bytes only
  std::optional<PublicKeyBytes> signer;           ///< the key named in the trailer, if signed
};

/// Checks value as read from redis_key: accepted if signed by a key in trusted with a valid
/// signature, or, when allow_unsigned is set, if unsigned or validly signed by any key (the
/// network is trusted then; the signature still proves the bytes are whole). On kAccepted the
/// trailer is cut off *value in place; otherwise *value is left as it was. Never throws.
OpenedValue open_value(std::string* value, std::string_view redis_key, const TrustedKeys& trusted,
                       bool allow_unsigned) noexcept;

}  // namespace tropical::storage::remote
