// The local directory store under several processes and threads, writers killed at each stage,
// and the size limit (eviction racing with readers).
#include "tropical/storage/local_store.hpp"

#include <gtest/gtest.h>

#include <array>
#include <latch>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

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

// What this store's eviction removed is told apart from what someone else removed (a
// `tropical clear`, another process's eviction), so that warm blames the size limit only for the first.
TEST_F(LocalStoreTest, it_remembers_the_entries_its_own_eviction_removed_and_no_others) {
  const std::uint64_t size = entry_size();
  LocalStore cache(config(2 * size + size / 2));
  LocalStore other(config(2 * size + size / 2));
  for (int i = 0; i < 2; ++i) cache.get_or_compile(make_key(i), [&] { return make_image(i); });
  set_mtime(cache.entry_path(make_key(0)), 200s);
  set_mtime(cache.entry_path(make_key(1)), 100s);
  cache.get_or_compile(make_key(2), [] { return make_image(2); });  // evicts key 0, the oldest
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(0))));
  EXPECT_TRUE(cache.evicted(make_key(0)));
  EXPECT_FALSE(other.evicted(make_key(0))) << "another object (process) did not evict it";
  // Removed by someone else: not this store's eviction, though this store has evicted.
  ASSERT_TRUE(other.remove(make_key(1)));
  EXPECT_FALSE(cache.evicted(make_key(1)));
  EXPECT_FALSE(cache.evicted(make_key(2)));
  EXPECT_FALSE(cache.evicted(make_key(7))) << "never stored";
  // Another process's eviction is its own, not this one's.
  set_mtime(cache.entry_path(make_key(2)), 300s);
  other.get_or_compile(make_key(3), [] { return make_image(3); });
  other.get_or_compile(make_key(4), [] { return make_image(4); });
  EXPECT_FALSE(fs::exists(cache.entry_path(make_key(2))));
  EXPECT_TRUE(other.evicted(make_key(2)));
  EXPECT_FALSE(cache.evicted(make_key(2)));
  // Stored again, an entry is no longer one this store evicted.
  cache.get_or_compile(make_key(0), [] { return make_image(0); });
  EXPECT_FALSE(cache.evicted(make_key(0)));
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

}  // namespace
}  // namespace tropical::storage
