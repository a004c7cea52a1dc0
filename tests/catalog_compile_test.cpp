// Every generated fragment compiles alone with NVRTC, warning-free, for the
// architectures we ship for. Runs without a GPU (NVRTC is CPU-only).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tropical/catalog_sources.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/nvrtc.hpp"

namespace tropical {
namespace {

void compile_whole_catalog(int arch, jit::Catalog table = catalog::kKernels, jit::Effort effort = jit::Effort::kFull) {
  std::atomic<std::size_t> next{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (std::size_t i = next++; i < table.size(); i = next++) {
      const auto& kernel = table[i];
      if (kernel.source.empty()) continue;  // a kernel with one tier
      try {
        const storage::CompiledImage image = jit::compile(kernel, arch, effort);
        if (image.cubin.size() < 4 || image.ptx.find(kernel.name) == std::string::npos) {
          std::lock_guard lock(failures_mutex);
          failures.push_back(std::string(kernel.name) + ": empty CUBIN or PTX without the kernel");
        }
      } catch (const CompileError& e) {
        std::lock_guard lock(failures_mutex);
        failures.push_back(e.what());
      }
    }
  };
  std::vector<std::thread> threads(std::max(2u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(worker);
  for (auto& t : threads) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST(CatalogCompile, every_fragment_compiles_alone_for_sm_90) { compile_whole_catalog(90); }

TEST(CatalogCompile, every_fragment_compiles_alone_for_sm_80) { compile_whole_catalog(80); }

TEST(CatalogCompile, the_wgmma_kernel_runs_wgmma_as_sm_90a_and_is_a_stub_for_any_other_arch) {
  const auto& kernel = catalog::kKernels[static_cast<std::size_t>(catalog::KernelId::kBitsWgmmaB32)];
  EXPECT_EQ(kernel.feature_arch, 90);
  EXPECT_NE(jit::compile(kernel, 90).ptx.find("wgmma.mma_async"), std::string::npos);
  const std::string stub = jit::compile(kernel, 80).ptx;
  EXPECT_EQ(stub.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(stub.find("trap"), std::string::npos);
}

TEST(CatalogCompile, every_quick_fragment_compiles_alone_for_sm_90) {
  compile_whole_catalog(90, catalog::kQuickKernels, jit::effort_of(jit::Tier::kQuick));
}

TEST(CatalogCompile, every_quick_fragment_compiles_alone_for_sm_80) {
  compile_whole_catalog(80, catalog::kQuickKernels, jit::effort_of(jit::Tier::kQuick));
}

TEST(CatalogCompile, table_entries_are_dense_and_named_by_their_parameters) {
  for (std::size_t i = 0; i < catalog::kKernels.size(); ++i) {
    const auto& k = catalog::kKernels[i];
    EXPECT_EQ(k.id, i);
    EXPECT_EQ(k.name, catalog::kInfo[i].name);
    const auto& info = catalog::kInfo[i];
    std::string want = "tropical_";
    for (std::string_view part : {op_name(info.op), info.semiring, info.type, info.variant}) {
      if (part.empty()) continue;
      if (want.size() > 9) want += '_';
      want += part;
    }
    EXPECT_EQ(k.name, want);
    // A small tile is a variant of a default kernel of the same op, semiring and type.
    const auto& base = catalog::kInfo[static_cast<std::size_t>(info.base)];
    EXPECT_TRUE(base.variant.empty()) << k.name;
    EXPECT_EQ(base.op, info.op);
    EXPECT_EQ(k.name.substr(0, base.name.size()), base.name);
    EXPECT_EQ(k.digest.size(), 64u);
  }
}

}  // namespace
}  // namespace tropical
