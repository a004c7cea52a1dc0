// The packed AndOr product on a real GPU against the CPU backend's, bit for bit (every output form, odd
// sizes, k not a multiple of 32 or 256, padding ones past k, aligned and unaligned leading dimensions,
// batches with a shared operand), the closure's packed transpose against the bitwise one, and the GPU closure
// against the CPU one (padded rows, the caller's stream). On an sm_90 device, also the wgmma kernel against the
// mma.sync one, both launched directly on the same operands (and products the public API sends to either). meson runs it on the tier the
// registry serves, on the quick tier alone (TROPICAL_TIERED=quick) and on the tuned one alone
// (TROPICAL_TIERED=0). Skips without a GPU.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../src/bits_transpose.hpp"
#include "../../src/bits_wgmma.hpp"
#include "../emulation/bits_transpose_cases.hpp"
#include "tropical/bits.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/tiers.hpp"

namespace tropical {
namespace {

std::vector<std::uint32_t> random_words(std::mt19937_64& rng, std::int64_t rows, std::int64_t k,
                                        std::int64_t ld, double p) {
  std::bernoulli_distribution bit(p);
  std::vector<std::uint32_t> w(static_cast<std::size_t>(rows * ld + 4), ~0u);  // padding bits set: never read
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < k; ++j) {
      if (!bit(rng)) w[r * ld + j / 32] &= ~(1u << (j % 32));
    }
  }
  return w;
}

class BitsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    // A cache of this process's own, never the user's, set before the library first reads it.
    static const bool fresh = [] {
      std::string pattern = (std::filesystem::temp_directory_path() / "tropical-bits-XXXXXX").string();
      return setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1) == 0;
    }();
    ASSERT_TRUE(fresh);
  }
};

struct Case {
  std::int64_t m, n, k, batch, pad;
  double p;
  bool shared_b;
};

TEST_F(BitsGpu, products_equal_the_cpu_backend) {
  std::mt19937_64 rng(7);
  for (const Case& s : std::vector<Case>{{1, 1, 1, 1, 0, 0.5, false},
                                         {17, 33, 31, 1, 0, 0.5, false},
                                         {130, 129, 300, 1, 4, 0.1, false},
                                         {257, 300, 1000, 1, 1, 0.01, false},
                                         {129, 255, 4099, 3, 0, 0.001, true},
                                         {1000, 1000, 1000, 1, 0, 0.002, false},
                                         {64, 64, 65536, 1, 3, 0.0002, false},
                                         {40, 70, 0, 2, 1, 0.5, false}}) {
    const std::int64_t lda = bits_words(s.k) + s.pad, ldb = bits_ld(s.k) + s.pad;
    const std::int64_t sa = s.m * lda, sb = s.shared_b ? 0 : s.n * ldb;
    const auto a = random_words(rng, s.batch * s.m, s.k, lda, s.p);
    const auto b = random_words(rng, s.shared_b ? s.n : s.batch * s.n, s.k, ldb, s.p);
    const DeviceBuffer<std::uint32_t> da(a), db(b);
    for (const BitsOutput output : {BitsOutput::kBits, BitsOutput::kBytes, BitsOutput::kCounts}) {
      const std::int64_t ldc = output == BitsOutput::kBits ? bits_words(s.n) + 1 : s.n + 3, sc = s.m * ldc;
      const std::size_t bytes =
          static_cast<std::size_t>(s.batch * sc) * (output == BitsOutput::kBytes ? 1 : 4);
      std::vector<std::uint8_t> want(bytes + 16, 0x5a);
      cpu::bits_gemm_batched(output, s.m, s.n, s.k, a.data(), lda, sa, b.data(), ldb, sb, want.data(), ldc,
                             sc, s.batch);
      DeviceBuffer<std::uint8_t> dc(want.size());
      dc.upload(std::vector<std::uint8_t>(want.size(), 0x5a));
      bits_gemm_batched(output, s.m, s.n, s.k, da.get(), lda, sa, db.get(), ldb, sb, dc.get(), ldc, sc,
                        s.batch);
      EXPECT_EQ(dc.download(want.size()), want) << "output " << static_cast<int>(output) << ", " << s.m << "x"
                                                << s.n << "x" << s.k << " batch " << s.batch;
    }
  }
}

