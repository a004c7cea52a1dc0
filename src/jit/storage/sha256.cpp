#include "tropical/jit/storage/sha256.hpp"

#include <openssl/evp.h>

#include <new>

namespace tropical::jit {
namespace {

// Fetched once: EVP_sha256() would look the implementation up again on every init.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, sha256_md(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw std::bad_alloc();
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(std::span<const std::byte> data) {
  if (!data.empty() && EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1) throw std::bad_alloc();
}

void Sha256::update(std::string_view data) { update(std::as_bytes(std::span<const char>(data))); }

Sha256::Digest Sha256::digest() {
  Digest out{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_, out.data(), &size) != 1 || size != out.size()) throw std::bad_alloc();
  return out;
}

Sha256::Digest Sha256::of(std::string_view data) {
  Digest out{};
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &size, sha256_md(), nullptr) != 1 ||
      size != out.size()) {
    throw std::bad_alloc();
  }
  return out;
}

std::string Sha256::hex(const Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(digest.size() * 2, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace tropical::jit
