#include "tropical/storage/sha256.hpp"

// The low-level SHA256_* calls are deprecated in OpenSSL 3 but need no provider: a fresh process's first
// EVP_Digest costs 0.85-1.3 ms (config load, default provider, method store) against 7 us here, and that
// first digest is on the warm-start path of every new process.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <new>

struct tropical::storage::Sha256::State {
  SHA256_CTX ctx;
};

namespace tropical::storage {

Sha256::Sha256() : state_(new State) {
  if (SHA256_Init(&state_->ctx) != 1) {
    delete state_;
    throw std::bad_alloc();
  }
}

Sha256::~Sha256() { delete state_; }

void Sha256::update(std::span<const std::byte> data) {
  if (!data.empty() && SHA256_Update(&state_->ctx, data.data(), data.size()) != 1) throw std::bad_alloc();
}

void Sha256::update(std::string_view data) { update(std::as_bytes(std::span<const char>(data))); }

Sha256::Digest Sha256::digest() {
  Digest out{};
  if (SHA256_Final(out.data(), &state_->ctx) != 1) throw std::bad_alloc();
  return out;
}

// Not the one-shot SHA256(): OpenSSL 3 implements it with EVP_Q_digest, a fetch.
Sha256::Digest Sha256::of(std::string_view data) {
  SHA256_CTX ctx;
  Digest out{};
  if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, data.data(), data.size()) != 1 ||
      SHA256_Final(out.data(), &ctx) != 1) {
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

}  // namespace tropical::storage
