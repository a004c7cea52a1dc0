// The local directory store, one process: hits, misses, parts of an entry, write stages, statistics,
// clear, info, remove and listing. The other families are in local_store_*_test.cpp beside it.
#include "tropical/storage/local_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "test_support.hpp"
#include "tropical/storage/atomic_file.hpp"

namespace tropical::storage {
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
// Zeroing, removing and listing.

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
}  // namespace tropical::storage
