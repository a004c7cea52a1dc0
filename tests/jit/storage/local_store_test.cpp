// The local directory tier: the disk cache's behaviour before the storage
// split (one process, several, killed writers, damage, limits, security,
// degrading, statistics), and the red-team families of issue 10.
#include "tropical/jit/storage/local_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <latch>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "test_support.hpp"
#include "tropical/jit/storage/atomic_file.hpp"
#include "tropical/jit/storage/checksum.hpp"
#include "tropical/jit/storage/entry.hpp"

namespace tropical::jit {
namespace {

using namespace test;

// ---------------------------------------------------------------------------
// One process.

TEST_F(LocalStoreTest, miss_compiles_once_then_hits_from_disk) {
  LocalStore cache(config());
  int calls = 0;
  bool compiled = false;
  const auto compile = [&] {
    ++calls;
    return make_image(1);
  };
  EXPECT_TRUE(same(cache.get_or_compile(make_key(1), compile, &compiled), make_image(1)));
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(cache.get_or_compile(make_key(1), compile, &compiled), cubin_only(make_image(1))));
  EXPECT_FALSE(compiled);
  EXPECT_EQ(calls, 1);

  LocalStore other(config());
  const auto loaded = other.load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(same(*loaded, make_image(1)));

  const CacheStats stats = cache.process_stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_EQ(stats.bytes_written, fs::file_size(cache.entry_path(make_key(1))));
  EXPECT_EQ(stats.bytes_read, stats.bytes_written - make_image(1).ptx.size()) << "the hit read no PTX";
  EXPECT_EQ(other.process_stats().bytes_read, stats.bytes_written);
}

TEST_F(LocalStoreTest, absent_key_is_a_miss_but_not_an_error) {
  LocalStore cache(config());
  EXPECT_FALSE(cache.load(make_key(7)).has_value());
  EXPECT_EQ(cache.process_stats().misses, 1u);
  EXPECT_EQ(cache.process_stats().errors, 0u);
}

TEST_F(LocalStoreTest, different_keys_get_different_entries) {
  LocalStore cache(config());
  for (int i = 0; i < 4; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  for (int i = 0; i < 4; ++i) {
    const auto loaded = cache.load(make_key(i), ImageParts::kCubinAndPtx);
    ASSERT_TRUE(loaded.has_value());
    EXPECT_TRUE(same(*loaded, make_image(i)));
  }
  EXPECT_EQ(cache.info().entries, 4u);
}

TEST_F(LocalStoreTest, empty_and_large_images_round_trip) {
  LocalStore cache(config());
  CompiledImage empty;
  cache.get_or_compile(make_key(1), [&] { return empty; });
  const CompiledImage large = make_image(2, 5 << 20);
  cache.get_or_compile(make_key(2), [&] { return large; });
  LocalStore other(config());
  const auto loaded_empty = other.load(make_key(1), ImageParts::kCubinAndPtx);
  const auto loaded_large = other.load(make_key(2), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded_empty && loaded_large);
  EXPECT_TRUE(same(*loaded_empty, empty));
  EXPECT_TRUE(same(*loaded_large, large));
  const auto large_cubin = other.load(make_key(2));
  ASSERT_TRUE(large_cubin.has_value());
  EXPECT_TRUE(same(*large_cubin, cubin_only(large)));
}

TEST_F(LocalStoreTest, hit_without_ptx_returns_the_cubin_and_reads_no_ptx) {
  const CompiledImage image = make_image(1, 20000);
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [&] { return image; });
  }
  LocalStore cache(config());
  const std::uint64_t size = fs::file_size(cache.entry_path(make_key(1)));
  const auto loaded = cache.load(make_key(1));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->cubin, image.cubin);
  EXPECT_TRUE(loaded->ptx.empty());
  EXPECT_EQ(cache.process_stats().bytes_read, size - image.ptx.size());

  bool compiled = true;
  const CompiledImage hit = cache.get_or_compile(
      make_key(1), [&] { return image; }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(hit.cubin, image.cubin);
  EXPECT_TRUE(hit.ptx.empty());
  EXPECT_EQ(cache.process_stats().hits, 2u);
}

TEST_F(LocalStoreTest, hit_with_ptx_returns_cubin_and_ptx) {
  const CompiledImage image = make_image(1, 20000);
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [&] { return image; });
  }
  LocalStore cache(config());
  const auto loaded = cache.load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(same(*loaded, image));
  EXPECT_EQ(cache.process_stats().bytes_read, fs::file_size(cache.entry_path(make_key(1))));

  bool compiled = true;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(1), [&] { return image; }, &compiled, ImageParts::kCubinAndPtx),
                   image));
  EXPECT_FALSE(compiled);
  EXPECT_EQ(cache.process_stats().errors, 0u);
}

TEST_F(LocalStoreTest, fresh_compile_returns_the_whole_image_whatever_the_parts_asked) {
  LocalStore cache(config());
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(1), [] { return make_image(1); }, &compiled),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(2), [] { return make_image(2); }, &compiled, ImageParts::kCubin),
                   make_image(2)));
  EXPECT_TRUE(compiled);
}

TEST_F(LocalStoreTest, write_stages_are_reported_in_order) {
  std::vector<WriteStage> stages;
  CacheConfig c = config();
  c.test_hook = [&](WriteStage stage) { stages.push_back(stage); };
  LocalStore cache(c);
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  EXPECT_EQ(stages,
            (std::vector<WriteStage>{WriteStage::kLocked, WriteStage::kCompiled, WriteStage::kTempWritten,
                                     WriteStage::kSynced, WriteStage::kRenamed}));
  stages.clear();
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  EXPECT_TRUE(stages.empty()) << "a hit takes no lock and writes nothing";
}

TEST_F(LocalStoreTest, compile_exception_propagates_stores_nothing_and_releases_the_lock) {
  LocalStore cache(config());
  EXPECT_THROW(
      cache.get_or_compile(make_key(1), []() -> CompiledImage { throw std::runtime_error("nvrtc"); }),
      std::runtime_error);
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
  EXPECT_EQ(cache.process_stats().compiles, 0u);

  // Another process can take the lock at once.
  Child child([&] {
    LocalStore cache_in_child(config());
    bool compiled = false;
    const auto image = cache_in_child.get_or_compile(
        make_key(1), [] { return make_image(1); }, &compiled);
    return compiled && same(image, make_image(1)) ? 0 : 1;
  });
  const Outcome outcome = child.wait(20s);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_code, 0);

  // And so can this one.
  bool compiled = true;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(1), [] { return make_image(1); }, &compiled),
                   cubin_only(make_image(1))));
  EXPECT_FALSE(compiled);
}

TEST_F(LocalStoreTest, temporary_files_are_not_left_behind_after_stores) {
  LocalStore cache(config());
  for (int i = 0; i < 3; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(item.path().filename().string().starts_with(kTempPrefix)) << item.path();
  }
}

TEST_F(LocalStoreTest, no_descriptors_stay_open_after_lookups_and_stores) {
  const auto open_descriptors = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator());
  };
  LocalStore cache(config());
  const auto before = open_descriptors();
  for (int i = 0; i < 20; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(cache.load(make_key(i)).has_value());
  EXPECT_EQ(open_descriptors(), before);
}

// ---------------------------------------------------------------------------
// Several processes and threads.

