// Every kernel of the catalog against the CPU reference on a real GPU:
// random data, sizes that are no multiple of any tile, infinities, integer
// extremes, transposes, and a product over 2048. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <array>
#include <type_traits>
#include <vector>

#include "tropical/device_buffer.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"
#include "tropical/jit/driver.hpp"
#include "test_data.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;

using gpu_test::AllPairs;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

struct Shape {
  std::int64_t m, n, k;
  Trans ta, tb;
};

std::string describe(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         (s.ta == Trans::kYes ? " A^T" : "") + (s.tb == Trans::kYes ? " B^T" : "");
}

const std::vector<Shape> kShapes = {
    {1, 1, 1, Trans::kNo, Trans::kNo},      {7, 7, 7, Trans::kNo, Trans::kNo},
    {129, 65, 129, Trans::kNo, Trans::kNo}, {1000, 7, 129, Trans::kYes, Trans::kNo},
    {33, 1000, 17, Trans::kNo, Trans::kYes}, {129, 129, 1000, Trans::kYes, Trans::kYes},
    {5, 3, 0, Trans::kNo, Trans::kNo},
    // Single products that run on a small batched tile (pick_product), every transpose.
    {64, 40, 100, Trans::kYes, Trans::kYes}, {20, 64, 33, Trans::kNo, Trans::kYes},
    {32, 17, 64, Trans::kYes, Trans::kNo},
};
const Shape kLarge = {2049, 65, 2050, Trans::kNo, Trans::kNo};

template <class P>
class GpuCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) {
      GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    }
  }
};

TYPED_TEST_SUITE(GpuCatalog, AllPairs);

template <class S, class T>
void check_gemm(const Shape& s, std::uint64_t seed, bool extremes) {
  std::mt19937_64 rng(seed);
  const std::int64_t lda = (s.ta == Trans::kYes ? s.m : s.k) + 3;  // padded rows
  const std::int64_t ldb = (s.tb == Trans::kYes ? s.k : s.n) + 1;
  const std::int64_t ldc = s.n + 2;
  const std::int64_t rows_a = s.ta == Trans::kYes ? s.k : s.m;
  const std::int64_t rows_b = s.tb == Trans::kYes ? s.n : s.k;
  const auto a = random_matrix<S, T>(static_cast<std::size_t>(rows_a * lda), rng, extremes);
  const auto b = random_matrix<S, T>(static_cast<std::size_t>(rows_b * ldb), rng, extremes);
  const std::size_t c_size = static_cast<std::size_t>(s.m * ldc);
  std::vector<T> want(c_size, T(42)), want_arg_c(c_size, T(42));
  std::vector<std::int32_t> want_arg(c_size, 7);
  reference::gemm<S, T>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, want.data(), ldc);
  reference::gemm_argmax<S, T>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, want_arg_c.data(), ldc,
                               want_arg.data(), ldc);

  DeviceBuffer<T> da(a), db(b), dc(std::vector<T>(c_size, T(42)));
  gemm<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, dc.get(), ldc);
  expect_equal(dc.download(c_size), want, "gemm " + describe(s));

  DeviceBuffer<T> dc2(std::vector<T>(c_size, T(42)));
  DeviceBuffer<std::int32_t> darg(std::vector<std::int32_t>(c_size, 7));
  gemm_argmax<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, dc2.get(), ldc, darg.get(), ldc);
  expect_equal(dc2.download(c_size), want_arg_c, "gemm_argmax values " + describe(s));
  expect_equal(darg.download(c_size), want_arg, "gemm_argmax indices " + describe(s));

  if constexpr (kInCatalog<S, T, Op::kBackwardA>) {
    const auto gc = random_matrix<MaxPlus, T>(c_size, rng, false);
    const std::size_t ga_size = static_cast<std::size_t>(rows_a * lda), gb_size = static_cast<std::size_t>(rows_b * ldb);
    std::vector<T> want_ga(ga_size, T(9)), want_gb(gb_size, T(9));
    reference::backward_a<S, T>(s.ta, s.tb, s.m, s.n, s.k, gc.data(), ldc, want_arg.data(), ldc, b.data(), ldb,
                                want_ga.data(), lda);
    reference::backward_b<S, T>(s.ta, s.tb, s.m, s.n, s.k, gc.data(), ldc, want_arg.data(), ldc, a.data(), lda,
                                want_gb.data(), ldb);
    DeviceBuffer<T> dgc(gc), dga(std::vector<T>(ga_size, T(9))), dgb(std::vector<T>(gb_size, T(9)));
    backward_a<S, T>(s.ta, s.tb, s.m, s.n, s.k, dgc.get(), ldc, darg.get(), ldc, db.get(), ldb, dga.get(), lda);
    backward_b<S, T>(s.ta, s.tb, s.m, s.n, s.k, dgc.get(), ldc, darg.get(), ldc, da.get(), lda, dgb.get(), ldb);
    // Atomic sums add in any order, so each element may differ from the
    // reference by rounding: bound it by eps x (number of terms) x the sum of
    // the terms' magnitudes, which the reference gives on |operands|.
    auto absolute = [](std::vector<T> v) {
      for (auto& x : v) x = std::abs(x);
      return v;
    };
    std::vector<T> mag_ga(ga_size), mag_gb(gb_size);
    reference::backward_a<S, T>(s.ta, s.tb, s.m, s.n, s.k, absolute(gc).data(), ldc, want_arg.data(), ldc,
                                absolute(b).data(), ldb, mag_ga.data(), lda);
    reference::backward_b<S, T>(s.ta, s.tb, s.m, s.n, s.k, absolute(gc).data(), ldc, want_arg.data(), ldc,
                                absolute(a).data(), lda, mag_gb.data(), ldb);
    const T rel = std::numeric_limits<T>::epsilon() * T(2) * static_cast<T>(std::max(s.m, s.n));
    for (auto [got, want, mag, name] : {std::tuple{dga.download(ga_size), want_ga, mag_ga, "backward_a"},
                                        std::tuple{dgb.download(gb_size), want_gb, mag_gb, "backward_b"}}) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const T tol = rel * mag[i] + std::numeric_limits<T>::denorm_min();
        const bool ok = (std::isnan(want[i]) && std::isnan(got[i])) || (std::isinf(want[i]) && got[i] == want[i]) ||
                        std::abs(got[i] - want[i]) <= tol;
        if (!ok && bad++ < 5) ADD_FAILURE() << name << " " << describe(s) << ": element " << i << " is " << got[i] << ", want " << want[i] << " (tolerance " << tol << ")";
      }
      EXPECT_EQ(bad, 0u);
    }
  }
}

