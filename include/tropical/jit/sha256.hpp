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
  using Digest = std::array<std::uint8_t, 32>;

  Sha256() noexcept;
  /// Feeds bytes into the hash.
  void update(std::span<const std::byte> data) noexcept;
  void update(std::string_view data) noexcept;
  /// Finishes the hash; the object must not be updated afterwards.
  Digest digest() noexcept;

  /// One-shot helpers.
  static Digest of(std::string_view data) noexcept;
  static std::string hex(const Digest& digest);

 private:
  void block(const std::uint8_t* p) noexcept;
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_;
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace tropical::jit