TEST_F(LocalStoreTest, second_process_reads_entry_without_compiling) {
  Child writer([&] {
    LocalStore cache(config());
    bool compiled = false;
    const auto image = cache.get_or_compile(
        make_key(1), [] { return make_image(1); }, &compiled);
    return compiled && same(image, make_image(1)) ? 0 : 1;
  });
  ASSERT_EQ(writer.wait().exit_code, 0);

  Child reader([&] {
    LocalStore cache(config());
    int calls = 0;
    bool compiled = true;
    const auto image = cache.get_or_compile(
        make_key(1),
        [&] {
          ++calls;
          return make_image(1);
        },
        &compiled);
    if (calls != 0 || compiled) return 2;
    return same(image, cubin_only(make_image(1))) ? 0 : 3;
  });
  ASSERT_EQ(reader.wait().exit_code, 0);

  LocalStore cache(config());
  EXPECT_EQ(cache.machine_stats().compiles, 1u);
  EXPECT_EQ(cache.machine_stats().hits, 1u);
}

TEST_F(LocalStoreTest, eight_processes_racing_on_five_keys_compile_each_key_once) {
  constexpr int kProcesses = 8;
  constexpr int kKeys = 5;
  SharedCounters compiles(kKeys);
  int barrier[2];
  ASSERT_EQ(::pipe(barrier), 0);
  std::vector<std::unique_ptr<Child>> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(std::make_unique<Child>([&, p] {
      ::close(barrier[1]);
      LocalStore cache(config());
      char byte;
      if (::read(barrier[0], &byte, 1) != 0) return 10;  // released together when the parent closes its end
      for (int k = 0; k < kKeys; ++k) {
        const int key = (k + p) % kKeys;  // different orders, so every key is contended
        const auto image = cache.get_or_compile(
            make_key(key),
            [&] {
              compiles.add(static_cast<std::size_t>(key));
              std::this_thread::sleep_for(50ms);
              return make_image(key);
            },
            nullptr, ImageParts::kCubinAndPtx);
        if (!same(image, make_image(key))) return 20 + key;
      }
      return 0;
    }));
  }
  ::close(barrier[0]);
  std::this_thread::sleep_for(50ms);
  ::close(barrier[1]);
  for (auto& child : children) {
    const Outcome outcome = child->wait(30s);
    EXPECT_FALSE(outcome.timed_out);
    EXPECT_EQ(outcome.exit_code, 0);
  }
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(compiles.get(static_cast<std::size_t>(k)), 1u) << "key " << k;
  LocalStore cache(config());
  const CacheStats stats = cache.machine_stats();
  EXPECT_EQ(stats.compiles, static_cast<std::uint64_t>(kKeys));
  EXPECT_EQ(stats.misses, static_cast<std::uint64_t>(kKeys));
  EXPECT_EQ(stats.hits, static_cast<std::uint64_t>(kProcesses * kKeys - kKeys));
  EXPECT_EQ(stats.errors, 0u);
}

TEST_F(LocalStoreTest, threads_racing_on_one_key_compile_once) {
  constexpr int kThreads = 8;
  LocalStore cache(config());
  std::atomic<int> calls{0};
  std::atomic<int> wrong{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      bool compiled = false;
      const auto image = cache.get_or_compile(
          make_key(1),
          [&] {
            ++calls;
            std::this_thread::sleep_for(50ms);
            return make_image(1);
          },
          &compiled);
      if (!same(image, expected(1, compiled))) ++wrong;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.process_stats().compiles, 1u);
  EXPECT_EQ(cache.process_stats().hits, static_cast<std::uint64_t>(kThreads - 1));
}

TEST_F(LocalStoreTest, threads_of_two_caches_on_one_directory_compile_each_key_once) {
  constexpr int kThreads = 8;
  constexpr int kKeys = 12;
  LocalStore first(config());
  LocalStore second(config());
  std::array<std::atomic<int>, kKeys> calls{};
  std::atomic<int> wrong{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LocalStore& cache = t % 2 == 0 ? first : second;
      start.arrive_and_wait();
      for (int k = 0; k < kKeys; ++k) {
        const int key = (k * 5 + t) % kKeys;
        bool compiled = false;
        const auto image = cache.get_or_compile(
            make_key(key),
            [&] {
              ++calls[static_cast<std::size_t>(key)];
              std::this_thread::sleep_for(5ms);
              return make_image(key);
            },
            &compiled);
        if (!same(image, expected(key, compiled))) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(calls[static_cast<std::size_t>(k)].load(), 1) << "key " << k;
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(LocalStoreTest, waiter_takes_over_when_the_lock_holder_is_killed) {
  int holding[2];
  ASSERT_EQ(::pipe(holding), 0);
  CacheConfig dying = config();
  dying.test_hook = [&](WriteStage stage) {
    if (stage != WriteStage::kLocked) return;
    const char byte = 1;
    if (::write(holding[1], &byte, 1) != 1) std::abort();
    std::this_thread::sleep_for(300ms);  // long enough for the waiter to block on the lock
    ::raise(SIGKILL);
  };
  Child holder([&] {
    LocalStore cache(dying);
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    return 1;
  });
  ::close(holding[1]);
  char byte;
  ASSERT_EQ(::read(holding[0], &byte, 1), 1);
  ::close(holding[0]);

  Child waiter([&] {
    LocalStore cache(config());
    bool compiled = false;
    const auto image = cache.get_or_compile(
        make_key(1), [] { return make_image(1); }, &compiled);
    return compiled && same(image, make_image(1)) ? 0 : 1;
  });
  EXPECT_EQ(holder.wait().signal, SIGKILL);
  const Outcome outcome = waiter.wait(20s);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_code, 0);
}

// ---------------------------------------------------------------------------
// A writer killed at each stage.

class KilledWriter : public LocalStoreTest, public ::testing::WithParamInterface<WriteStage> {};

TEST_P(KilledWriter, leaves_no_bad_entry_and_no_stale_lock) {
  const WriteStage kill_at = GetParam();
  CacheConfig dying = config();
  dying.test_hook = [&](WriteStage stage) {
    if (stage == kill_at) ::raise(SIGKILL);
  };
  Child writer([&] {
    LocalStore cache(dying);
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    return 1;
  });
  EXPECT_EQ(writer.wait().signal, SIGKILL);

  const bool renamed = kill_at == WriteStage::kRenamed;
  LocalStore cache(config());
  const auto loaded = cache.load(make_key(1));
  EXPECT_EQ(loaded.has_value(), renamed);
  if (loaded) {
    EXPECT_TRUE(same(*loaded, cubin_only(make_image(1))));
  }
  EXPECT_EQ(cache.process_stats().errors, 0u) << "an unfinished write leaves no entry at all";

  // The next writer neither hangs on the dead writer's lock nor reads a half-written entry.
  Child next([&] {
    LocalStore cache_in_child(config());
    bool compiled = false;
    const auto image = cache_in_child.get_or_compile(
        make_key(1), [] { return make_image(1); }, &compiled);
    if (compiled == renamed) return 2;
    return same(image, expected(1, compiled)) ? 0 : 3;
  });
  const Outcome outcome = next.wait(20s);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_code, 0);
  const auto after = cache.load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(same(*after, make_image(1)));
}

std::string stage_name(const ::testing::TestParamInfo<WriteStage>& info) {
  constexpr const char* kNames[] = {"locked", "compiled", "temp_written", "synced", "renamed"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(AtEveryStage, KilledWriter,
                         ::testing::Values(WriteStage::kLocked, WriteStage::kCompiled,
                                           WriteStage::kTempWritten, WriteStage::kSynced,
                                           WriteStage::kRenamed),
                         stage_name);

// ---------------------------------------------------------------------------
// Damaged entries.

enum class Damage {
  kTruncatedByOneByte,
  kTruncatedInPtx,
  kTruncatedToHeader,
  kFlippedCubinByte,
  kFlippedPtxByte,
  kFlippedKeyByte,
  kFlippedChecksumByte,
  kFlippedPtxChecksumByte,
  kFlippedSizeField,
  kOtherFormatVersion,
  kZeroLength,
  kForeignFile,
  kAppendedByte,
};

// Offsets of the entry layout: version at 8, key size at 16, cubin size at 24, ptx size at 32,
// PTX checksum at 40, main checksum (header before it + key + cubin) at 56, key at 72.
constexpr std::size_t kPtxChecksumAt = 40;
constexpr std::size_t kChecksumAt = 56;
constexpr std::size_t kKeyAt = 72;
static_assert(kPtxChecksumAt == kEntryPtxChecksumOffset && kChecksumAt == kEntryChecksumOffset &&
              kKeyAt == kEntryHeaderSize);

std::uint64_t u64_at(const std::string& bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void damage(const fs::path& path, Damage kind) {
  std::string bytes = read_file(path);
  ASSERT_GT(bytes.size(), 200u);
  const std::uint64_t ptx_size = u64_at(bytes, 32);
  ASSERT_GT(ptx_size, 4u);
  switch (kind) {
    case Damage::kTruncatedByOneByte:
      bytes.pop_back();
      break;
    case Damage::kTruncatedInPtx:
      bytes.resize(bytes.size() - ptx_size / 2);
      break;
    case Damage::kTruncatedToHeader:
      bytes.resize(kKeyAt);
      break;
    case Damage::kFlippedCubinByte:
      bytes[bytes.size() / 2] ^= 0x01;
      break;
    case Damage::kFlippedPtxByte:
      bytes[bytes.size() - 2] ^= 0x20;
      break;
    case Damage::kFlippedKeyByte:
      bytes[kKeyAt + 8] ^= 0x01;
      break;
    case Damage::kFlippedChecksumByte:
      bytes[kChecksumAt + 10] ^= 0x80;
      break;
    case Damage::kFlippedPtxChecksumByte:
      bytes[kPtxChecksumAt + 10] ^= 0x80;
      break;
    case Damage::kFlippedSizeField:
      bytes[24] ^= 0x01;
      bytes[32] ^= 0x01;
      break;
    case Damage::kOtherFormatVersion: {
      // Only the version differs: the main checksum is recomputed to match.
      bytes[8] = static_cast<char>(kCacheFormatVersion + 1);
      Checksum sum;
      sum.update(std::as_bytes(std::span(std::string_view(bytes).substr(0, kChecksumAt))));
      sum.update(std::as_bytes(
          std::span(std::string_view(bytes).substr(kKeyAt, u64_at(bytes, 16) + u64_at(bytes, 24)))));
      const auto checksum = sum.value();
      std::memcpy(bytes.data() + kChecksumAt, checksum.data(), checksum.size());
      break;
    }
    case Damage::kZeroLength:
      bytes.clear();
      break;
    case Damage::kForeignFile:
      bytes = std::string(bytes.size(), 'z');
      break;
    case Damage::kAppendedByte:
      bytes.push_back('\0');
      break;
  }
  write_file(path, bytes);
  ASSERT_EQ(mode_of(path), 0600u);
}

class DamagedEntry : public LocalStoreTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(DamagedEntry, is_detected_recompiled_and_replaced) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), GetParam());

  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);

  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [] { return make_image(1); }, &compiled, ImageParts::kCubinAndPtx),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  EXPECT_EQ(cache.process_stats().errors, 2u) << "one per lookup that met the bad entry";

  LocalStore reader(config());
  const auto loaded = reader.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value()) << "the bad entry was replaced";
  EXPECT_TRUE(same(*loaded, make_image(1)));
  EXPECT_EQ(reader.process_stats().errors, 0u);
}

