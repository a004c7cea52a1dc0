// The entry checksum (GMAC from libcrypto under the format's fixed key):
// pinned values, any split, and every flipped bit of a 77 kB image seen.
#include "tropical/storage/checksum.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace tropical::storage {
namespace {

std::string hex(const Checksum::Value& value) {
  std::string out;
  char byte[3];
  for (auto b : value) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    out += byte;
  }
  return out;
}

// Part of the entry format: a change here needs a new kCacheFormatVersion. The values agree with
// `openssl mac -cipher AES-128-GCM -macopt hexkey:<"tropical.entry.3"> -macopt hexiv:<"checksum.iv3"> GMAC`.
TEST(Checksum, values_are_pinned_by_the_format) {
  EXPECT_EQ(hex(Checksum::of(std::string_view(""))), "d6e2aa5cb125bed6bca87b58712a6284");
  EXPECT_EQ(hex(Checksum::of(std::string_view("abc"))), "adf355eb81c0daeb8b624bfab3776b69");
}

TEST(Checksum, incremental_updates_split_anywhere_equal_one_shot) {
  std::string message;
  for (int i = 0; i < 300; ++i) message.push_back(static_cast<char>(i * 29 + 3));
  const Checksum::Value whole = Checksum::of(message);
  for (std::size_t first = 0; first <= message.size(); first += 5) {
    for (std::size_t second = first; second <= message.size(); second += 17) {
      Checksum sum;
      const std::string_view m(message);
      sum.update(std::as_bytes(std::span(m.substr(0, first))));
      sum.update(std::as_bytes(std::span(m.substr(first, second - first))));
      sum.update(std::as_bytes(std::span(m.substr(second))));
      ASSERT_EQ(sum.value(), whole) << first << "/" << second;
    }
  }
}

TEST(Checksum, every_flipped_bit_of_a_cubin_sized_message_changes_the_value) {
  std::string message(77'552, '\0');
  for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>(i * 131 + (i >> 9));
  const Checksum::Value original = Checksum::of(message);
  for (std::size_t bit = 0; bit < message.size() * 8; bit += 997) {
    message[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_NE(Checksum::of(message), original) << "bit " << bit;
    message[bit / 8] ^= static_cast<char>(1 << (bit % 8));
  }
  message.push_back('\0');
  EXPECT_NE(Checksum::of(message), original) << "a zero byte appended";
}

TEST(Checksum, threads_checksumming_at_once_agree) {
  const std::string message(50'000, 'q');
  const Checksum::Value expected = Checksum::of(message);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (Checksum::of(message) != expected) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tropical::storage
