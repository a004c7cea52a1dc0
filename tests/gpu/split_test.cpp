// Split k on a real GPU (src/split_k.cpp, templates/gemm_split.cu.j2): the public gemm, where its plan splits
// (tiles past whole waves: the kernel on the whole rows and the split rows as its programmatic dependent;
// tiles too few for one wave: every row split), is bit for bit the tuned kernel's unsplit product, the signs
// of zeros included, and the CPU reference where that is cheap. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/split_k.hpp"
#include "test_data.hpp"
#include "tier_launch.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

struct Shape {
  std::int64_t m, n, k;
  Trans ta, tb;
  bool reference;  // also against the CPU reference (small enough)
};

// 20 x 16 tiles of 128 x 128 (320, past the H200's 264 slots) at k 1024; 3 x 2 tiles at k 4096; one tile
// short in m and n at k 3000 (a partial last k-tile).
const Shape kShapes[] = {{2560, 2048, 1024, Trans::kNo, Trans::kNo, false},
                         {300, 200, 4096, Trans::kYes, Trans::kNo, true},
                         {100, 90, 3000, Trans::kNo, Trans::kYes, true}};

template <class S, class T>
void expect_split_is_unsplit(std::uint64_t seed) {
  testing::TierLauncher launcher;
  std::mt19937_64 rng(seed);
  // The split kernel is asked for without waiting (the product runs unsplit until it is compiled): wait for it,
  // and for the tuned kernel, which alone splits, before the products.
  const catalog::KernelId id = kernel_id<S, T, Op::kGemm>();
  catalog::KernelId split_id{};
  ASSERT_TRUE(catalog::split_kernel(id, &split_id)) << catalog::kInfo[static_cast<std::size_t>(id)].name;
  registry().function(static_cast<std::uint32_t>(split_id), 0);
  registry().function(static_cast<std::uint32_t>(id), 0);
  for (const Shape& s : kShapes) {
    const std::uint64_t splits = detail::split_launches();
    const std::string what = std::string(catalog::kInfo[static_cast<std::size_t>(kernel_id<S, T, Op::kGemm>())].name) +
                             " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    const std::int64_t lda = s.ta == Trans::kYes ? s.m : s.k, ldb = s.tb == Trans::kYes ? s.k : s.n, ldc = s.n;
    const auto a = random_matrix<S, T>(static_cast<std::size_t>(s.m * s.k), rng, true);
    const auto b = random_matrix<S, T>(static_cast<std::size_t>(s.k * s.n), rng, true);
    const std::size_t c_size = static_cast<std::size_t>(s.m * s.n);
    DeviceBuffer<T> da(a), db(b), split(std::vector<T>(c_size, T(3))), whole(std::vector<T>(c_size, T(5)));
    gemm<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, split.get(), ldc);
    launcher.gemm(kernel_id<S, T, Op::kGemm>(), jit::Tier::kTuned, s.m, s.n, s.k, da.get(), lda, db.get(), ldb,
                  whole.get(), ldc, s.ta == Trans::kYes, s.tb == Trans::kYes);
    // Tiles too few to fill one wave (the shapes checked against the reference) always split.
    if (s.reference) {
      EXPECT_EQ(detail::split_launches(), splits + 1) << what << " did not split";
    }
    const std::vector<T> got = split.download(c_size), want = whole.download(c_size);
    expect_equal(got, want, "split against the unsplit kernel " + what);
    if constexpr (std::is_floating_point_v<T>) {
      std::size_t signs = 0;
      for (std::size_t i = 0; i < got.size(); ++i) signs += std::signbit(got[i]) != std::signbit(want[i]);
      EXPECT_EQ(signs, 0u) << "the sign of a zero differs: " << what;
    }
    if (s.reference) {
      std::vector<T> ref(c_size, T(7));
      reference::gemm<S, T>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, ref.data(), ldc);
      expect_equal(got, ref, "split against the reference " + what);
    }
  }
}

class GpuSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};

TEST_F(GpuSplit, float_products_split_to_the_unsplit_bits) {
  expect_split_is_unsplit<MaxPlus, float>(1);
  expect_split_is_unsplit<MaxMul, float>(2);
  expect_split_is_unsplit<MinPlus, double>(3);
}

TEST_F(GpuSplit, integer_products_split_to_the_unsplit_bits) {
  expect_split_is_unsplit<MaxPlus, std::int16_t>(4);
  expect_split_is_unsplit<MinPlus, std::int32_t>(5);
  expect_split_is_unsplit<MaxMin, std::int64_t>(6);
  expect_split_is_unsplit<AndOr, std::uint8_t>(7);
}

}  // namespace
}  // namespace tropical