// A CUBIN-only load reads no PTX byte, so damage confined to the PTX bytes
// goes unseen (and harms nothing it returns); every other damage, a PTX
// region of the wrong length included, is a miss counted as an error.
TEST_P(DamagedEntry, is_a_miss_for_a_cubin_only_load_unless_only_ptx_bytes_changed) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), GetParam());
  const bool unseen = GetParam() == Damage::kFlippedPtxByte;

  const auto loaded = cache.load(key);
  EXPECT_EQ(loaded.has_value(), unseen);
  if (loaded) {
    EXPECT_TRUE(same(*loaded, cubin_only(make_image(1))));
  }
  EXPECT_EQ(cache.process_stats().errors, unseen ? 0u : 1u);

  bool compiled = unseen;
  const CompiledImage image = cache.get_or_compile(
      key, [] { return make_image(1); }, &compiled);
  EXPECT_EQ(compiled, !unseen);
  EXPECT_TRUE(same(image, expected(1, compiled)));
}

std::string damage_name(const ::testing::TestParamInfo<Damage>& info) {
  constexpr const char* kNames[] = {
      "truncated_by_one_byte", "truncated_in_ptx",     "truncated_to_header",   "flipped_cubin_byte",
      "flipped_ptx_byte",      "flipped_key_byte",     "flipped_checksum_byte", "flipped_ptx_checksum_byte",
      "flipped_size_field",    "other_format_version", "zero_length",           "foreign_file",
      "appended_byte"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(EachKind, DamagedEntry,
                         ::testing::Values(Damage::kTruncatedByOneByte, Damage::kTruncatedInPtx,
                                           Damage::kTruncatedToHeader, Damage::kFlippedCubinByte,
                                           Damage::kFlippedPtxByte, Damage::kFlippedKeyByte,
                                           Damage::kFlippedChecksumByte, Damage::kFlippedPtxChecksumByte,
                                           Damage::kFlippedSizeField, Damage::kOtherFormatVersion,
                                           Damage::kZeroLength, Damage::kForeignFile, Damage::kAppendedByte),
                         damage_name);

TEST_F(LocalStoreTest, flipped_ptx_byte_fails_a_ptx_load_but_not_a_cubin_only_load) {
  const CacheKey key = make_key(1);
  {
    LocalStore writer(config());
    writer.get_or_compile(key, [] { return make_image(1); });
  }
  LocalStore cache(config());
  damage(cache.entry_path(key), Damage::kFlippedPtxByte);

  const auto cubin = cache.load(key);
  ASSERT_TRUE(cubin.has_value()) << "a CUBIN-only load does not look at the PTX";
  EXPECT_TRUE(same(*cubin, cubin_only(make_image(1))));
  EXPECT_EQ(cache.process_stats().errors, 0u);

  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  EXPECT_EQ(cache.process_stats().misses, 1u);

  // Asking for the PTX through get_or_compile replaces the entry.
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [] { return make_image(1); }, &compiled, ImageParts::kCubinAndPtx),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  const auto repaired = cache.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_TRUE(same(*repaired, make_image(1)));
}

TEST_F(LocalStoreTest, entries_of_format_version_1_are_misses) {
  const CacheKey key = make_key(1);
  const CompiledImage image = make_image(1);
  // Version 1: one checksum over the header before it, the key, the CUBIN and the PTX.
  const auto v1_entry = [&](const std::string& serialized_key) {
    std::string bytes("TROPJIT\n");
    put_u32(bytes, 1);
    put_u32(bytes, 0);
    put_u64(bytes, serialized_key.size());
    put_u64(bytes, image.cubin.size());
    put_u64(bytes, image.ptx.size());
    std::string body = serialized_key;
    body.append(reinterpret_cast<const char*>(image.cubin.data()), image.cubin.size());
    body += image.ptx;
    Sha256 sha;
    sha.update(bytes);
    sha.update(body);
    const auto checksum = sha.digest();
    bytes.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
    return bytes + body;
  };
  const auto write_entry = [](const fs::path& path, const std::string& bytes) {
    write_file(path, bytes);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  };
  // The key's serialization holds the format version after its 8-byte-length-prefixed tag.
  const std::string serialized = key.serialize();
  constexpr std::size_t kVersionAt = 8 + std::string_view("tropical.jit.CacheKey").size();
  ASSERT_EQ(serialized[kVersionAt], static_cast<char>(kCacheFormatVersion));
  std::string serialized_v1 = serialized;
  serialized_v1[kVersionAt] = 1;

  LocalStore cache(config());
  // What version 1 wrote for this key lies under another name: never even looked at.
  const fs::path v1_path = dir_ / (Sha256::hex(Sha256::of(serialized_v1)) + ".entry");
  write_entry(v1_path, v1_entry(serialized_v1));
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_EQ(cache.process_stats().errors, 0u);

  // A version 1 entry under the current name (with the current key) is a bad entry, and is replaced.
  write_entry(cache.entry_path(key), v1_entry(serialized));
  EXPECT_FALSE(cache.load(key).has_value());
  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_EQ(cache.process_stats().errors, 2u);
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       key, [&] { return image; }, &compiled),
                   image));
  EXPECT_TRUE(compiled);
  const auto loaded = cache.load(key, ImageParts::kCubinAndPtx);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(same(*loaded, image));
}

