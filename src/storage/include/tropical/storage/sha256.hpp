#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tropical::storage {

/// SHA-256 (FIPS 180-4) from OpenSSL's libcrypto, incremental: update() any number of times, then digest().
/// Uses no OpenSSL provider, so a new process pays no OpenSSL start-up.
/// One object per thread; throws std::bad_alloc if libcrypto cannot allocate its state.
class Sha256 {
 public:
  /// The 32-byte hash value.
  using Digest = std::array<std::uint8_t, 32>;

  /// An empty hash state.
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  /// Feeds bytes into the hash; any split of a message gives the same digest.
  void update(std::span<const std::byte> data);
  /// Feeds the characters of data into the hash.
  void update(std::string_view data);
  /// Finishes the hash; the object must not be updated or finished again afterwards.
  Digest digest();

  /// The SHA-256 of data in one call.
  static Digest of(std::string_view data);
  /// The digest as 64 lower-case hexadecimal characters.
  static std::string hex(const Digest& digest);

 private:
  struct State;
  State* state_;
};

}  // namespace tropical::storage
