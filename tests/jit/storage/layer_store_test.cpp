// Read-only layers: trusted only when owned by root or this user and not writable by group or others,
// every entry verified, hits copied into the primary, never written; the fallback primary.
#include "tropical/storage/layer_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_support.hpp"
#include "tropical/storage/promotion.hpp"
#include "tropical/storage/store_chain.hpp"

namespace tropical::storage {
namespace {

using namespace test;

class LayerStoreTest : public LocalStoreTest {
 protected:
  // A layer holding make_image(i) for each i, warmed through a local store, then made read-only.
  fs::path warmed_layer(std::initializer_list<int> keys) {
    CacheConfig c;
    c.dir = root_ / "layer";
    {
      LocalStore warm(c);
      for (int i : keys) warm.get_or_compile(make_key(i), [&] { return make_image(i); });
    }
    ::chmod(c.dir.c_str(), 0555);
    return c.dir;
  }

  CacheConfig with_layer(const fs::path& layer) const {
    CacheConfig c = config();
    c.layers = {layer};
    c.prebuilt_layer = false;
    return c;
  }
};

TEST_F(LayerStoreTest, hit_in_a_layer_is_promoted_into_the_primary_and_compiles_nothing) {
  const fs::path layer = warmed_layer({1, 2});
  StoreChain stores(with_layer(layer));
  ASSERT_EQ(stores.list().size(), 2u);
  bool compiled = true;
  const CompiledImage image = stores.get_or_compile(
      make_key(1), [] { return make_image(99); }, &compiled);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(image.cubin, make_image(1).cubin);
  ASSERT_TRUE(stores.finish_promotions());
  EXPECT_TRUE(fs::exists(stores.primary().entry_path(make_key(1))));
  EXPECT_FALSE(fs::exists(stores.primary().entry_path(make_key(2))));
  const StoreInfo info = stores.list()[1]->describe();
  EXPECT_TRUE(info.usable);
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.hits, 1u);
}

// The caller of a layer hit reads the CUBIN only; the copier reads the entry again, whole, uncounted.
TEST_F(LayerStoreTest, a_layer_hit_copies_the_whole_entry_though_the_caller_read_only_its_cubin) {
  const fs::path layer = warmed_layer({1});
  StoreChain stores(with_layer(layer));
  bool compiled = true;
  const CompiledImage image = stores.get_or_compile(
      make_key(1), [] { return make_image(99); }, &compiled, ImageParts::kCubin);
  EXPECT_FALSE(compiled);
  EXPECT_EQ(image.cubin, make_image(1).cubin);
  EXPECT_TRUE(image.ptx.empty());
  ASSERT_TRUE(stores.finish_promotions());
  const auto copied = stores.primary().load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value());
  EXPECT_TRUE(same(*copied, make_image(1))) << "the copy holds the PTX the caller did not read";
  EXPECT_EQ(stores.list()[1]->describe().hits, 1u) << "the copier's read is no second hit";

  // reread(): the whole entry, verified, not counted; a damaged entry is a miss.
  LayerStore store(layer, LogLevel::kOff, true);
  const StoreKey key(make_key(1));
  const Lookup whole = store.reread(key);
  ASSERT_TRUE(whole.image.has_value());
  EXPECT_TRUE(same(*whole.image, make_image(1)));
  EXPECT_EQ(store.describe().hits, 0u);
  EXPECT_FALSE(store.reread(StoreKey(make_key(2))).image.has_value());
}

// The copier reads the entry again: one that went away (or was damaged) since the caller's read is not
// copied, and the primary is left without it (the next process reads the layer again).
TEST_F(LayerStoreTest, a_copy_from_a_layer_whose_entry_went_away_writes_nothing) {
  const fs::path layer = warmed_layer({1});
  LayerStore from(layer, LogLevel::kOff, true);
  LocalStore primary(config());
  {
    Promotions promotions(LogLevel::kOff);
    promotions.copy_from(StoreKey(make_key(2)), &from, {&primary});  // never in the layer
    ASSERT_TRUE(promotions.wait(std::chrono::seconds(10)));
    EXPECT_FALSE(primary.load(make_key(2), ImageParts::kCubin).has_value());
    promotions.copy_from(StoreKey(make_key(1)), &from, {&primary});
    ASSERT_TRUE(promotions.wait(std::chrono::seconds(10)));
  }
  const auto copied = primary.load(make_key(1), ImageParts::kCubinAndPtx);
  ASSERT_TRUE(copied.has_value());
  EXPECT_TRUE(same(*copied, make_image(1)));
  EXPECT_EQ(from.describe().hits, 0u) << "the copier's reads are not hits";
}

