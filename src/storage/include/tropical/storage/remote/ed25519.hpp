#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// OpenSSL's EVP_PKEY, declared here so that users of this header need no OpenSSL headers.
struct evp_pkey_st;

namespace tropical::storage::remote {

/// The 32 raw bytes of an ed25519 public key (RFC 8032).
using PublicKeyBytes = std::array<std::uint8_t, 32>;
/// The 64 bytes of an ed25519 signature.
using SignatureBytes = std::array<std::uint8_t, 64>;

/// A short printable name of a public key: "ed25519:" and 16 hex digits of its SHA-256.
std::string key_id(const PublicKeyBytes& key);

/// An ed25519 public key that verifies signatures. Immutable; thread-safe.
class PublicKey {
 public:
  /// The key of a PEM "PUBLIC KEY" file (as `openssl pkey -pubout` and write_key_pair write it), read through
  /// read_trusted_file (a regular file, not a link, owned by this user or root, not writable by group or
  /// others, at most 64 KiB); nullopt with *error set (naming the file and why) otherwise. Never blocks, never
  /// throws.
  static std::optional<PublicKey> load(const std::filesystem::path& pem, std::string* error);
  /// The key with these raw bytes; nullopt if OpenSSL refuses them.
  static std::optional<PublicKey> from_raw(const PublicKeyBytes& raw);

  /// True if signature is this key's ed25519 signature of message. Never throws.
  bool verify(std::string_view message, const SignatureBytes& signature) const noexcept;
  /// The raw bytes.
  const PublicKeyBytes& raw() const noexcept { return raw_; }
  /// key_id(raw()).
  std::string id() const { return key_id(raw_); }
  /// The key as a PEM "PUBLIC KEY" block.
  std::string pem() const;

 private:
  PublicKey(std::shared_ptr<evp_pkey_st> key, const PublicKeyBytes& raw) : key_(std::move(key)), raw_(raw) {}
  std::shared_ptr<evp_pkey_st> key_;
  PublicKeyBytes raw_{};
};

/// An ed25519 private key that signs entries. Immutable; thread-safe.
class SigningKey {
 public:
  /// The key of a PEM "PRIVATE KEY" file (PKCS#8, as `openssl genpkey -algorithm ed25519` and
  /// write_key_pair write it), read as PublicKey::load reads and refused, as ssh refuses one, if the group or
  /// others have any access to it (mode 0600 or 0400); nullopt with *error set for anything else. Never throws.
  static std::optional<SigningKey> load(const std::filesystem::path& pem, std::string* error);
  /// A fresh key from OpenSSL's random generator; nullopt if OpenSSL fails.
  static std::optional<SigningKey> generate();

  /// The ed25519 signature of message; nullopt only if OpenSSL fails (out of memory).
  std::optional<SignatureBytes> sign(std::string_view message) const noexcept;
  /// The matching public key.
  const PublicKey& public_key() const noexcept { return public_; }
  /// The key as a PEM "PRIVATE KEY" block (PKCS#8, unencrypted).
  std::string pem() const;

 private:
  SigningKey(std::shared_ptr<evp_pkey_st> key, PublicKey pub) : key_(std::move(key)), public_(std::move(pub)) {}
  std::shared_ptr<evp_pkey_st> key_;
  PublicKey public_;
};

/// The public keys whose signatures a reader accepts. Immutable once built; thread-safe to read.
class TrustedKeys {
 public:
  /// Adds key (a key already present is ignored).
  void add(const PublicKey& key);
  /// Adds every key of other.
  void add_all(const TrustedKeys& other);
  /// The trusted key with these raw bytes, or nullptr.
  const PublicKey* find(const PublicKeyBytes& raw) const noexcept;
  /// True if no key is trusted.
  bool empty() const noexcept { return keys_.empty(); }
  /// The number of keys.
  std::size_t size() const noexcept { return keys_.size(); }

  /// The keys of a colon-separated list of PEM files (empty items skipped); a file that
  /// cannot be loaded is left out and its reason appended to *errors. Never throws.
  static TrustedKeys load_list(std::string_view paths, std::vector<std::string>* errors);

 private:
  std::vector<PublicKey> keys_;
};

}  // namespace tropical::storage::remote
