// The process-wide entry points: warm, stats, clear and info, through the
// registry every product uses, with the cache in a temporary directory.
#include "tropical/runtime.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "tropical/gemm.hpp"

namespace tropical {
namespace {

/// Points TROPICAL_CACHE_DIR at a fresh directory before the registry exists.
class CacheDirEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "tropical-runtime-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    setenv("TROPICAL_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("TROPICAL_CACHE_DISABLE");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static const std::filesystem::path& dir() { return dir_; }

 private:
  static inline std::filesystem::path dir_;
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new CacheDirEnvironment);

TEST(Runtime, warm_stats_info_and_clear_agree) {
  const catalog::KernelId id = kernel_id<MinPlus, double, Op::kGemm>();
  const auto index = static_cast<std::size_t>(id);
  EXPECT_EQ(info().dir, CacheDirEnvironment::dir());
  EXPECT_TRUE(info().enabled);
  EXPECT_EQ(info().entries, 0u);

  const WarmReport first = warm(90, std::span(&id, 1));
  EXPECT_EQ(first.compiled, 1u);
  EXPECT_TRUE(first.errors.empty());
  Stats s = stats();
  EXPECT_EQ(s.kernels[index].compiles, 1u);
  EXPECT_GT(s.kernels[index].compile_ns, 0u);
  EXPECT_EQ(s.machine.compiles, 1u);
  EXPECT_EQ(s.process.compiles, 1u);
  EXPECT_EQ(info().entries, 1u);
  EXPECT_GT(info().bytes, 0u);

  // In memory now: nothing to do. Another arch is another entry.
  const WarmReport again = warm(90, std::span(&id, 1));
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(again.ready, 1u);
  EXPECT_EQ(warm(80, std::span(&id, 1)).compiled, 1u);
  EXPECT_EQ(info().entries, 2u);

  EXPECT_EQ(clear(), 2u);
  EXPECT_EQ(info().entries, 0u);
  EXPECT_EQ(stats().kernels[index].compiles, 2u);  // counters survive clear()
}

TEST(Runtime, warm_reports_a_bad_arch_per_kernel_without_throwing) {
  const catalog::KernelId id = kernel_id<MaxPlus, float, Op::kGemm>();
  const WarmReport report = warm(12, std::span(&id, 1));  // sm_12 does not exist
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("sm_12"), std::string::npos) << report.errors[0];
  EXPECT_EQ(report.compiled, 0u);
}

}  // namespace
}  // namespace tropical