TYPED_TEST(GpuCatalog, every_op_matches_the_reference_on_random_data) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::uint64_t seed = 1;
  for (const auto& s : kShapes) check_gemm<S, T>(s, seed++, false);
}

TYPED_TEST(GpuCatalog, every_op_matches_the_reference_with_infinities_and_extremes) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::uint64_t seed = 100;
  for (const auto& s : kShapes) check_gemm<S, T>(s, seed++, true);
}

TYPED_TEST(GpuCatalog, a_product_over_2048_matches_the_reference) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  check_gemm<S, T>(kLarge, 7, true);
}

TYPED_TEST(GpuCatalog, batched_matches_independent_reference_products) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(5);
  for (const auto& [m, n, k, batch] : std::vector<std::array<std::int64_t, 4>>{{7, 9, 13, 70000}, {129, 65, 33, 3}, {64, 64, 64, 17}}) {
    const std::int64_t sa = m * k + 5, sb = k * n, sc = m * n + 1;
    const auto a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, true);
    const auto b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, true);
    const std::size_t c_size = static_cast<std::size_t>(sc * batch);
    std::vector<T> want(c_size, T(3));
    reference::gemm_batched<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, sa, b.data(), n, sb, want.data(), n,
                                  sc, batch);
    DeviceBuffer<T> da(a), db(b), dc(std::vector<T>(c_size, T(3)));
    gemm_batched<S, T>(Trans::kNo, Trans::kNo, m, n, k, da.get(), k, sa, db.get(), n, sb, dc.get(), n, sc, batch);
    expect_equal(dc.download(c_size), want, "gemm_batched " + std::to_string(batch) + " x " + std::to_string(m));
  }
}

TEST(GpuApi, host_pointer_is_rejected_with_invalid_argument) {
  if (!drv::available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  std::vector<float> host(16);
  DeviceBuffer<float> dev(16);
  EXPECT_THROW((gemm<MaxPlus, float>(4, 4, 1, host.data(), dev.get(), dev.get())), InvalidArgument);
  EXPECT_THROW((gemm<MaxPlus, float>(4, 4, 1, nullptr, dev.get(), dev.get())), InvalidArgument);
}

TEST(GpuApi, maxmul_backward_without_its_operand_is_rejected) {
  if (!drv::available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  DeviceBuffer<float> gc(16), ga(16);
  DeviceBuffer<std::int32_t> arg(16);
  // MaxMul's gradient reads B: null is an argument error, not a fault on the GPU.
  EXPECT_THROW((backward_a<MaxMul, float>(Trans::kNo, Trans::kNo, 4, 4, 4, gc.get(), 4, arg.get(), 4, nullptr, 4,
                                          ga.get(), 4)),
               InvalidArgument);
  // (+) semirings never read it.
  EXPECT_NO_THROW((backward_a<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, gc.get(), 4, arg.get(), 4, nullptr,
                                              4, ga.get(), 4)));
}

TEST(GpuApi, kernels_on_two_devices) {
  if (!drv::available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  if (drv::device_count() < 2) {
    GTEST_SKIP() << "one GPU only: the two-device test needs two";
  }
  std::mt19937_64 rng(3);
  const std::int64_t m = 130, n = 70, k = 129;
  const auto a = random_matrix<MaxPlus, float>(static_cast<std::size_t>(m * k), rng, true);
  const auto b = random_matrix<MaxPlus, float>(static_cast<std::size_t>(k * n), rng, true);
  std::vector<float> want(static_cast<std::size_t>(m * n));
  reference::gemm<MaxPlus, float>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, want.data(), n);
  const auto id = static_cast<std::uint32_t>(kernel_id<MaxPlus, float, Op::kGemm>());
  for (int d = 0; d < 2; ++d) {
    // The operands' device runs the product, in its own module.
    DeviceBuffer<float> da(a, d), db(b, d), dc(want.size(), d);
    gemm<MaxPlus, float>(m, n, k, da.get(), db.get(), dc.get());
    expect_equal(dc.download(want.size()), want, "gemm on device " + std::to_string(d));
  }
  EXPECT_NE(registry().function(id, 0), registry().function(id, 1));
  // Operands on two devices are refused.
  DeviceBuffer<float> a0(a, 0), b1(b, 1), c0(want.size(), 0);
  EXPECT_THROW((gemm<MaxPlus, float>(m, n, k, a0.get(), b1.get(), c0.get())), InvalidArgument);
  // Devices of one arch share one compiled image.
  if (drv::device_arch(0) == drv::device_arch(1)) {
    const auto s = registry().stats()[id];
    EXPECT_LE(s.compiles + s.disk_hits, 1u);
    EXPECT_EQ(s.loads, 2u);
  }
}

}  // namespace
}  // namespace tropical
