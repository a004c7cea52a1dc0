// Split k on a real GPU (src/split_k.cpp, templates/gemm_split.cu.j2): the public gemm, where its plan splits
// (tiles past whole waves: the kernel on the whole rows and the split rows as its programmatic dependent;
// tiles too few for one wave: every row split), is bit for bit the tuned kernel's unsplit product, the signs
// of zeros included, and the CPU reference where that is cheap; alpha and beta through a split product; and
// what follows a split product on its stream (a copy of C, a product reading C) sees the whole of C. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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
  bool reference;  // also against the CPU reference (small enough); tiles too few for one wave
};

// 20 x 16 tiles of 128 x 128 (320, past the H200's 264 slots: both paths, whole rows and split rows) at k 1024;
// 3 x 2 tiles at k 4096; one tile short in m and n at k 3000 (a partial last k-tile).
const Shape kShapes[] = {{2560, 2048, 1024, Trans::kNo, Trans::kNo, false},
                         {300, 200, 4096, Trans::kYes, Trans::kNo, true},
                         {100, 90, 3000, Trans::kNo, Trans::kYes, true}};

/// Waits for the split kernel of S over T and for the tuned kernel, which alone splits (a product runs unsplit
/// until its split kernel is compiled, which it never waits for).
template <class S, class T>
void ready_to_split() {
  const catalog::KernelId id = kernel_id<S, T, Op::kGemm>();
  catalog::KernelId split_id{};
  ASSERT_TRUE(catalog::split_kernel(id, &split_id)) << catalog::kInfo[static_cast<std::size_t>(id)].name;
  registry().function(static_cast<std::uint32_t>(split_id), 0);
  registry().function(static_cast<std::uint32_t>(id), 0);
}

template <class S, class T>
void expect_split_is_unsplit(std::uint64_t seed) {
  testing::TierLauncher launcher;
  std::mt19937_64 rng(seed);
  ready_to_split<S, T>();
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
    // Tiles too few to fill one wave (the shapes checked against the reference) always split, every row.
    if (s.reference) {
      EXPECT_EQ(detail::split_launches(), splits + 1) << what << " did not split";
      EXPECT_EQ(detail::last_split_plan().whole_rows, 0) << what;
    } else if (detail::split_launches() > splits) {  // past whole waves: the kernel's rows, then the split rows
      EXPECT_GT(detail::last_split_plan().whole_rows, 0) << what << " split every row";
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

/// Multiprocessors of device 0.
int multiprocessors() {
  int count = 0;
  drv::api().cuDeviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  return count;
}

TEST_F(GpuSplit, the_first_product_past_whole_waves_takes_both_paths) {
  // 320 tiles at two blocks an SM: past whole waves below 160 SMs (the H200 has 132).
  if (multiprocessors() * 2 >= 320) GTEST_SKIP() << "320 tiles fit one wave of this device";
  ready_to_split<MaxPlus, float>();
  std::mt19937_64 rng(8);
  const Shape& s = kShapes[0];
  const auto a = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.m * s.k), rng, true);
  const auto b = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.k * s.n), rng, true);
  DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(s.m * s.n));
  const std::uint64_t splits = detail::split_launches();
  gemm<MaxPlus, float>(s.ta, s.tb, s.m, s.n, s.k, da.get(), s.k, db.get(), s.n, dc.get(), s.n);
  dc.download(1);
  ASSERT_EQ(detail::split_launches(), splits + 1) << "320 tiles of 128 x 128 at k 1024 did not split";
  EXPECT_GT(detail::last_split_plan().whole_rows, 0);
  EXPECT_GT(detail::last_split_plan().parts, 1);
}