TEST_F(BitsGpu, the_wgmma_kernel_equals_the_mma_kernel) {
  if (jit::driver::device_arch(0) != 90) GTEST_SKIP() << "the wgmma kernel runs on sm_90 devices alone";
  if (jit::tier_mode_from_env() == jit::TierMode::kQuickOnly) GTEST_SKIP() << "TROPICAL_TIERED=quick: no wgmma";
  ASSERT_TRUE(detail::bits_wgmma_ready(0)) << "the wgmma kernel did not compile (sm_90a) or load";
  std::mt19937_64 rng(11);
  constexpr auto kMma = catalog::KernelId::kGemmBitsB32;
  // k not a multiple of 32, 256 or 1024 (and of whole stages with a cut last word: 1019), m and n not of the
  // 128 x 256 tile, more products than one launch takes (70000: two launches of the wgmma kernel).
  for (const Case& s : std::vector<Case>{{1, 1, 1, 1, 0, 0.5, false},
                                         {17, 33, 31, 1, 4, 0.5, false},
                                         {130, 129, 300, 1, 0, 0.1, false},
                                         {257, 300, 1000, 2, 4, 0.01, false},
                                         {129, 255, 4099, 3, 0, 0.001, true},
                                         {1000, 1000, 1019, 1, 0, 0.003, false},
                                         {300, 700, 2049, 2, 8, 0.002, false},
                                         {64, 64, 65536, 1, 4, 0.0002, false},
                                         {3, 5, 40, 70000, 0, 0.3, false}}) {
    const std::int64_t lda = (bits_words(s.k) + 3) / 4 * 4 + s.pad, ldb = bits_ld(s.k) + s.pad;
    const std::int64_t sa = s.m * lda, sb = s.shared_b ? 0 : s.n * ldb;
    const auto a = random_words(rng, s.batch * s.m, s.k, lda, s.p);
    const auto b = random_words(rng, s.shared_b ? s.n : s.batch * s.n, s.k, ldb, s.p);
    const DeviceBuffer<std::uint32_t> da(a), db(b);
    for (const int output : {0, 1, 2}) {
      const std::int64_t ldc = output == 0 ? bits_words(s.n) + 1 : s.n + 3, sc = s.m * ldc;
      const std::size_t bytes = static_cast<std::size_t>(s.batch * sc) * (output == 1 ? 1 : 4) + 16;
      const std::vector<std::uint8_t> fill(bytes, 0x5a);
      DeviceBuffer<std::uint8_t> mma(fill), wgmma(fill);
      catalog::BitsArgs args{.a = da.get(), .bt = db.get(), .c = mma.get(), .m = s.m, .n = s.n, .kk = s.k,
                             .lda = lda, .ldb = ldb, .ldc = ldc, .output = output, .stride_a = sa, .stride_b = sb,
                             .stride_c = sc, .batch = s.batch};
      ASSERT_TRUE(detail::bits_wgmma_fits(args));
      const detail::Extent extent{s.m, s.n, s.k, s.batch};
      const jit::LaunchShape& tuned = catalog::kTunedLaunch[static_cast<std::size_t>(kMma)];
      detail::launch_one_tier(kMma, 0, detail::grid_for(tuned, extent), nullptr, args);
      args.c = wgmma.get();
      detail::bits_wgmma_launch(0, args, nullptr);
      const auto want = mma.download(bytes);
      EXPECT_EQ(wgmma.download(bytes), want) << "output " << output << ", " << s.m << "x" << s.n << "x" << s.k
                                             << " batch " << s.batch << " lda " << lda;
      if (s.batch <= 3) {  // and both against the CPU backend
        std::vector<std::uint8_t> host(fill);
        cpu::bits_gemm_batched(static_cast<BitsOutput>(output), s.m, s.n, s.k, a.data(), lda, sa, b.data(), ldb,
                               sb, host.data(), ldc, sc, s.batch);
        EXPECT_EQ(want, host) << "output " << output << ", " << s.m << "x" << s.n << "x" << s.k;
      }
    }
  }
}

