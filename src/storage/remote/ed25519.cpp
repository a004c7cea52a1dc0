#include "tropical/storage/remote/ed25519.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>

#include "tropical/storage/trusted_file.hpp"

namespace tropical::storage::remote {
namespace {

using KeyPtr = std::shared_ptr<EVP_PKEY>;

KeyPtr own(EVP_PKEY* key) { return KeyPtr(key, EVP_PKEY_free); }

// A key file through the one door (trusted_file.hpp): a regular file of at most 64 KiB owned by this user or
// root, not writable by others; a private key not readable by them either. A PEM key is a few hundred bytes.
bool read_key_file(const std::filesystem::path& path, bool secret, std::string* text, std::string* error) {
  TrustRule rule;
  rule.secret = secret;
  TrustedRead read = read_trusted_file(path, rule);
  if (!read.bytes) {
    *error = path.string() + ": " + read.reason;
    return false;
  }
  *text = std::move(*read.bytes);
  return true;
}

// The first OpenSSL error of this thread as text, and the queue emptied.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "not an ed25519 key";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

bool raw_public(EVP_PKEY* key, PublicKeyBytes* raw) {
  std::size_t length = raw->size();
  return EVP_PKEY_get_raw_public_key(key, raw->data(), &length) == 1 && length == raw->size();
}

std::string to_pem(EVP_PKEY* key, bool private_part) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (bio == nullptr) return {};
  const int ok = private_part ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                              : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return {};
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(length));
}

}  // namespace

std::string key_id(const PublicKeyBytes& key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "ed25519:";
  for (unsigned i = 0; i < 8 && i < length; ++i) {
    id += kHex[digest[i] >> 4];
    id += kHex[digest[i] & 15];
  }
  return id;
}

std::optional<PublicKey> PublicKey::load(const std::filesystem::path& pem, std::string* error) {
  std::string text;
  if (!read_key_file(pem, false, &text, error)) return std::nullopt;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
                                                BIO_free);
  KeyPtr key = own(bio != nullptr ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  PublicKeyBytes raw{};
  if (key == nullptr || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519 || !raw_public(key.get(), &raw)) {
    *error = pem.string() + ": not a PEM ed25519 public key (" + openssl_error() + ")";
    return std::nullopt;
  }
  return PublicKey(std::move(key), raw);
}

std::optional<PublicKey> PublicKey::from_raw(const PublicKeyBytes& raw) {
  KeyPtr key = own(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw.data(), raw.size()));
  if (key == nullptr) {
    ERR_clear_error();
    return std::nullopt;
  }
  return PublicKey(std::move(key), raw);
}

bool PublicKey::verify(std::string_view message, const SignatureBytes& signature) const noexcept {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) return false;
  // Ed25519 hashes the message itself: no digest is named (NULL md), and it is one-shot.
  bool ok = EVP_DigestVerifyInit(context, nullptr, nullptr, nullptr, key_.get()) == 1 &&
            EVP_DigestVerify(context, signature.data(), signature.size(),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(context);
  if (!ok) ERR_clear_error();
  return ok;
}

std::string PublicKey::pem() const { return to_pem(key_.get(), false); }

std::optional<SigningKey> SigningKey::load(const std::filesystem::path& pem, std::string* error) {
  std::string text;
  if (!read_key_file(pem, true, &text, error)) return std::nullopt;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
                                                BIO_free);
  // No password callback: an encrypted key fails instead of prompting on the terminal.
  static pem_password_cb* const no_prompt = [](char*, int, int, void*) { return -1; };
  KeyPtr key = own(bio != nullptr ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_prompt, nullptr) : nullptr);
  PublicKeyBytes raw{};
  if (key == nullptr || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519 || !raw_public(key.get(), &raw)) {
    *error = pem.string() + ": not an unencrypted PEM ed25519 private key (" + openssl_error() + ")";
    return std::nullopt;
  }
  auto pub = PublicKey::from_raw(raw);
  if (!pub) {
    *error = pem.string() + ": its public key is refused by OpenSSL";
    return std::nullopt;
  }
  return SigningKey(std::move(key), std::move(*pub));
}

std::optional<SigningKey> SigningKey::generate() {
  KeyPtr key = own(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  PublicKeyBytes raw{};
  if (key == nullptr || !raw_public(key.get(), &raw)) {
    ERR_clear_error();
    return std::nullopt;
  }
  auto pub = PublicKey::from_raw(raw);
  if (!pub) return std::nullopt;
  return SigningKey(std::move(key), std::move(*pub));
}

std::optional<SignatureBytes> SigningKey::sign(std::string_view message) const noexcept {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) return std::nullopt;
  SignatureBytes signature{};
  std::size_t length = signature.size();
  const bool ok = EVP_DigestSignInit(context, nullptr, nullptr, nullptr, key_.get()) == 1 &&
                  EVP_DigestSign(context, signature.data(), &length,
                                 reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1 &&
                  length == signature.size();
  EVP_MD_CTX_free(context);
  if (!ok) {
    ERR_clear_error();
    return std::nullopt;
  }
  return signature;
}

std::string SigningKey::pem() const { return to_pem(key_.get(), true); }

void TrustedKeys::add(const PublicKey& key) {
  if (find(key.raw()) == nullptr) keys_.push_back(key);
}

void TrustedKeys::add_all(const TrustedKeys& other) {
  for (const PublicKey& key : other.keys_) add(key);
}

const PublicKey* TrustedKeys::find(const PublicKeyBytes& raw) const noexcept {
  const auto it = std::find_if(keys_.begin(), keys_.end(), [&](const PublicKey& k) { return k.raw() == raw; });
  return it != keys_.end() ? &*it : nullptr;
}

TrustedKeys TrustedKeys::load_list(std::string_view paths, std::vector<std::string>* errors) {
  TrustedKeys keys;
  while (!paths.empty()) {
    const auto colon = paths.find(':');
    const std::string_view item = paths.substr(0, colon);
    paths = colon == std::string_view::npos ? std::string_view() : paths.substr(colon + 1);
    if (item.empty()) continue;
    std::string error;
    if (auto key = PublicKey::load(std::filesystem::path(item), &error)) {
      keys.add(*key);
    } else {
      errors->push_back(error);
    }
  }
  return keys;
}

}  // namespace tropical::storage::remote
