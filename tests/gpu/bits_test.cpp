// The packed AndOr product on a real GPU against the CPU backend's, bit for bit (every output form, odd
// sizes, k not a multiple of 32 or 256, padding ones past k, aligned and unaligned leading dimensions,
// batches with a shared operand), and the GPU closure against the CPU one. meson runs it on the tier the
// registry serves, on the quick tier alone (TROPICAL_TIERED=quick) and on the tuned one alone
// (TROPICAL_TIERED=0). Skips without a GPU.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tropical/bits.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"

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

TEST_F(BitsGpu, closure_equals_the_cpu_closure) {
  std::mt19937_64 rng(8);
  for (const auto& [n, degree] :
       std::vector<std::pair<std::int64_t, double>>{{1, 0.0}, {300, 1.5}, {2000, 1.2}}) {
    const std::int64_t ld = bits_ld(n);
    auto words = random_words(rng, n, n, ld, degree / static_cast<double>(n));
    DeviceBuffer<std::uint32_t> dw(words);
    const std::int64_t gpu_iterations = bits_closure(n, dw.get(), ld);
    const std::int64_t cpu_iterations = cpu::bits_closure(n, words.data(), ld);
    const auto got = dw.download(words.size());
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t w = 0; w < bits_words(n); ++w) {
        ASSERT_EQ(got[i * ld + w], words[i * ld + w]) << "n = " << n << ", row " << i << ", word " << w;
      }
    }
    EXPECT_EQ(gpu_iterations, cpu_iterations);
  }
}

}  // namespace
}  // namespace tropical