TEST_F(GpuSplit, alpha_and_beta_through_a_split_product_are_the_references) {
  ready_to_split<MaxPlus, float>();
  ready_to_split<MinPlus, std::int32_t>();
  std::mt19937_64 rng(9);
  const Shape& s = kShapes[1];  // every row split
  const std::int64_t lda = s.m, ldb = s.n, ldc = s.n;
  const auto c_size = static_cast<std::size_t>(s.m * s.n);
  {
    const auto a = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.m * s.k), rng, true);
    const auto b = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.k * s.n), rng, true);
    const auto c = random_matrix<MaxPlus, float>(c_size, rng, true);
    DeviceBuffer<float> da(a), db(b), dc(c);
    const std::uint64_t splits = detail::split_launches();
    gemm<MaxPlus, float>(s.ta, s.tb, s.m, s.n, s.k, 2.5f, da.get(), lda, db.get(), ldb, 0.5f, dc.get(), ldc);
    std::vector<float> want = c;
    reference::gemm<MaxPlus, float>(s.ta, s.tb, s.m, s.n, s.k, 2.5f, a.data(), lda, b.data(), ldb, 0.5f,
                                    want.data(), ldc);
    EXPECT_EQ(detail::split_launches(), splits + 1) << "did not split";
    expect_equal(dc.download(c_size), want, "maxplus f32 alpha 2.5 beta 0.5, split");
  }
  {
    const auto a = random_matrix<MinPlus, std::int32_t>(static_cast<std::size_t>(s.m * s.k), rng, true);
    const auto b = random_matrix<MinPlus, std::int32_t>(static_cast<std::size_t>(s.k * s.n), rng, true);
    const auto c = random_matrix<MinPlus, std::int32_t>(c_size, rng, true);
    DeviceBuffer<std::int32_t> da(a), db(b), dc(c);
    const std::uint64_t splits = detail::split_launches();
    gemm<MinPlus, std::int32_t>(s.ta, s.tb, s.m, s.n, s.k, 3, da.get(), lda, db.get(), ldb, -2, dc.get(), ldc);
    std::vector<std::int32_t> want = c;
    reference::gemm<MinPlus, std::int32_t>(s.ta, s.tb, s.m, s.n, s.k, 3, a.data(), lda, b.data(), ldb, -2,
                                           want.data(), ldc);
    EXPECT_EQ(detail::split_launches(), splits + 1) << "did not split";
    expect_equal(dc.download(c_size), want, "minplus i32 alpha 3 beta -2, split");
  }
}

TEST_F(GpuSplit, what_follows_a_split_product_on_its_stream_sees_the_whole_of_c) {
  ready_to_split<MaxPlus, float>();
  testing::TierLauncher launcher;
  const auto& api = drv::api();
  drv::ScopedContext context(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::mt19937_64 rng(10);
  // C = A B past whole waves (the kernel's rows, then the split rows as its programmatic dependent), then on the
  // same stream a copy of C and D = C E (k 2048), against the tuned kernel's unsplit C and D from it.
  const Shape& s = kShapes[0];
  const std::int64_t p = 64;
  const auto a = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.m * s.k), rng, true);
  const auto b = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.k * s.n), rng, true);
  const auto e = random_matrix<MaxPlus, float>(static_cast<std::size_t>(s.n * p), rng, true);
  const auto c_size = static_cast<std::size_t>(s.m * s.n), d_size = static_cast<std::size_t>(s.m * p);
  DeviceBuffer<float> da(a), db(b), de(e), dc(std::vector<float>(c_size, 9.0f)), dd(d_size), whole(c_size),
      whole_d(d_size);
  std::vector<float> copied(c_size, 11.0f);
  const std::uint64_t splits = detail::split_launches();
  gemm<MaxPlus, float>(s.ta, s.tb, s.m, s.n, s.k, da.get(), s.k, db.get(), s.n, dc.get(), s.n, stream);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(copied.data(), reinterpret_cast<CUdeviceptr>(dc.get()), c_size * sizeof(float),
                                  stream),
            CUDA_SUCCESS);
  gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, s.m, p, s.n, dc.get(), s.n, de.get(), p, dd.get(), p, stream);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  const bool split = detail::split_launches() > splits;
  launcher.gemm(kernel_id<MaxPlus, float, Op::kGemm>(), jit::Tier::kTuned, s.m, s.n, s.k, da.get(), s.k, db.get(),
                s.n, whole.get(), s.n);
  launcher.gemm(kernel_id<MaxPlus, float, Op::kGemm>(), jit::Tier::kTuned, s.m, p, s.n, whole.get(), s.n,
                de.get(), p, whole_d.get(), p);
  const std::vector<float> want = whole.download(c_size);
  expect_equal(copied, want, "C copied on the split product's stream");
  expect_equal(dd.download(d_size), whole_d.download(d_size), "a product reading C on the split product's stream");
  api.cuStreamDestroy(stream);
  if (multiprocessors() * 2 < 320) {
    EXPECT_TRUE(split) << "the first product did not split";
  }
}

}  // namespace
}  // namespace tropical
