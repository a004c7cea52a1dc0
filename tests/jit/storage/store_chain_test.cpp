// The walk over the ordered list of stores: promotion of a lower store's hit,
// compiling without storing when the single flight is not ours, and the
// decision log (TROPICAL_LOG) explaining each miss in one line.
#include "tropical/storage/store_chain.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "test_support.hpp"

namespace tropical::storage {
namespace {

using namespace test;

// Another directory as a read-only store (as a layer is): it answers lookups, never stores.
class ReadOnlyStore final : public Store {
 public:
  explicit ReadOnlyStore(CacheConfig config) : dir_(std::move(config)), name_("read-only " + dir_.name()) {}
  const std::string& name() const noexcept override { return name_; }
  Lookup lookup(const StoreKey& key, ImageParts parts) override {
    ++lookups;
    last_parts = parts;
    return dir_.lookup(key, parts);
  }
  bool can_store() const noexcept override { return false; }
  bool store(const StoreKey&, const CompiledImage&, StoreReason) override {
    ++stores;
    return false;
  }
  void count_miss(bool bad) override { dir_.count_miss(bad); }
  void count_compile(std::uint64_t ns) override { dir_.count_compile(ns); }
  LocalStore& dir() { return dir_; }
  int lookups = 0;
  int stores = 0;
  ImageParts last_parts = ImageParts::kCubin;

 private:
  LocalStore dir_;
  std::string name_;
};

// A writable store whose single flight is always held by someone stuck.
class StuckStore final : public Store {
 public:
  const std::string& name() const noexcept override { return name_; }
  Lookup lookup(const StoreKey&, ImageParts) override { return {}; }
  bool can_store() const noexcept override { return true; }
  bool store(const StoreKey&, const CompiledImage&, StoreReason) override {
    ++stores;
    return true;
  }
  FlightResult single_flight(const StoreKey&) override {
    return {FlightResult::State::kTimedOut, nullptr, "process 4242 holds the lock"};
  }
  void count_miss(bool) override { ++misses; }
  void count_compile(std::uint64_t) override { ++compiles; }
  int stores = 0;
  int misses = 0;
  int compiles = 0;