TEST_F(LocalStoreTest, entry_of_another_key_under_this_name_is_a_miss) {
  // A digest collision, simulated: key 2's entry copied under key 1's name.
  LocalStore cache(config());
  cache.get_or_compile(make_key(2), [] { return make_image(2); });
  fs::copy_file(cache.entry_path(make_key(2)), cache.entry_path(make_key(1)));
  fs::permissions(cache.entry_path(make_key(1)), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  EXPECT_TRUE(same(cache.get_or_compile(make_key(1), [] { return make_image(1); }), make_image(1)));
}

TEST_F(LocalStoreTest, directory_under_entry_name_is_an_error_and_degrades_with_one_warning) {
  LocalStore cache(config());
  fs::create_directory(cache.entry_path(make_key(1)));
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  ::testing::internal::CaptureStderr();
  const auto first = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const auto second = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(first, make_image(1)));
  EXPECT_TRUE(same(second, make_image(1)));
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find(dir_.string()), std::string::npos) << err;
  EXPECT_TRUE(cache.enabled()) << "one odd entry does not switch the cache off";
  EXPECT_TRUE(same(cache.get_or_compile(make_key(2), [] { return make_image(2); }), make_image(2)));
  EXPECT_TRUE(cache.load(make_key(2)).has_value());
}

// ---------------------------------------------------------------------------
// Size limit.

TEST_F(LocalStoreTest, least_recently_used_entries_are_evicted_first) {
  const std::uint64_t size = entry_size();
  LocalStore cache(config(3 * size + size / 2));
  for (int i = 0; i < 3; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  set_mtime(cache.entry_path(make_key(0)), 300s);
  set_mtime(cache.entry_path(make_key(1)), 200s);
  set_mtime(cache.entry_path(make_key(2)), 100s);
  ASSERT_TRUE(cache.load(make_key(0)).has_value());  // now the most recently used

  cache.get_or_compile(make_key(3), [] { return make_image(3); });
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(0))));
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(3))));
  EXPECT_EQ(cache.process_stats().evictions, 1u);
  EXPECT_EQ(cache.machine_stats().evictions, 1u);
  const CacheInfo info = cache.info();
  EXPECT_EQ(info.entries, 3u);
  EXPECT_LE(info.bytes, info.max_bytes);

  set_mtime(cache.entry_path(make_key(0)), 50s);
  set_mtime(cache.entry_path(make_key(2)), 40s);
  set_mtime(cache.entry_path(make_key(3)), 30s);
  cache.get_or_compile(make_key(4), [] { return make_image(4); });
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(0))));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_EQ(cache.process_stats().evictions, 2u);
}

TEST_F(LocalStoreTest, entry_just_written_is_kept_even_above_the_limit) {
  LocalStore cache(config(16));
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  cache.get_or_compile(make_key(2), [] { return make_image(2); });
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
  const auto loaded = cache.load(make_key(2));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(same(*loaded, cubin_only(make_image(2))));
}

TEST_F(LocalStoreTest, reader_holding_an_evicted_entry_still_reads_its_bytes) {
  const std::uint64_t size = entry_size();
  LocalStore cache(config(2 * size + size / 2));
  cache.get_or_compile(make_key(0), [] { return make_image(0); });
  const fs::path path = cache.entry_path(make_key(0));
  const std::string before = read_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  set_mtime(path, 100s);
  for (int i = 1; i <= 3; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  EXPECT_FALSE(fs::exists(path));
  std::string after(before.size() + 1, '\0');
  const ssize_t n = ::pread(fd, after.data(), after.size(), 0);
  ::close(fd);
  ASSERT_EQ(n, static_cast<ssize_t>(before.size()));
  after.resize(static_cast<std::size_t>(n));
  EXPECT_EQ(after, before);
}

TEST_F(LocalStoreTest, readers_racing_with_eviction_never_see_errors_or_wrong_images) {
  const std::uint64_t size = entry_size();
  LocalStore cache(config(3 * size));
  constexpr int kKeys = 60;
  std::atomic<int> written{0};
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      LocalStore reader(config(3 * size));
      const ImageParts parts = r == 1 ? ImageParts::kCubinAndPtx : ImageParts::kCubin;
      for (unsigned step = static_cast<unsigned>(r); !done.load(); ++step) {
        const int newest = written.load();
        if (newest == 0) continue;
        const int key = newest - 1 - static_cast<int>(step % 4);
        if (key < 0) continue;
        if (const auto image = reader.load(make_key(key), parts)) {
          ++hits;
          if (!same(*image, parts == ImageParts::kCubin ? cubin_only(make_image(key)) : make_image(key)))
            ++wrong;
        }
      }
      if (reader.process_stats().errors != 0) ++wrong;
    });
  }
  for (int i = 0; i < kKeys; ++i) {
    cache.get_or_compile(make_key(i), [&] { return make_image(i); });
    written = i + 1;
    std::this_thread::sleep_for(1ms);
  }
  done = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(cache.process_stats().errors, 0u);
  EXPECT_GE(cache.process_stats().evictions, static_cast<std::uint64_t>(kKeys - 3));
}

// ---------------------------------------------------------------------------
// Security.

TEST_F(LocalStoreTest, created_directories_are_0700_and_files_0600) {
  dir_ = root_ / "a" / "b" / "cache";
  const mode_t old_umask = ::umask(0);
  {
    LocalStore cache(config());
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    EXPECT_EQ(mode_of(cache.entry_path(make_key(1))), 0600u);
  }
  ::umask(old_umask);
  EXPECT_EQ(mode_of(root_ / "a"), 0700u);
  EXPECT_EQ(mode_of(root_ / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(dir_), 0700u);
  EXPECT_EQ(mode_of(dir_ / "locks"), 0700u);
  EXPECT_EQ(mode_of(dir_ / StatsFile::kName), 0600u);
  for (const auto& item : fs::directory_iterator(dir_ / "locks")) EXPECT_EQ(mode_of(item.path()), 0600u);
}

TEST_F(LocalStoreTest, entries_are_0600_under_a_restrictive_umask) {
  const mode_t old_umask = ::umask(0277);
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ::umask(old_umask);
  EXPECT_EQ(mode_of(cache.entry_path(make_key(1))), 0600u);
  EXPECT_TRUE(cache.load(make_key(1)).has_value());
}

TEST_F(LocalStoreTest, symlinked_entry_is_refused_and_replaced) {
  CacheConfig elsewhere;
  elsewhere.dir = root_ / "elsewhere";
  LocalStore other(elsewhere);
  other.get_or_compile(make_key(1), [] { return make_image(1); });

  LocalStore cache(config());
  fs::create_symlink(other.entry_path(make_key(1)), cache.entry_path(make_key(1)));
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  bool compiled = false;
  EXPECT_TRUE(same(cache.get_or_compile(
                       make_key(1), [] { return make_image(1); }, &compiled),
                   make_image(1)));
  EXPECT_TRUE(compiled);
  EXPECT_FALSE(fs::is_symlink(cache.entry_path(make_key(1))));
  EXPECT_TRUE(fs::is_regular_file(other.entry_path(make_key(1))));
}

TEST_F(LocalStoreTest, entry_owned_by_another_user_is_refused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ASSERT_EQ(::chown(cache.entry_path(make_key(1)).c_str(), 65534, 65534), 0);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
  bool compiled = false;
  cache.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(cache.load(make_key(1)).has_value());
}

TEST_F(LocalStoreTest, entry_readable_by_others_is_refused) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  ASSERT_EQ(::chmod(cache.entry_path(make_key(1)).c_str(), 0644), 0);
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 1u);
}

