#include "tropical/storage/checksum.hpp"

// GMAC through libcrypto's low-level AES key schedule (deprecated in OpenSSL 3) and GCM mode (modes.h)
// rather than EVP_MAC: the "GMAC" fetch initializes OpenSSL's default provider, about 1 ms in a fresh
// process, on the warm-start path of every new process. Same bytes: GMAC is GCM's tag over
// the data as additional authenticated data, and GHASH still runs libcrypto's CLMUL/AVX code.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/aes.h>
#include <openssl/modes.h>

#include <new>

namespace tropical::storage {
namespace {

// Part of the entry format: changing the key or the IV changes every checksum
// and needs a new kCacheFormatVersion.
constexpr unsigned char kKey[16] = {'t', 'r', 'o', 'p', 'i', 'c', 'a', 'l',
                                    '.', 'e', 'n', 't', 'r', 'y', '.', '3'};
constexpr unsigned char kIv[12] = {'c', 'h', 'e', 'c', 'k', 's', 'u', 'm', '.', 'i', 'v', '3'};

// The AES key schedule is made once and only read afterwards, so threads may share it;
// each checksum keeps its own GCM state (GHASH tables, running hash).
AES_KEY* key_schedule() {
  static AES_KEY schedule = [] {
    AES_KEY made{};
    AES_set_encrypt_key(kKey, 128, &made);
    return made;
  }();
  return &schedule;
}

}  // namespace

Checksum::Checksum() : ctx_(CRYPTO_gcm128_new(key_schedule(), reinterpret_cast<block128_f>(AES_encrypt))) {
  if (ctx_ == nullptr) throw std::bad_alloc();
  CRYPTO_gcm128_setiv(ctx_, kIv, sizeof kIv);
}

Checksum::~Checksum() { CRYPTO_gcm128_release(ctx_); }

void Checksum::update(std::span<const std::byte> data) {
  if (!data.empty() &&
      CRYPTO_gcm128_aad(ctx_, reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 0) {
    throw std::bad_alloc();
  }
}

Checksum::Value Checksum::value() {
  Value out{};
  CRYPTO_gcm128_tag(ctx_, out.data(), out.size());
  return out;
}

Checksum::Value Checksum::of(std::span<const std::byte> data) {
  Checksum checksum;
  checksum.update(data);
  return checksum.value();
}

Checksum::Value Checksum::of(std::string_view data) { return of(std::as_bytes(std::span<const char>(data))); }

}  // namespace tropical::storage