 private:
  std::string name_ = "stuck";
};

class StoreChainTest : public LocalStoreTest {
 protected:
  CacheConfig below() const {
    CacheConfig c;
    c.dir = root_ / "layer";
    return c;
  }
};

TEST_F(StoreChainTest, hit_in_a_lower_store_is_copied_up_whole_and_returned_with_the_parts_asked) {
  {
    LocalStore layer(below());
    layer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  auto layer = std::make_unique<ReadOnlyStore>(below());
  ReadOnlyStore& lower = *layer;
  std::vector<std::unique_ptr<Store>> others;
  others.push_back(std::move(layer));
  StoreChain stores(std::make_unique<LocalStore>(config()), std::move(others), LogLevel::kOff);
  ASSERT_EQ(stores.list().size(), 2u);
  bool compiled = true;
  const auto image = stores.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_TRUE(same(image, cubin_only(make_image(1))));
  EXPECT_EQ(lower.last_parts, ImageParts::kCubinAndPtx) << "a copy written up needs the PTX";
  ASSERT_TRUE(stores.finish_promotions()) << "the copy is written in the background";
  const auto copied = stores.primary().load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value()) << "copied into the primary";
  EXPECT_TRUE(same(*copied, make_image(1)));
  EXPECT_EQ(stores.primary().process_stats().misses, 1u);
  EXPECT_EQ(lower.dir().process_stats().hits, 1u);

  // Next time the primary answers, and the layer is not asked.
  const int asked = lower.lookups;
  stores.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(lower.lookups, asked);
  EXPECT_EQ(lower.stores, 0);
}

// The tuned check of tiered first use (registry.cpp): is the image anywhere, without compiling or waiting.
TEST_F(StoreChainTest, find_looks_through_every_store_copies_a_lower_hit_up_and_never_compiles_or_waits) {
  {
    LocalStore layer(below());
    layer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  auto layer = std::make_unique<ReadOnlyStore>(below());
  ReadOnlyStore& lower = *layer;
  std::vector<std::unique_ptr<Store>> others;
  others.push_back(std::move(layer));
  StoreChain stores(std::make_unique<LocalStore>(config()), std::move(others), LogLevel::kOff);

  EXPECT_FALSE(stores.find(make_key(2)).has_value()) << "in no store: nullopt, nothing compiled";
  EXPECT_EQ(stores.primary().process_stats().misses, 0u) << "a find counts no miss: the walk after it does";

  const auto found = stores.find(make_key(1));
  ASSERT_TRUE(found.has_value()) << "found in the lower store";
  EXPECT_TRUE(same(*found, cubin_only(make_image(1))));
  ASSERT_TRUE(stores.finish_promotions());
  const auto copied = stores.primary().load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value()) << "copied into the primary, whole";
  EXPECT_TRUE(same(*copied, make_image(1)));
  const int asked = lower.lookups;
  EXPECT_TRUE(stores.find(make_key(1)).has_value());
  EXPECT_EQ(lower.lookups, asked) << "the primary answers now";

  // A writable store whose flight someone holds: find neither waits nor compiles.
  StuckStore stuck;
  Store* const list[] = {&stuck};
  EXPECT_FALSE(find_in_stores(list, LogLevel::kOff, make_key(1)).has_value());
  EXPECT_EQ(stuck.compiles + stuck.stores + stuck.misses, 0);
}

// A process whose kernels are all in the primary never opens a layer or reads the fleet settings (so a bad
// one is not even warned about); the first miss makes them.
TEST_F(StoreChainTest, the_stores_below_the_primary_are_made_on_its_first_miss) {
  {
    LocalStore primary(config());
    primary.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  CacheConfig c = config();
  c.layers = {root_ / "missing-layer"};
  c.prebuilt_layer = false;
  Child child(
      [&] {
        StoreChain stores(c);
        bool compiled = true;
        stores.get_or_compile(make_key(1), [] { return make_image(1); }, &compiled);
        if (compiled) return 1;
        if (!stores.find(make_key(1))) return 2;
        std::fputs("after the hits\n", stderr);
        stores.get_or_compile(make_key(2), [] { return make_image(2); }, &compiled);
        if (!compiled) return 3;
        return stores.list().size() == 2 ? 0 : 4;
      },
      true);
  const Outcome out = child.wait();
  EXPECT_EQ(out.exit_code, 0) << out.err;
  const std::size_t hits_end = out.err.find("after the hits");
  ASSERT_NE(hits_end, std::string::npos) << out.err;
  EXPECT_EQ(count_of(out.err.substr(0, hits_end), "warning"), 0) << out.err;
  EXPECT_EQ(count_of(out.err.substr(hits_end), "missing-layer"), 1) << out.err;
}

// 500 missing layers are three warnings and a count, not 500 warnings.
TEST_F(StoreChainTest, many_missing_layers_are_warned_about_a_few_times_then_counted) {
  CacheConfig c = config();
  for (int i = 0; i < 500; ++i) c.layers.push_back(root_ / ("missing-" + std::to_string(i)));
  c.prebuilt_layer = false;
  Child child([&] { return StoreChain(c).list().size() == 501 ? 0 : 1; }, true);
  const Outcome out = child.wait();
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(count_of(out.err, "warning"), 4) << out.err;
  EXPECT_NE(out.err.find("and 497 more cache layers"), std::string::npos) << out.err;
}

// The copy of a lower hit is written by a background thread; a process that exits right after the hit (the
// stores never destroyed, as the tropical API's registry) still leaves the entry in the primary.
TEST_F(StoreChainTest, a_copied_hit_is_in_the_primary_after_the_process_exits_at_once) {
  {
    LocalStore layer(below());
    layer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  Child child([&]() -> int {
    std::vector<std::unique_ptr<Store>> others;
    others.push_back(std::make_unique<ReadOnlyStore>(below()));
    auto* stores = new StoreChain(std::make_unique<LocalStore>(config()), std::move(others), LogLevel::kOff);
    bool compiled = true;
    stores->get_or_compile(make_key(1), [] { return make_image(99); }, &compiled);
    std::exit(compiled ? 1 : 0);
  });
  EXPECT_EQ(child.wait().exit_code, 0);
  const auto copied = LocalStore(config()).load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value()) << "the exit waited for the copy";
  EXPECT_TRUE(same(*copied, make_image(1)));
}

TEST_F(StoreChainTest, a_flight_held_by_someone_stuck_compiles_and_stores_nothing) {
  StuckStore stuck;
  Store* const list[] = {&stuck};
  bool compiled = false;
  const auto image = walk_stores(
      list, LogLevel::kOff, make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(image, make_image(1)));
  EXPECT_EQ(stuck.stores, 0) << "the holder will store it: never twice";
  EXPECT_EQ(stuck.misses, 1);
  EXPECT_EQ(stuck.compiles, 1);
}

// Check, lock, check again (the local form of the window), ordered by the write hook: the first look
// misses, another process stores the entry while this one takes the stripe lock; the look under the lock
// finds it, and nothing is compiled.
TEST_F(StoreChainTest, entry_stored_while_the_lock_was_taken_is_read_not_compiled) {
  LocalStore other(config());
  CacheConfig c = config();
  int locked = 0;
  c.test_hook = [&](WriteStage stage) {
    if (stage != WriteStage::kLocked || locked++ > 0) return;
    ASSERT_TRUE(other.store(StoreKey(make_key(1)), make_image(1), StoreReason::kCompiled));
  };
  LocalStore primary(c);
  Store* const list[] = {&primary};
  bool compiled = true;
  const auto image = walk_stores(
      list, LogLevel::kOff, make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(locked, 1);
  EXPECT_TRUE(same(image, cubin_only(make_image(1))));
}

TEST_F(StoreChainTest, no_store_at_all_still_compiles) {
  bool compiled = false;
  const auto image = walk_stores(
      {}, LogLevel::kInfo, make_key(1), [] { return make_image(1); }, &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(same(image, make_image(1)));
}

// The key as another NVRTC would make it: the identity is the compiler field of the key.
CacheKey with_compiler(int i, const std::string& compiler) {
  CacheKey key = make_key(i);
  key.compiler = compiler;
  return key;
}

TEST_F(StoreChainTest, debug_log_explains_a_miss_caused_by_another_nvrtc_identity_in_one_line) {
  {
    LocalStore old(config());
    old.get_or_compile(with_compiler(1, "libnvrtc.so.13.0.48:108000000"), [] { return make_image(1); });
    old.get_or_compile(with_compiler(2, "libnvrtc.so.13.0.48:108000000"), [] { return make_image(2); });
  }
  CacheConfig c = config();
  c.log = LogLevel::kDebug;
  StoreChain stores(c);
  ::testing::internal::CaptureStderr();
  bool compiled = false;
  stores.get_or_compile(
      with_compiler(1, "libnvrtc.so.13.0.88:109338064"), [] { return make_image(1); }, &compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(compiled);
  std::vector<std::string> misses;
  std::size_t at = 0;
  for (std::size_t end; (end = err.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = err.substr(at, end - at);
    if (line.find(": miss in ") != std::string::npos) misses.push_back(line);
  }
  ASSERT_EQ(misses.size(), 1u) << err;
  const std::string& line = misses[0];
  EXPECT_EQ(line.rfind("tropical: ", 0), 0u) << line;
  EXPECT_NE(line.find(make_key(1).kernel_name + " sm_90: miss in local " + dir_.string()), std::string::npos)
      << line;
  EXPECT_NE(line.find("entry for another NVRTC identity"), std::string::npos) << line;
  EXPECT_NE(line.find("libnvrtc.so.13.0.48:108000000"), std::string::npos) << line;
  EXPECT_NE(line.find("libnvrtc.so.13.0.88:109338064"), std::string::npos) << line;
  EXPECT_NE(err.find(": compiled in "), std::string::npos) << err;
  EXPECT_NE(err.find(": stored in local "), std::string::npos) << err;

  ::testing::internal::CaptureStderr();
  stores.get_or_compile(
      with_compiler(1, "libnvrtc.so.13.0.88:109338064"), [] { return make_image(1); }, &compiled);
  stores.get_or_compile(
      make_key(3), [] { return make_image(3); }, &compiled);
  const std::string later = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(later.find(make_key(1).kernel_name + " sm_90: hit in local "), std::string::npos) << later;
  EXPECT_NE(later.find(make_key(3).kernel_name + " sm_90: miss in local " + dir_.string() + ": no entry"),
            std::string::npos)
      << later;
}

TEST_F(StoreChainTest, debug_log_names_damage_and_the_log_is_silent_when_off) {
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(1), [] { return make_image(1); });
  }
  std::string bytes = read_file(LocalStore(config()).entry_path(make_key(1)));
  bytes[bytes.size() / 2] ^= 1;
  write_file(LocalStore(config()).entry_path(make_key(1)), bytes);
  {
    CacheConfig c = config();
    c.log = LogLevel::kInfo;
    StoreChain stores(c);
    ::testing::internal::CaptureStderr();
    stores.get_or_compile(make_key(1), [] { return make_image(1); });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("miss in local " + dir_.string() + ": corrupt entry"), std::string::npos) << err;
  }
  StoreChain quiet(config());
  ::testing::internal::CaptureStderr();
  quiet.get_or_compile(make_key(1), [] { return make_image(1); });
  quiet.get_or_compile(make_key(2), [] { return make_image(2); });
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// The log's other causes: another format, a refused file, a hit below the primary, an eviction.
TEST_F(StoreChainTest, info_log_names_another_format_a_refused_entry_a_hit_below_and_an_eviction) {
  const auto capture = [](const auto& body) {
    ::testing::internal::CaptureStderr();
    body();
    return ::testing::internal::GetCapturedStderr();
  };
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string in_primary = ": miss in local " + dir_.string() + ": ";
  {
    LocalStore writer(config());
    writer.get_or_compile(make_key(2), [] { return make_image(2); });
  }
  // What format version 1 wrote for key 1, under its own name: the log reads no more than header and key.
  std::string key_v1 = make_key(1).serialize();
  key_v1[8 + std::string_view("tropical.jit.CacheKey").size()] = 1;
  // magic | u32 version 1, u32 flags 0 | u64 key size | u64 cubin size 0 | u64 ptx size 0 | checksum [32] |
  // key
  std::string v1("TROPJIT\n");
  for (const std::uint64_t field :
       {std::uint64_t{1}, std::uint64_t{key_v1.size()}, std::uint64_t{0}, std::uint64_t{0}}) {
    for (int i = 0; i < 8; ++i) v1.push_back(static_cast<char>(field >> (8 * i)));
  }
  v1 += std::string(32, '\0') + key_v1;
  const fs::path v1_path = dir_ / (Sha256::hex(Sha256::of(key_v1)) + ".entry");
  write_file(v1_path, v1);
  fs::permissions(v1_path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  // A sound entry this user's mode check refuses.
  fs::permissions(LocalStore(config()).entry_path(make_key(2)),
                  fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);

  CacheConfig c = config();
  c.log = LogLevel::kInfo;
  {
    StoreChain stores(c);
    std::string err = capture([&] { stores.get_or_compile(make_key(1), [] { return make_image(1); }); });
    EXPECT_TRUE(has(err, make_key(1).kernel_name + " sm_90" + in_primary +
                             "entry for another format (version 1, this process " +
                             std::to_string(kCacheFormatVersion) + ")"))
        << err;
    err = capture([&] { stores.get_or_compile(make_key(2), [] { return make_image(2); }); });
    EXPECT_TRUE(
        has(err, make_key(2).kernel_name + " sm_90" + in_primary + "entry with mode 0644 (want 0600)"))
        << err;
    if (::geteuid() == 0) {
      const fs::path path = stores.primary().entry_path(make_key(2));
      ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
      fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
      err = capture([&] { stores.get_or_compile(make_key(2), [] { return make_image(2); }); });
      EXPECT_TRUE(has(err, in_primary + "entry owned by uid 65534")) << err;
    }
  }

  // A hit below the primary, and where it was copied.
  {
    LocalStore layer(below());
    layer.get_or_compile(make_key(3), [] { return make_image(3); });
  }
  std::vector<std::unique_ptr<Store>> others;
  others.push_back(std::make_unique<ReadOnlyStore>(below()));
  StoreChain layered(std::make_unique<LocalStore>(config()), std::move(others), LogLevel::kInfo);
  std::string err = capture([&] {
    layered.get_or_compile(make_key(3), [] { return make_image(3); });
    ASSERT_TRUE(layered.finish_promotions()) << "the copy is written in the background";
  });
  EXPECT_TRUE(has(err, make_key(3).kernel_name + " sm_90: hit in read-only local " + below().dir.string()))
      << err;
  EXPECT_TRUE(has(err, make_key(3).kernel_name + " sm_90: copied into local " + dir_.string())) << err;

  // An eviction: a limit of one entry and a half.
  CacheConfig small = c;
  small.dir = root_ / "small";
  small.max_bytes = entry_size() * 3 / 2;
  StoreChain tight(small);
  tight.get_or_compile(make_key(4), [] { return make_image(4); });
  err = capture([&] { tight.get_or_compile(make_key(5), [] { return make_image(5); }); });
  EXPECT_TRUE(has(err, "local " + small.dir.string() + ": evicted 1 entries (")) << err;
}

}  // namespace
}  // namespace tropical::storage