TEST_F(BitsGpu, the_closures_transpose_equals_the_bitwise_one) {
  std::mt19937_64 rng(9);
  struct Shape {
    std::int64_t rows, cols, pad_src, pad_dst;
    double p;
  };
  for (const Shape& s : {Shape{1, 1, 0, 0, 0.5}, Shape{33, 70, 1, 2, 0.5}, Shape{300, 257, 3, 0, 0.1},
                         Shape{4099, 700, 0, 5, 0.3}, Shape{700, 4099, 7, 1, 0.01}, Shape{4096, 4096, 0, 0, 0.001}}) {
    const std::int64_t lds = bits_words(s.cols) + s.pad_src, ldd = bits_words(s.rows) + s.pad_dst;
    const auto src = bits_transpose_test::random_words(rng, s.rows, s.cols, lds, s.p);
    const DeviceBuffer<std::uint32_t> dsrc(src);
    for (const bool identity : {false, true}) {
      std::uint64_t pairs = 0;
      const auto want = bits_transpose_test::transposed(src, s.rows, s.cols, lds, ldd, identity, &pairs);
      DeviceBuffer<std::uint32_t> ddst(std::vector<std::uint32_t>(want.size(), bits_transpose_test::kSentinel));
      DeviceBuffer<unsigned long long> count(std::vector<unsigned long long>{0});
      detail::bits_transpose(0, s.rows, s.cols, dsrc.get(), lds, ddst.get(), ldd, identity, count.get(), nullptr);
      EXPECT_EQ(ddst.download(want.size()), want) << s.rows << " x " << s.cols << " identity " << identity;
      EXPECT_EQ(count.download(1)[0], pairs) << s.rows << " x " << s.cols << " identity " << identity;
    }
  }
}

TEST_F(BitsGpu, closure_equals_the_cpu_closure) {
  std::mt19937_64 rng(8);
  // A stream of the device's primary context (ordered after the synchronous uploads: not a non-blocking one).
  const jit::driver::ScopedContext context(0);
  CUstream stream = nullptr;
  ASSERT_EQ(jit::driver::api().cuStreamCreate(&stream, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  struct Graph {
    std::int64_t n;
    double degree;
    std::int64_t pad;  // words past bits_ld(n) (or past bits_words(n): -1)
    bool own_stream;
  };
  for (const Graph& g : {Graph{1, 0.0, 0, false}, Graph{300, 1.5, 0, false}, Graph{2000, 1.2, 0, false},
                         Graph{2000, 1.2, -1, true}, Graph{2600, 1.05, 3, true}}) {
    const std::int64_t ld = g.pad < 0 ? bits_words(g.n) : bits_ld(g.n) + g.pad;
    auto words = random_words(rng, g.n, g.n, ld, g.degree / static_cast<double>(g.n));
    DeviceBuffer<std::uint32_t> dw(words);
    const std::int64_t gpu_iterations = bits_closure(g.n, dw.get(), ld, g.own_stream ? stream : nullptr);
    const std::int64_t cpu_iterations = cpu::bits_closure(g.n, words.data(), ld);
    // Every word: the closure's, and the padding words past them as they were.
    EXPECT_EQ(dw.download(words.size()), words) << "n = " << g.n << ", ld = " << ld;
    EXPECT_EQ(gpu_iterations, cpu_iterations) << "n = " << g.n;
  }
  jit::driver::api().cuStreamDestroy(stream);
}

}  // namespace
}  // namespace tropical