TEST_F(LocalStoreTest, fifo_under_entry_name_does_not_block_the_reader) {
  LocalStore cache(config());
  ASSERT_EQ(::mkfifo(cache.entry_path(make_key(1)).c_str(), 0600), 0);
  Child reader([&] {
    LocalStore cache_in_child(config());
    if (cache_in_child.load(make_key(1)).has_value()) return 1;
    return cache_in_child.process_stats().errors == 1 ? 0 : 2;
  });
  const Outcome outcome = reader.wait(10s);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.exit_code, 0);
}

// ---------------------------------------------------------------------------
// Degrading.

TEST_F(LocalStoreTest, cache_path_that_is_a_file_degrades_with_one_warning) {
  write_file(dir_, "not a directory");
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  int calls = 0;
  const auto compile = [&] {
    ++calls;
    return make_image(1);
  };
  const auto first = cache.get_or_compile(make_key(1), compile);
  const auto second = cache.get_or_compile(make_key(1), compile);
  const bool loaded = cache.load(make_key(1)).has_value();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(first, make_image(1)));
  EXPECT_TRUE(same(second, make_image(1)));
  EXPECT_FALSE(loaded);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.info().enabled);
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find("disk cache " + dir_.string() + " unusable"), std::string::npos) << err;
  EXPECT_NE(err.find("continuing without it"), std::string::npos) << err;
  EXPECT_EQ(cache.machine_stats().compiles, 0u);
  EXPECT_EQ(cache.process_stats().compiles, 2u);
  EXPECT_EQ(read_file(dir_), "not a directory");
}

TEST_F(LocalStoreTest, path_below_a_file_degrades_with_one_warning) {
  write_file(root_ / "file", "x");
  dir_ = root_ / "file" / "cache";
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  const auto image = cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(same(image, make_image(1)));
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
}

TEST_F(LocalStoreTest, file_size_limit_degrades_with_one_warning) {
  Child child(
      [&] {
        LocalStore cache(config());
        rlimit limit{1000, 1000};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
        for (int i = 0; i < 3; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i, 8192); }, &compiled);
          if (!compiled || !same(image, make_image(i, 8192))) return 20 + i;
        }
        if (cache.process_stats().errors != 3) return 30;
        // The signal was neither left blocked nor pending, nor its disposition changed.
        sigset_t now;
        sigemptyset(&now);
        pthread_sigmask(SIG_BLOCK, nullptr, &now);
        if (sigismember(&now, SIGXFSZ)) return 40;
        sigemptyset(&now);
        sigpending(&now);
        if (sigismember(&now, SIGXFSZ)) return 41;
        struct sigaction action {};
        sigaction(SIGXFSZ, nullptr, &action);
        return action.sa_handler == SIG_DFL ? 0 : 42;
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  EXPECT_EQ(outcome.signal, 0) << "killed by a signal (SIGXFSZ is 25)\n" << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 1) << outcome.err;
  EXPECT_NE(outcome.err.find("File too large"), std::string::npos) << outcome.err;

  LocalStore cache(config());
  EXPECT_FALSE(cache.load(make_key(0)).has_value());
  EXPECT_EQ(cache.process_stats().errors, 0u) << "no partial entry was left under an entry name";
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(item.path().filename().string().starts_with(kTempPrefix)) << item.path();
  }
}

TEST_F(LocalStoreTest, cache_that_cannot_store_still_serves_existing_entries_with_one_warning) {
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  fs::remove_all(dir_ / "locks");
  write_file(dir_ / "locks", "not a directory");
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  bool compiled = true;
  const auto old_image = cache.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  const bool old_compiled = compiled;
  const auto new_image = cache.get_or_compile(
      make_key(2), [] { return make_image(2); }, &compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(old_compiled);
  EXPECT_TRUE(same(old_image, cubin_only(make_image(1))));
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(new_image, make_image(2)));
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find("cannot store entries"), std::string::npos) << err;
}

TEST_F(LocalStoreTest, directory_removed_while_in_use_degrades_with_one_warning) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  fs::remove_all(dir_);
  ::testing::internal::CaptureStderr();
  for (int i = 2; i < 5; ++i) {
    EXPECT_TRUE(same(cache.get_or_compile(make_key(i), [&] { return make_image(i); }), make_image(i)));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.process_stats().compiles, 4u);
}

TEST_F(LocalStoreTest, full_disk_degrades_without_a_signal_and_still_compiles) {
  const fs::path small = root_ / "small";
  fs::create_directory(small);
  dir_ = small / "cache";
  Child child(
      [&] {
        if (const std::string why = mount_private_tmpfs(small, "64k"); !why.empty()) {
          std::fprintf(stderr, "cannot mount a small tmpfs (%s)\n", why.c_str());
          return kChildCannotSetUp;
        }
        // The directory is there before the disk fills up; the statistics file and the entries are not.
        if (::mkdir(dir_.c_str(), 0700) != 0 || !fill_up(small / "filler")) return 10;
        LocalStore cache(config());
        for (int i = 0; i < 3; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i); }, &compiled);
          if (!compiled || !same(image, make_image(i))) return 20 + i;
        }
        if (cache.process_stats().compiles != 3 || cache.machine_stats().compiles != 0) return 30;
        return cache.enabled() ? 0 : 31;  // space may come back: a full disk does not switch the cache off
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  if (outcome.exit_code == kChildCannotSetUp) GTEST_SKIP() << outcome.err;
  EXPECT_EQ(outcome.signal, 0) << "killed by a signal (SIGBUS is 7)\n" << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "has no machine-wide statistics"), 1) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "cannot store an entry"), 1) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 2) << outcome.err;
  EXPECT_NE(outcome.err.find("No space left on device"), std::string::npos) << outcome.err;
}

TEST_F(LocalStoreTest, failed_directory_sync_after_the_rename_still_stores_and_evicts_without_warning) {
  const std::uint64_t size = entry_size();
  Child child(
      [&] {
        LocalStore cache(config(2 * size + size / 2));
        const int dir_fd = descriptor_of(dir_);
        if (dir_fd < 0) return 10;
        if (!make_fsync_fail(dir_fd)) {
          std::fprintf(stderr, "cannot install a seccomp filter (%s)\n", std::strerror(errno));
          return kChildCannotSetUp;
        }
        if (::fsync(dir_fd) == 0 || errno != EIO) return 11;
        for (int i = 0; i < 5; ++i) {
          bool compiled = false;
          const auto image = cache.get_or_compile(
              make_key(i), [&] { return make_image(i); }, &compiled);
          if (!compiled || !same(image, make_image(i))) return 20 + i;
        }
        const CacheStats stats = cache.process_stats();
        if (stats.evictions != 3) return 30;
        if (stats.errors != 5) return 31;  // each failed sync is counted
        return cache.enabled() ? 0 : 32;
      },
      /*capture_stderr=*/true);
  const Outcome outcome = child.wait(20s);
  if (outcome.exit_code == kChildCannotSetUp) GTEST_SKIP() << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 0) << outcome.err;

  LocalStore cache(config());
  EXPECT_EQ(cache.info().entries, 2u);
  EXPECT_TRUE(cache.load(make_key(3)).has_value());
  EXPECT_TRUE(cache.load(make_key(4)).has_value());
}

