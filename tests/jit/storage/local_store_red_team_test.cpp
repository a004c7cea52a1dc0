// Red-team families against the local directory store: nothing in the cache directory can
// kill, freeze or rob the caller. No signal is masked or ignored by these tests.
#include "tropical/storage/local_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

// ---------------------------------------------------------------------------
// Red-team families: nothing in the cache directory can kill,
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

}  // namespace
}  // namespace tropical::storage
