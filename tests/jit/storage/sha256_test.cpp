#include "tropical/storage/sha256.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tropical::storage {
namespace {

std::string hex_of(std::string_view message) { return Sha256::hex(Sha256::of(message)); }

// The wrapper of libcrypto's SHA-256 against the FIPS 180-4 vectors: the
// one-shot call, incremental updates split anywhere, and the hex form.

// FIPS 180-4 examples (NIST "SHA256.pdf" and the CAVP short/long messages).
TEST(Sha256, empty_message_matches_fips_vector) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, abc_matches_fips_vector) {
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, two_block_448_bit_message_matches_fips_vector) {
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, two_block_896_bit_message_matches_fips_vector) {
  EXPECT_EQ(hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
                   "nopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, one_million_a_matches_fips_vector) {
  EXPECT_EQ(hex_of(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, one_million_a_fed_in_uneven_chunks_matches_fips_vector) {
  const std::string million(1'000'000, 'a');
  Sha256 sha;
  std::size_t at = 0;
  for (std::size_t chunk = 1; at < million.size(); chunk = chunk * 3 % 1009 + 1) {
    const std::size_t n = std::min(chunk, million.size() - at);
    sha.update(std::string_view(million).substr(at, n));
    at += n;
  }
  EXPECT_EQ(Sha256::hex(sha.digest()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundaries (55/56 bytes: the length still fits in
// the last block or not; 64: an exact block). Expected values from Python's hashlib.
TEST(Sha256, messages_at_padding_boundaries_match_reference) {
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
  };
  for (const auto& [length, expected] : cases) {
    EXPECT_EQ(hex_of(std::string(length, 'a')), expected) << length << " bytes";
  }
}

TEST(Sha256, all_byte_values_hash_like_reference) {
  std::vector<std::byte> bytes;
  for (int round = 0; round < 4; ++round) {
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<std::byte>(b));
  }
  Sha256 sha;
  sha.update(bytes);
  EXPECT_EQ(Sha256::hex(sha.digest()), "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9");
}

TEST(Sha256, incremental_updates_split_anywhere_equal_one_shot) {
  std::string message;
  for (int i = 0; i < 200; ++i) message.push_back(static_cast<char>(i * 37 + 11));
  for (std::size_t length = 0; length <= message.size(); ++length) {
    const std::string_view whole = std::string_view(message).substr(0, length);
    const Sha256::Digest expected = Sha256::of(whole);
    for (std::size_t first = 0; first <= length; ++first) {
      for (std::size_t second = first; second <= length; second += 7) {
        Sha256 sha;
        sha.update(whole.substr(0, first));
        sha.update(whole.substr(first, second - first));
        sha.update(std::string_view{});
        sha.update(whole.substr(second));
        ASSERT_EQ(sha.digest(), expected) << "length " << length << " split " << first << "/" << second;
      }
    }
  }
}

TEST(Sha256, byte_and_string_updates_agree) {
  const std::string text = "tropical semiring";
  Sha256 sha;
  sha.update(std::as_bytes(std::span<const char>(text.data(), text.size())));
  EXPECT_EQ(sha.digest(), Sha256::of(text));
}

TEST(Sha256, hex_is_64_lower_case_digits) {
  const std::string hex = hex_of("abc");
  ASSERT_EQ(hex.size(), 64u);
  for (char c : hex) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << c;
}

TEST(Sha256, threads_hashing_at_once_agree) {
  const std::string message(100'000, 'x');
  const Sha256::Digest expected = Sha256::of(message);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        Sha256 sha;
        sha.update(std::string_view(message).substr(0, 333));
        sha.update(std::string_view(message).substr(333));
        if (sha.digest() != expected || Sha256::of(message) != expected) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tropical::storage