TEST_F(LocalStoreTest, each_kind_of_problem_warns_once_and_none_hides_another) {
  const auto plant_foreign_statistics = [&] {
    fs::create_directories(dir_);
    write_file(dir_ / StatsFile::kName, std::string(4096, '\x7f'));
    fs::permissions(dir_ / StatsFile::kName, fs::perms::owner_read | fs::perms::owner_write);
  };
  plant_foreign_statistics();
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  fs::remove_all(dir_);
  for (int i = 2; i < 5; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  plant_foreign_statistics();
  LocalStore again(config());
  again.get_or_compile(make_key(5), [] { return make_image(5); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "has no machine-wide statistics"), 1) << err;
  EXPECT_EQ(count_of(err, "cannot store entries"), 1) << err;
  EXPECT_EQ(count_of(err, "tropical: warning:"), 2) << err;
  EXPECT_FALSE(cache.enabled());
  EXPECT_TRUE(again.enabled());
  EXPECT_TRUE(again.load(make_key(5)).has_value());
}

TEST_F(LocalStoreTest, disabled_cache_never_touches_the_disk) {
  CacheConfig c = config();
  c.enabled = false;
  LocalStore cache(c);
  int calls = 0;
  bool compiled = false;
  for (int i = 0; i < 2; ++i) {
    const auto image = cache.get_or_compile(
        make_key(1),
        [&] {
          ++calls;
          return make_image(1);
        },
        &compiled);
    EXPECT_TRUE(same(image, make_image(1)));
    EXPECT_TRUE(compiled);
  }
  EXPECT_FALSE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.clear(), 0u);
  const CacheInfo info = cache.info();
  EXPECT_FALSE(info.enabled);
  EXPECT_EQ(info.entries, 0u);
  EXPECT_EQ(cache.machine_stats().hits + cache.machine_stats().compiles, 0u);
  EXPECT_EQ(cache.process_stats().compiles, 2u);
  EXPECT_FALSE(fs::exists(dir_));
}

// ---------------------------------------------------------------------------
// Statistics, clear, info.

TEST_F(LocalStoreTest, machine_stats_are_shared_by_caches_on_one_directory) {
  LocalStore first(config());
  first.get_or_compile(make_key(1), [] { return make_image(1); });
  LocalStore second(config());
  ASSERT_TRUE(second.load(make_key(1)).has_value());
  EXPECT_FALSE(second.load(make_key(2)).has_value());
  EXPECT_EQ(second.process_stats().compiles, 0u);
  EXPECT_EQ(second.process_stats().hits, 1u);
  for (const LocalStore* cache : {&first, &second}) {
    const CacheStats machine = cache->machine_stats();
    EXPECT_EQ(machine.compiles, 1u);
    EXPECT_EQ(machine.hits, 1u);
    EXPECT_EQ(machine.misses, 2u);
    EXPECT_EQ(machine.bytes_written, first.process_stats().bytes_written);
    EXPECT_EQ(machine.bytes_read, second.process_stats().bytes_read);
    EXPECT_GT(machine.load_ns, 0u);
  }
}

TEST_F(LocalStoreTest, compile_time_is_counted) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] {
    std::this_thread::sleep_for(20ms);
    return make_image(1);
  });
  EXPECT_GE(cache.process_stats().compile_ns, 20'000'000u);
  EXPECT_GE(cache.machine_stats().compile_ns, 20'000'000u);
}

TEST_F(LocalStoreTest, statistics_file_of_another_layout_leaves_the_cache_working) {
  fs::create_directories(dir_);
  write_file(dir_ / StatsFile::kName, std::string(4096, '\x7f'));
  fs::permissions(dir_ / StatsFile::kName, fs::perms::owner_read | fs::perms::owner_write);
  const Untouched foreign(dir_ / StatsFile::kName);
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(cache.enabled());
  EXPECT_TRUE(cache.load(make_key(1)).has_value());
  EXPECT_EQ(cache.machine_stats().compiles, 0u);
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_TRUE(foreign.still()) << "a foreign statistics file is never rewritten";
}

