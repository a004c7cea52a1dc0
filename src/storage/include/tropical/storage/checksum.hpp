#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

struct gcm128_context;

namespace tropical::storage {

/// The checksum of cache entries: GMAC (AES-128-GCM's GHASH, a polynomial hash over GF(2^128)) under a
/// fixed, published key, from libcrypto without an OpenSSL provider, about four times faster than SHA-256 on
/// CLMUL hardware. It detects damage (a random error pattern passes with probability about length/2^128), not
/// forgery: anyone who can write a cache directory can write a valid entry, so trust comes from the directory,
/// never from this value.
/// Incremental; one object per thread; throws std::bad_alloc if libcrypto cannot allocate.
class Checksum {
 public:
  /// The 16-byte checksum value.
  using Value = std::array<std::uint8_t, 16>;

  /// An empty checksum state.
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  /// Feeds bytes; any split of a message gives the same value.
  void update(std::span<const std::byte> data);
  /// Finishes; the object must not be used again afterwards.
  Value value();

  /// The checksum of data in one call.
  static Value of(std::span<const std::byte> data);
  /// The checksum of the characters of data in one call.
  static Value of(std::string_view data);

 private:
  gcm128_context* ctx_;
};

}  // namespace tropical::storage