TEST_F(LayerStoreTest, layer_writable_by_others_or_group_is_refused_and_the_walk_compiles) {
  for (const mode_t mode : {0757, 0775}) {
    const fs::path layer = warmed_layer({1});
    ::chmod(layer.c_str(), mode);
    LayerStore store(layer, LogLevel::kOff, true);
    EXPECT_FALSE(store.trusted()) << std::oct << mode;
    EXPECT_NE(store.describe().status.find("refused: writable by"), std::string::npos);
    const StoreKey key(make_key(1));
    EXPECT_FALSE(store.lookup(key, ImageParts::kCubin).image);
    ::chmod(layer.c_str(), 0755);
  }
}

// Flips one byte of the layer's entry for make_key(1): in the middle of its CUBIN, or its last byte (the PTX).
fs::path tamper(const fs::path& layer, bool in_cubin) {
  CacheConfig c;
  c.dir = layer;
  const fs::path entry = LocalStore(c).entry_path(make_key(1));
  ::chmod(layer.c_str(), 0755);
  std::string bytes = read_file(entry);
  const auto& cubin = make_image(1).cubin;
  const std::size_t at = in_cubin ? bytes.find(std::string(reinterpret_cast<const char*>(cubin.data()), cubin.size())) +
                                        cubin.size() / 2
                                  : bytes.size() - 1;
  EXPECT_LT(at, bytes.size());
  bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  {
    std::FILE* f = std::fopen(entry.c_str(), "r+b");
    EXPECT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  ::chmod(layer.c_str(), 0555);
  return entry;
}

TEST_F(LayerStoreTest, tampered_entry_is_a_miss_and_the_layer_is_never_written) {
  const fs::path layer = warmed_layer({1});
  const fs::path entry = tamper(layer, true);
  const auto before = fs::last_write_time(entry);
  StoreChain stores(with_layer(layer));
  bool compiled = false;
  stores.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled, ImageParts::kCubin);
  EXPECT_TRUE(compiled);
  EXPECT_EQ(fs::last_write_time(entry), before);
  EXPECT_TRUE(fs::exists(stores.primary().entry_path(make_key(1))));
  EXPECT_FALSE(stores.list()[1]->can_store());
}

// A damaged PTX: a caller that reads the CUBIN (verified by its own checksum) is served, as from the primary;
// the copier's whole read fails, so nothing is copied; a caller that needs the PTX gets a miss and compiles.
TEST_F(LayerStoreTest, tampered_ptx_serves_the_cubin_copies_nothing_and_is_a_miss_for_a_ptx_reader) {
  const fs::path layer = warmed_layer({1});
  const fs::path entry = tamper(layer, false);
  const auto before = fs::last_write_time(entry);
  {
    StoreChain stores(with_layer(layer));
    bool compiled = true;
    const CompiledImage image = stores.get_or_compile(
        make_key(1), [] { return make_image(99); }, &compiled, ImageParts::kCubin);
    EXPECT_FALSE(compiled);
    EXPECT_EQ(image.cubin, make_image(1).cubin);
    ASSERT_TRUE(stores.finish_promotions());
    EXPECT_FALSE(fs::exists(stores.primary().entry_path(make_key(1))));
  }
  StoreChain stores(with_layer(layer));
  bool compiled = false;
  stores.get_or_compile(
      make_key(1), [] { return make_image(1); }, &compiled, ImageParts::kCubinAndPtx);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(fs::exists(stores.primary().entry_path(make_key(1))));
  EXPECT_EQ(fs::last_write_time(entry), before);
}