TEST_F(LocalStoreTest, clear_removes_entries_and_stale_temporaries_but_not_locks_or_stats) {
  LocalStore cache(config());
  for (int i = 0; i < 3; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  const std::string stale = std::string(kTempPrefix) + "1.1.1";
  const std::string live = std::string(kTempPrefix) + "2.2.2";
  write_file(dir_ / stale, "stale");
  set_mtime(dir_ / stale, 2h);
  write_file(dir_ / live, "a live writer's");
  EXPECT_EQ(cache.info().entries, 3u);
  EXPECT_EQ(cache.clear(), 3u);
  EXPECT_EQ(cache.info().entries, 0u);
  EXPECT_EQ(cache.info().bytes, 0u);
  EXPECT_FALSE(fs::exists(dir_ / stale));
  EXPECT_TRUE(fs::exists(dir_ / live));
  EXPECT_TRUE(fs::exists(dir_ / StatsFile::kName));
  EXPECT_FALSE(fs::is_empty(dir_ / "locks"));
  EXPECT_EQ(cache.machine_stats().compiles, 3u);
  EXPECT_FALSE(cache.load(make_key(0)).has_value());
  bool compiled = false;
  cache.get_or_compile(
      make_key(0), [] { return make_image(0); }, &compiled);
  EXPECT_TRUE(compiled);
}

TEST_F(LocalStoreTest, info_reports_directory_entries_bytes_and_limit) {
  LocalStore cache(config(12345678));
  for (int i = 0; i < 2; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  const CacheInfo info = cache.info();
  EXPECT_EQ(info.dir, dir_);
  EXPECT_TRUE(info.enabled);
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.bytes,
            fs::file_size(cache.entry_path(make_key(0))) + fs::file_size(cache.entry_path(make_key(1))));
  EXPECT_EQ(info.max_bytes, 12345678u);
}

// ---------------------------------------------------------------------------
// Issue 10's red-team families: nothing in the cache directory can kill,
// freeze or rob the caller. No signal is masked or ignored by these tests.

// The lock stripe of key: the first byte of its digest.
std::string stripe_of(const CacheKey& key) { return key.digest().substr(0, 2); }

// A key (by make_key's index) in the given stripe, or in another one.
int key_in_stripe(const std::string& stripe, bool same_stripe, int after) {
  for (int i = after + 1;; ++i) {
    if ((stripe_of(make_key(i)) == stripe) == same_stripe) return i;
  }
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& item : fs::directory_iterator(dir)) out.push_back(item.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(LocalStoreTest, world_writable_directory_is_read_but_never_written_with_one_warning) {
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  const auto before = names_in(dir_);
  ::testing::internal::CaptureStderr();
  LocalStore cache(config());
  const auto hit = cache.load(make_key(1));
  bool compiled = false;
  const auto image = cache.get_or_compile(
      make_key(2), [] { return make_image(2); }, &compiled);
  cache.get_or_compile(make_key(3), [] { return make_image(3); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(hit.has_value()) << "entries there are still read (and verified)";
  EXPECT_TRUE(same(*hit, cubin_only(make_image(1))));
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(image, make_image(2)));
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(names_in(dir_), before) << "nothing stored, created or removed there";
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find("writable by others (mode 0777)"), std::string::npos) << err;
}

TEST_F(LocalStoreTest, group_writable_directory_is_refused_unless_it_is_a_setgid_team_directory) {
  fs::create_directories(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0770), 0);
  {
    ::testing::internal::CaptureStderr();
    LocalStore cache(config());
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
    EXPECT_NE(err.find("writable by its group (mode 0770)"), std::string::npos) << err;
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 02770), 0);
  LocalStore team(config());
  team.get_or_compile(make_key(1), [] { return make_image(1); });
  EXPECT_TRUE(team.enabled());
  EXPECT_TRUE(fs::exists(team.entry_path(make_key(1))));
  // Group-readable, so that the team's other members can read it; read back by a new store.
  EXPECT_EQ(fs::status(team.entry_path(make_key(1))).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  LocalStore again(config());
  EXPECT_TRUE(again.load(make_key(1)));
}

TEST_F(LocalStoreTest, foreign_temporary_statistics_and_lock_files_are_never_touched) {
  {
    LocalStore first(config());
    first.get_or_compile(make_key(0), [] { return make_image(0); });
  }
  const std::vector<fs::path> planted = {dir_ / "tmp.1.1.1",
                                         dir_ / "tmp.AbC123",
                                         dir_ / "stats",
                                         dir_ / ".tropical-tmp.someone",
                                         dir_ / "notes.txt",
                                         dir_ / "locks" / "00.lock",
                                         dir_ / "locks" / "tropical-zz.lock"};
  for (const auto& path : planted) {
    write_file(path, "someone's data in " + path.filename().string());
    set_mtime(path, 3h);
  }
  std::vector<Untouched> untouched;
  for (const auto& path : planted) untouched.emplace_back(path);
  {
    const std::uint64_t size = entry_size();
    LocalStore cache(config(2 * size));
    for (int i = 1; i < 6; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
    EXPECT_GT(cache.process_stats().evictions, 0u);
    cache.info();
    EXPECT_GT(cache.clear(), 0u);
    cache.zero_stats();
  }
  for (const auto& file : untouched) EXPECT_TRUE(file.still()) << file.path;
}

class PlantedLockFile : public LocalStoreTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PlantedLockFile, degrades_only_its_stripe_with_one_warning) {
  LocalStore cache(config());
  const int a = 1;
  const int b = key_in_stripe(stripe_of(make_key(a)), /*same_stripe=*/false, a);
  const std::string lock_name = "tropical-" + stripe_of(make_key(a)) + ".lock";
  const fs::path lock = dir_ / "locks" / lock_name;
  write_file(root_ / "target", "someone's file");
  if (GetParam() == "fifo") {
    ASSERT_EQ(::mkfifo(lock.c_str(), 0600), 0);
  } else if (GetParam() == "symlink") {
    fs::create_symlink(root_ / "target", lock);
  } else {
    write_file(lock, "not a lock file");
  }
  const Untouched target(root_ / "target");
  ::testing::internal::CaptureStderr();
  int calls = 0;
  for (int round = 0; round < 2; ++round) {
    bool compiled = false;
    const auto image = cache.get_or_compile(
        make_key(a),
        [&] {
          ++calls;
          return make_image(a);
        },
        &compiled);
    EXPECT_TRUE(compiled);
    EXPECT_TRUE(same(image, make_image(a)));
  }
  bool compiled = false;
  cache.get_or_compile(
      make_key(b), [&] { return make_image(b); }, &compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 2) << "the bad stripe stores nothing";
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(a))));
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(b)))) << "other stripes still store";
  EXPECT_TRUE(cache.enabled());
  EXPECT_EQ(count_of(err, "tropical: warning:"), 1) << err;
  EXPECT_NE(err.find(lock_name), std::string::npos) << err;
  EXPECT_TRUE(target.still());
  EXPECT_TRUE(fs::is_symlink(lock) || fs::exists(lock));
}

INSTANTIATE_TEST_SUITE_P(Kinds, PlantedLockFile, ::testing::Values("fifo", "symlink", "foreign"));

TEST_F(LocalStoreTest, stopped_lock_holder_makes_the_waiter_compile_within_the_bound_without_storing) {
  int locked[2];
  ASSERT_EQ(::pipe(locked), 0);
  CacheConfig stopping = config();
  stopping.test_hook = [&](WriteStage stage) {
    if (stage != WriteStage::kLocked) return;
    const pid_t me = ::getpid();
    if (::write(locked[1], &me, sizeof me) != sizeof me) std::abort();
    ::raise(SIGSTOP);  // Ctrl-Z or a debugger, holding the lock
  };
  Child holder([&] {
    LocalStore cache(stopping);
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    return 1;
  });
  ::close(locked[1]);
  pid_t holder_pid = 0;
  ASSERT_EQ(::read(locked[0], &holder_pid, sizeof holder_pid), static_cast<ssize_t>(sizeof holder_pid));
  ::close(locked[0]);

  const int same_stripe = key_in_stripe(stripe_of(make_key(1)), /*same_stripe=*/true, 1);
  Child waiter(
      [&] {
        CacheConfig c = config();
        c.lock_timeout = 300ms;
        LocalStore cache(c);
        bool compiled = false;
        const auto start = std::chrono::steady_clock::now();
        const auto image = cache.get_or_compile(
            make_key(1), [] { return make_image(1); }, &compiled);
        const auto first = std::chrono::steady_clock::now() - start;
        if (!compiled || !same(image, make_image(1))) return 2;
        if (first < 290ms || first > 5s) return 3;
        // The holder is known to be stuck now: another key of its stripe does not wait again.
        const auto again = std::chrono::steady_clock::now();
        cache.get_or_compile(
            make_key(same_stripe), [&] { return make_image(same_stripe); }, &compiled);
        if (!compiled || std::chrono::steady_clock::now() - again > 250ms) return 4;
        return fs::exists(cache.entry_path(make_key(1))) ? 5 : 0;
      },
      /*capture_stderr=*/true);
  const Outcome outcome = waiter.wait(20s);
  EXPECT_FALSE(outcome.timed_out) << "the waiter hung";
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "tropical: warning:"), 1) << outcome.err;
  EXPECT_NE(outcome.err.find("process " + std::to_string(holder_pid) + " held lock"), std::string::npos)
      << outcome.err;
  EXPECT_EQ(holder.wait(0ms).signal, SIGKILL) << "still stopped until killed";
  EXPECT_FALSE(fs::exists(dir_ / (make_key(1).digest() + ".entry"))) << "nobody stored it";
}

