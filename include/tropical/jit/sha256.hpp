#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tropical::jit {

/// SHA-256 (FIPS 180-4), incremental: update() any number of times, then digest().
class Sha256 {
 public:
  /// The 32-byte hash value.
  using Digest = std::array<std::uint8_t, 32>;

  /// An empty hash state; not thread-safe (one object per thread).
  Sha256() noexcept;
  /// Feeds bytes into the hash; any split of a message gives the same digest.
  void update(std::span<const std::byte> data) noexcept;
  /// Feeds the characters of data into the hash.
  void update(std::string_view data) noexcept;
  /// Finishes the hash; the object must not be updated or finished again afterwards.
  Digest digest() noexcept;

  /// The SHA-256 of data in one call.
  static Digest of(std::string_view data) noexcept;
  /// The digest as 64 lower-case hexadecimal characters.
  static std::string hex(const Digest& digest);

  /// True if hashing uses the CPU's SHA instructions (x86-64 SHA extensions);
  /// digests are identical either way.
  static bool hardware_accelerated() noexcept;
  /// Forces the portable code (true) or restores the automatic choice (false),
  /// for every Sha256 in the process; for tests and benchmarks. Thread-safe.
  static void force_portable(bool portable) noexcept;

 private:
  void blocks(const std::uint8_t* p, std::size_t count) noexcept;
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_;
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace tropical::jit