TEST_F(LayerStoreTest, entry_writable_by_others_is_refused) {
  const fs::path layer = warmed_layer({1});
  CacheConfig c;
  c.dir = layer;
  ::chmod(LocalStore(c).entry_path(make_key(1)).c_str(), 0666);
  LayerStore store(layer, LogLevel::kOff);
  const Lookup found = store.lookup(StoreKey(make_key(1)), ImageParts::kCubin);
  EXPECT_FALSE(found.image);
  EXPECT_EQ(found.miss, Miss::kRefused);
}

TEST_F(LayerStoreTest, missing_layer_warns_once_unless_quiet) {
  const fs::path missing = root_ / "nowhere";
  Child loud(
      [&] {
        LayerStore a(missing, LogLevel::kOff);
        LayerStore b(missing, LogLevel::kOff);
        return a.trusted() || b.trusted() ? 1 : 0;
      },
      true);
  const Outcome out = loud.wait();
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(count_of(out.err, "warning"), 1) << out.err;
  Child quiet([&] { return LayerStore(root_ / "elsewhere", LogLevel::kOff, true).trusted() ? 1 : 0; }, true);
  EXPECT_EQ(quiet.wait().err, "");
}

TEST_F(LayerStoreTest, primary_that_cannot_be_created_falls_back_to_a_private_directory_then_memory) {
  // A directory under a regular file cannot be created, even by root.
  const fs::path blocked = root_ / "a-file";
  std::FILE* file = std::fopen(blocked.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  CacheConfig c = config();
  c.dir = blocked / "cache";
  c.fallback_dir = root_ / "fallback";
  Child child(
      [&] {
        LocalStore store(c);
        if (!store.enabled() || store.config().dir != root_ / "fallback") return 1;
        CacheConfig none = c;
        none.dir = blocked / "other";
        none.fallback_dir = blocked / "also";
        LocalStore memory(none);
        return memory.enabled() ? 2 : 0;
      },
      true);
  const Outcome out = child.wait();
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(count_of(out.err, "warning"), 2) << out.err;  // one per store
  EXPECT_NE(out.err.find("memory only"), std::string::npos) << out.err;
  EXPECT_EQ(fs::status(root_ / "fallback").permissions(), fs::perms::owner_all);
}

// Root's --cache-dir /etc (or /dev, /usr, ...) is not adopted as a cache. The child mounts a
// private tmpfs over /etc first, so that a failure of this test writes into that, not into the real /etc.
TEST_F(LayerStoreTest, system_directory_is_not_adopted_as_a_cache) {
  Child child(
      [&] {
        if (!mount_private_tmpfs("/etc", "1m").empty()) return 77;
        CacheConfig c = config();
        c.dir = "/etc/";
        c.fallback_dir = root_ / "fallback";
        LocalStore store(c);
        std::error_code ignored;
        if (!std::filesystem::is_empty("/etc", ignored)) return 1;  // lock, statistics or entry files went in
        return store.config().dir == root_ / "fallback" ? 0 : 2;
      },
      true);
  const Outcome out = child.wait();
  if (out.exit_code == 77) GTEST_SKIP() << "no private mount namespace here";
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.err.find("a system directory"), std::string::npos) << out.err;
}

// The fallback under a shared $TMPDIR is not opened through a link another user planted
// under its name (with fs.protected_symlinks=0, as in many containers); the target stays untouched.
TEST_F(LayerStoreTest, fallback_planted_as_a_symbolic_link_is_not_followed) {
  const fs::path blocked = root_ / "a-file";
  std::FILE* file = std::fopen(blocked.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  const fs::path target = root_ / "attackers-choice";
  ASSERT_TRUE(fs::create_directory(target));
  fs::permissions(target, fs::perms::owner_all);
  fs::create_directory_symlink(target, root_ / "fallback");
  CacheConfig c = config();
  c.dir = blocked / "cache";
  c.fallback_dir = root_ / "fallback";
  Child child([&] { return LocalStore(c).enabled() ? 1 : 0; }, true);
  const Outcome out = child.wait();
  EXPECT_EQ(out.exit_code, 0) << "the fallback was used through the link: " << out.err;
  EXPECT_NE(out.err.find("memory only"), std::string::npos) << out.err;
  EXPECT_TRUE(fs::is_empty(target)) << "entries, locks or statistics went into the link's target";
}

}  // namespace
}  // namespace tropical::storage