TEST_F(LocalStoreTest, sparse_two_gib_entry_under_a_keys_name_is_rejected_unread_and_replaced) {
  LocalStore cache(config());
  const CacheKey key = make_key(1);
  const std::string serialized = key.serialize();
  std::vector<std::uint8_t> head = encode_entry(serialized, make_image(1));
  const std::uint64_t two_gib = std::uint64_t{2} << 30;
  const std::uint64_t cubin = two_gib - kEntryHeaderSize - serialized.size();
  for (int i = 0; i < 8; ++i) head[24 + i] = static_cast<std::uint8_t>(cubin >> (8 * i));
  for (int i = 0; i < 8; ++i) head[32 + i] = 0;
  head.resize(kEntryHeaderSize + serialized.size());
  const fs::path path = cache.entry_path(key);
  write_file(path, std::string(head.begin(), head.end()));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(two_gib)), 0);

  const std::uint64_t read_before = bytes_read_by_process();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(cache.load(key, ImageParts::kCubinAndPtx).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_LT(bytes_read_by_process() - read_before, 4096u) << "the entry was read";
  EXPECT_EQ(cache.process_stats().errors, 1u);
  EXPECT_EQ(cache.process_stats().bytes_read, 0u);
  bool compiled = false;
  cache.get_or_compile(
      key, [] { return make_image(1); }, &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_LT(fs::file_size(path), 1u << 20) << "replaced by a real entry";
}

TEST_F(LocalStoreTest, truncating_the_statistics_file_under_a_running_process_gives_no_signal) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  Child worker(
      [&] {
        LocalStore cache(config());
        const char byte = 1;
        if (::write(ready[1], &byte, 1) != 1) return 1;
        for (int i = 0; i < 300; ++i) {
          cache.get_or_compile(make_key(i % 7), [&] { return make_image(i % 7); });
          cache.load(make_key(i % 5));
          std::this_thread::sleep_for(1ms);
        }
        cache.machine_stats();
        return cache.process_stats().hits > 0 ? 0 : 2;
      },
      /*capture_stderr=*/true);
  ::close(ready[1]);
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  std::this_thread::sleep_for(30ms);
  ASSERT_EQ(::truncate((dir_ / StatsFile::kName).c_str(), 0), 0);
  const Outcome outcome = worker.wait(30s);
  EXPECT_EQ(outcome.signal, 0) << "killed by a signal (SIGBUS is 7)\n" << outcome.err;
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_EQ(count_of(outcome.err, "has no machine-wide statistics"), 1) << outcome.err;
  // Never rewritten as a statistics file. The file may have grown again: an update that read the record
  // before the truncation writes its counters after it (a pwrite past the end fills the header with
  // zeros); no lock can stop a process that truncates without taking it, and the next update refuses it.
  const std::string after = read_file(dir_ / StatsFile::kName);
  EXPECT_TRUE(after.empty() || (after.size() == 88 && after.compare(0, 16, std::string(16, '\0')) == 0))
      << "not rewritten: " << after.size() << " bytes";
}

TEST_F(LocalStoreTest, zero_stats_zeroes_the_machine_and_process_counters) {
  LocalStore cache(config());
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  cache.load(make_key(1));
  ASSERT_GT(cache.machine_stats().hits, 0u);
  cache.zero_stats();
  const CacheStats zero{};
  const auto equal = [](const CacheStats& a, const CacheStats& b) {
    return a.hits == b.hits && a.misses == b.misses && a.compiles == b.compiles && a.errors == b.errors &&
           a.bytes_read == b.bytes_read && a.bytes_written == b.bytes_written &&
           a.compile_ns == b.compile_ns && a.load_ns == b.load_ns && a.evictions == b.evictions;
  };
  EXPECT_TRUE(equal(cache.machine_stats(), zero));
  EXPECT_TRUE(equal(cache.process_stats(), zero));
  LocalStore other(config());
  EXPECT_TRUE(equal(other.machine_stats(), zero)) << "machine-wide, seen by every store on the directory";
  cache.load(make_key(1));
  EXPECT_EQ(other.machine_stats().hits, 1u);
}

TEST_F(LocalStoreTest, remove_takes_out_one_entry_and_only_a_file_of_this_user) {
  LocalStore cache(config());
  for (int i = 0; i < 3; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  EXPECT_TRUE(cache.remove(make_key(1)));
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(0))));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_FALSE(cache.remove(make_key(1))) << "nothing left to remove";
  fs::create_directory(cache.entry_path(make_key(4)));
  EXPECT_FALSE(cache.remove(make_key(4))) << "not a regular file";
  EXPECT_TRUE(fs::is_directory(cache.entry_path(make_key(4))));
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(cache.entry_path(make_key(2)).c_str(), 65534, 65534), 0);
    EXPECT_FALSE(cache.remove(make_key(2))) << "another user's file";
    EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  }
}

TEST_F(LocalStoreTest, entries_lists_every_entry_of_every_compiler_with_its_key_and_touches_nothing) {
  CacheKey other = make_key(2);
  other.compiler = "libnvrtc.so.13.0.48:108000000";
  {
    LocalStore cache(config());
    cache.get_or_compile(make_key(1), [] { return make_image(1); });
    cache.get_or_compile(other, [] { return make_image(2); });
  }
  // A file named like an entry that does not start like one, and one that is not a regular file.
  write_file(dir_ / (std::string(64, 'f') + ".entry"), "not an entry");
  fs::create_directory(dir_ / (std::string(64, 'd') + ".entry"));
  const auto mtime = fs::last_write_time(dir_ / (make_key(1).digest() + ".entry"));
  LocalStore cache(config());
  const CacheStats before = cache.machine_stats();
  std::vector<StoredEntry> entries = cache.entries();
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.file < b.file; });
  ASSERT_EQ(entries.size(), 3u);
  std::map<std::string, const StoredEntry*> by_file;
  for (const auto& e : entries) by_file[e.file] = &e;
  const StoredEntry& mine = *by_file.at(make_key(1).digest() + ".entry");
  ASSERT_TRUE(mine.key.has_value());
  EXPECT_EQ(mine.key->serialize(), make_key(1).serialize());
  EXPECT_EQ(mine.format, kCacheFormatVersion);
  EXPECT_EQ(mine.bytes, fs::file_size(dir_ / mine.file));
  const StoredEntry& theirs = *by_file.at(other.digest() + ".entry");
  ASSERT_TRUE(theirs.key.has_value());
  EXPECT_EQ(theirs.key->compiler, other.compiler);
  const StoredEntry& foreign = *by_file.at(std::string(64, 'f') + ".entry");
  EXPECT_FALSE(foreign.key.has_value());
  EXPECT_EQ(foreign.format, 0u);
  const CacheStats after = cache.machine_stats();
  EXPECT_EQ(std::tuple(after.hits, after.misses, after.errors, after.bytes_read),
            std::tuple(before.hits, before.misses, before.errors, before.bytes_read))
      << "listing counts nothing";
  EXPECT_EQ(fs::last_write_time(dir_ / (make_key(1).digest() + ".entry")), mtime)
      << "nor refreshes an LRU time";
}

TEST_F(LocalStoreTest, remove_if_takes_out_entries_of_every_compiler_and_never_a_file_it_cannot_read) {
  LocalStore cache(config());
  CacheKey other = make_key(1);
  other.compiler = "libnvrtc.so.13.0.48:108000000";
  cache.get_or_compile(make_key(1), [] { return make_image(1); });
  cache.get_or_compile(other, [] { return make_image(1); });
  cache.get_or_compile(make_key(2), [] { return make_image(2); });
  const fs::path foreign = dir_ / (std::string(64, 'f') + ".entry");
  write_file(foreign, "not an entry " + make_key(1).kernel_name);
  ::chmod(foreign.c_str(), 0600);
  const std::string name = make_key(1).kernel_name;
  EXPECT_EQ(cache.remove_if([&](const CacheKey& key) { return key.kernel_name == name; }), 2u);
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(1))));
  EXPECT_FALSE(fs::exists(cache.entry_path(other)));
  EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_TRUE(fs::exists(foreign)) << "a file whose header is not an entry's is never removed";
  EXPECT_EQ(cache.remove_if([](const CacheKey&) { return false; }), 0u);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(cache.entry_path(make_key(2)).c_str(), 65534, 65534), 0);
    EXPECT_EQ(cache.remove_if([](const CacheKey&) { return true; }), 0u) << "another user's entry stays";
    EXPECT_TRUE(fs::exists(cache.entry_path(make_key(2))));
  }
}

}  // namespace
}  // namespace tropical::jit
