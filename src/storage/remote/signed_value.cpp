#include "tropical/storage/remote/signed_value.hpp"

#include <algorithm>
#include <cstring>

namespace tropical::storage::remote {
namespace {

constexpr std::string_view kHeadMagic = "TRSG";
constexpr std::string_view kTailMagic = "TROPSIG\n";
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kSchemeUnsigned = 0;
constexpr std::uint8_t kSchemeEd25519 = 1;
constexpr std::size_t kSizeOffset = 8;
constexpr std::size_t kKeyOffset = 16;
constexpr std::size_t kSignedPart = kKeyOffset + 32;  // trailer bytes the signature covers
constexpr std::size_t kSignatureOffset = kSignedPart;
constexpr std::size_t kTailOffset = kSignatureOffset + 64;
static_assert(kTailOffset + kTailMagic.size() == kTrailerSize);

void put_u64(char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint64_t get_u64(const char* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return v;
}

// domain | u64 key size | key | signed trailer part | entry: one buffer, since ed25519
// (pure, RFC 8032) signs a message it can see whole.
std::string message(std::string_view redis_key, std::string_view trailer_head, std::string_view entry) {
  std::string m;
  m.reserve(kSignatureDomain.size() + 8 + redis_key.size() + trailer_head.size() + entry.size());
  m.append(kSignatureDomain);
  char size[8];
  put_u64(size, redis_key.size());
  m.append(size, 8);
  m.append(redis_key);
  m.append(trailer_head);
  m.append(entry);
  return m;
}

}  // namespace

std::string_view to_string(ValueVerdict verdict) noexcept {
  switch (verdict) {
    case ValueVerdict::kAccepted: return "accepted";
    case ValueVerdict::kUnsigned: return "unsigned";
    case ValueVerdict::kUntrusted: return "untrusted key";
    case ValueVerdict::kBadSignature: return "bad signature";
    case ValueVerdict::kGarbage: return "garbage";
  }
  return "unknown";
}

std::optional<std::string> seal_value(std::string_view entry, std::string_view redis_key, const SigningKey* signer) {
  char trailer[kTrailerSize] = {};
  std::memcpy(trailer, kHeadMagic.data(), kHeadMagic.size());
  trailer[4] = static_cast<char>(kVersion);
  trailer[5] = static_cast<char>(signer != nullptr ? kSchemeEd25519 : kSchemeUnsigned);
  put_u64(trailer + kSizeOffset, entry.size());
  std::memcpy(trailer + kTailOffset, kTailMagic.data(), kTailMagic.size());
  if (signer != nullptr) {
    const PublicKeyBytes& pub = signer->public_key().raw();
    std::memcpy(trailer + kKeyOffset, pub.data(), pub.size());
    const auto signature = signer->sign(message(redis_key, std::string_view(trailer, kSignedPart), entry));
    if (!signature) return std::nullopt;
    std::memcpy(trailer + kSignatureOffset, signature->data(), signature->size());
  }
  std::string value;
  value.reserve(entry.size() + kTrailerSize);
  value.append(entry);
  value.append(trailer, kTrailerSize);
  return value;
}

OpenedValue open_value(std::string* value, std::string_view redis_key, const TrustedKeys& trusted,
                       bool allow_unsigned) noexcept {
  OpenedValue opened;
  if (value->size() < kTrailerSize) return opened;
  const std::size_t entry_size = value->size() - kTrailerSize;
  const std::string_view entry(value->data(), entry_size);
  const std::string_view trailer(value->data() + entry_size, kTrailerSize);
  if (trailer.substr(0, 4) != kHeadMagic || trailer.substr(kTailOffset) != kTailMagic ||
      static_cast<std::uint8_t>(trailer[4]) != kVersion || trailer[6] != 0 || trailer[7] != 0 ||
      get_u64(trailer.data() + kSizeOffset) != entry_size) {
    return opened;
  }
  const auto scheme = static_cast<std::uint8_t>(trailer[5]);
  if (scheme == kSchemeUnsigned) {
    const bool zeros = std::all_of(trailer.begin() + kKeyOffset, trailer.begin() + kTailOffset,
                                   [](char c) { return c == 0; });
    if (!zeros) return opened;
    opened.verdict = allow_unsigned ? ValueVerdict::kAccepted : ValueVerdict::kUnsigned;
  } else if (scheme == kSchemeEd25519) {
    PublicKeyBytes raw{};
    std::memcpy(raw.data(), trailer.data() + kKeyOffset, raw.size());
    SignatureBytes signature{};
    std::memcpy(signature.data(), trailer.data() + kSignatureOffset, signature.size());
    opened.signer = raw;
    std::optional<PublicKey> unknown;
    const PublicKey* key = trusted.find(raw);
    if (key == nullptr && allow_unsigned) {
      unknown = PublicKey::from_raw(raw);
      key = unknown ? &*unknown : nullptr;
    }
    if (key == nullptr) {
      opened.verdict = allow_unsigned ? ValueVerdict::kBadSignature : ValueVerdict::kUntrusted;
      return opened;
    }
    try {
      const bool ok = key->verify(message(redis_key, trailer.substr(0, kSignedPart), entry), signature);
      opened.verdict = ok ? ValueVerdict::kAccepted : ValueVerdict::kBadSignature;
    } catch (const std::bad_alloc&) {
      opened.verdict = ValueVerdict::kGarbage;  // cannot be checked now: a miss like any other
    }
  } else {
    return opened;
  }
  if (opened.verdict == ValueVerdict::kAccepted) value->resize(entry_size);
  return opened;
}

}  // namespace tropical::storage::remote
