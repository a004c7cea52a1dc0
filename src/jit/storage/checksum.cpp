#include "tropical/jit/storage/checksum.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <new>

namespace tropical::jit {
namespace {

// Part of the entry format: changing the key or the IV changes every checksum
// and needs a new kCacheFormatVersion.
constexpr unsigned char kKey[16] = {'t', 'r', 'o', 'p', 'i', 'c', 'a', 'l',
                                    '.', 'e', 'n', 't', 'r', 'y', '.', '3'};
constexpr unsigned char kIv[12] = {'c', 'h', 'e', 'c', 'k', 's', 'u', 'm', '.', 'i', 'v', '3'};

// The keyed state is made once (AES key schedule, GHASH tables) and copied
// for each checksum; EVP_MAC_CTX_dup only reads its source, so threads may share it.
const EVP_MAC_CTX* keyed_template() {
  static const EVP_MAC_CTX* const keyed = []() -> EVP_MAC_CTX* {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "GMAC", nullptr);
    if (mac == nullptr) return nullptr;
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (ctx == nullptr) return nullptr;
    char cipher[] = "AES-128-GCM";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, const_cast<unsigned char*>(kIv), sizeof kIv),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(ctx, kKey, sizeof kKey, params) != 1) {
      EVP_MAC_CTX_free(ctx);
      return nullptr;
    }
    return ctx;
  }();
  if (keyed == nullptr) throw std::bad_alloc();
  return keyed;
}

}  // namespace

Checksum::Checksum() : ctx_(EVP_MAC_CTX_dup(keyed_template())) {
  if (ctx_ == nullptr) throw std::bad_alloc();
}

Checksum::~Checksum() { EVP_MAC_CTX_free(ctx_); }

void Checksum::update(std::span<const std::byte> data) {
  if (!data.empty() &&
      EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
    throw std::bad_alloc();
  }
}

Checksum::Value Checksum::value() {
  Value out{};
  std::size_t size = 0;
  if (EVP_MAC_final(ctx_, out.data(), &size, out.size()) != 1 || size != out.size()) throw std::bad_alloc();
  return out;
}

Checksum::Value Checksum::of(std::span<const std::byte> data) {
  Checksum checksum;
  checksum.update(data);
  return checksum.value();
}

Checksum::Value Checksum::of(std::string_view data) { return of(std::as_bytes(std::span<const char>(data))); }

}  // namespace tropical::jit
