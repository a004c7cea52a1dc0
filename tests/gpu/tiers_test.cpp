// Every quick kernel on a real GPU: equal to the CPU reference and
// bit-identical to its tuned kernel (C and argmax), on random data and on
// infinities and extremes, over sizes that are no multiple of any tile,
// transposes, k = 0 and a product over 2048. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <array>
#include <vector>

#include "tier_launch.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;
using jit::Tier;

/// Random operands for semiring S: finite values, and with `extremes` some infinities or integer extremes.
template <class S, class T>
std::vector<T> random_matrix(std::size_t n, std::mt19937_64& rng, bool extremes) {
  std::vector<T> v(n);
  const bool nonneg = S::kMul == MulKind::kMul;
  std::uniform_int_distribution<int> small(nonneg ? 0 : -1000, 1000);
  std::uniform_int_distribution<int> pick(0, 99);
  for (auto& x : v) {
    x = std::is_floating_point_v<T> ? static_cast<T>(small(rng)) / T(37) : static_cast<T>(small(rng));
    const int p = extremes ? pick(rng) : 99;
    if constexpr (std::is_floating_point_v<T>) {
      if (p < 4) x = std::numeric_limits<T>::infinity();
      else if (p < 8 && !nonneg) x = -std::numeric_limits<T>::infinity();
      else if (p < 10) x = T(0) * (nonneg ? T(1) : T(-1));  // signed zeros
    } else {
      if (p < 4) x = std::numeric_limits<T>::max();
      else if (p < 8 && !nonneg) x = std::numeric_limits<T>::lowest();
      else if (p < 12 && !nonneg) x = (p % 2 ? 1 : -1) * (std::numeric_limits<T>::max() / 3 * 2);
    }
  }
  return v;
}

struct Shape {
  long long m, n, k;
  int ta, tb;
};

std::string describe(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.ta ? " A^T" : "") +
         (s.tb ? " B^T" : "");
}

const std::vector<Shape> kShapes = {
    {1, 1, 1, 0, 0},       {7, 7, 7, 0, 0},         {129, 65, 129, 0, 0},   {1000, 7, 129, 1, 0},
    {33, 1000, 17, 0, 1},  {129, 129, 1000, 1, 1},  {5, 3, 0, 0, 0},        {2049, 65, 2050, 0, 0},
};

/// got equals want (NaN equals NaN) and is bit for bit the same as other.
template <class T>
void expect_same(const std::vector<T>& quick, const std::vector<T>& tuned, const std::vector<T>& want,
                 const std::string& what) {
  ASSERT_EQ(quick.size(), want.size());
  std::size_t bad = 0, differ = 0;
  for (std::size_t i = 0; i < quick.size(); ++i) {
    const bool nan = std::is_floating_point_v<T> && quick[i] != quick[i] && want[i] != want[i];
    if (!(quick[i] == want[i] || nan) && bad++ < 5) {
      ADD_FAILURE() << what << ": quick element " << i << " is " << quick[i] << ", want " << want[i];
    }
    if (std::memcmp(&quick[i], &tuned[i], sizeof(T)) != 0 && differ++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " quick " << quick[i] << " and tuned " << tuned[i]
                    << " differ in their bits";
    }
  }
  EXPECT_EQ(bad + differ, 0u) << what;
}

testing::TierLauncher& launcher() {
  static testing::TierLauncher* const l = new testing::TierLauncher;
  return *l;
}

template <class P>
class GpuTiers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};

template <class S, class T>
struct Pair {
  using Semi = S;
  using Elem = T;
};
using AllPairs = catalog::ForEachPair<::testing::Types, Pair>;
TYPED_TEST_SUITE(GpuTiers, AllPairs);

template <class S, class T>
void check_shape(const Shape& s, std::uint64_t seed, bool extremes) {
  std::mt19937_64 rng(seed);
  const long long lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 1, ldc = s.n + 2;
  const auto a = random_matrix<S, T>(static_cast<std::size_t>((s.ta ? s.k : s.m) * lda), rng, extremes);
  const auto b = random_matrix<S, T>(static_cast<std::size_t>((s.tb ? s.n : s.k) * ldb), rng, extremes);
  const std::size_t c_size = static_cast<std::size_t>(s.m * ldc);
  const Trans ta = s.ta ? Trans::kYes : Trans::kNo, tb = s.tb ? Trans::kYes : Trans::kNo;
  std::vector<T> want(c_size, T(42)), want_c(c_size, T(42));
  std::vector<std::int32_t> want_arg(c_size, 7);
  reference::gemm<S, T>(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, want.data(), ldc);
  reference::gemm_argmax<S, T>(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, want_c.data(), ldc,
                               want_arg.data(), ldc);
  DeviceBuffer<T> da(a), db(b);
  std::vector<T> c[2], ac[2];
  std::vector<std::int32_t> arg[2];
  for (Tier tier : {Tier::kQuick, Tier::kTuned}) {
    const int t = tier == Tier::kQuick ? 0 : 1;
    DeviceBuffer<T> dc(std::vector<T>(c_size, T(42))), dc2(std::vector<T>(c_size, T(42)));
    DeviceBuffer<std::int32_t> darg(std::vector<std::int32_t>(c_size, 7));
    launcher().gemm(kernel_id<S, T, Op::kGemm>(), tier, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, dc.get(), ldc,
                    s.ta, s.tb);
    launcher().gemm_argmax(kernel_id<S, T, Op::kGemmArgmax>(), tier, s.m, s.n, s.k, da.get(), lda, db.get(), ldb,
                           dc2.get(), ldc, darg.get(), ldc, s.ta, s.tb);
    c[t] = dc.download(c_size);
    ac[t] = dc2.download(c_size);
    arg[t] = darg.download(c_size);
  }
  expect_same(c[0], c[1], want, "gemm " + describe(s));
  expect_same(ac[0], ac[1], want_c, "gemm_argmax values " + describe(s));
  expect_same(arg[0], arg[1], want_arg, "gemm_argmax indices " + describe(s));
}

TYPED_TEST(GpuTiers, quick_equals_reference_and_tuned_on_random_data) {
  std::uint64_t seed = 1;
  for (const auto& s : kShapes) check_shape<typename TypeParam::Semi, typename TypeParam::Elem>(s, seed++, false);
}

TYPED_TEST(GpuTiers, quick_equals_reference_and_tuned_with_infinities_and_extremes) {
  std::uint64_t seed = 100;
  for (const auto& s : kShapes) check_shape<typename TypeParam::Semi, typename TypeParam::Elem>(s, seed++, true);
}

TYPED_TEST(GpuTiers, batched_quick_equals_reference_and_tuned) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(5);
  for (const auto& [m, n, k, batch] : std::vector<std::array<long long, 4>>{{7, 9, 13, 70000}, {129, 65, 33, 3}, {64, 64, 64, 17}}) {
    const long long sa = m * k + 5, sb = k * n, sc = m * n + 1;
    const auto a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, true);
    const auto b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, true);
    const std::size_t c_size = static_cast<std::size_t>(sc * batch);
    std::vector<T> want(c_size, T(3));
    reference::gemm_batched<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, sa, b.data(), n, sb, want.data(), n,
                                  sc, batch);
    DeviceBuffer<T> da(a), db(b), quick(std::vector<T>(c_size, T(3))), tuned(std::vector<T>(c_size, T(3)));
    const auto id = kernel_id<S, T, Op::kGemmBatched>();
    launcher().gemm_batched(id, Tier::kQuick, m, n, k, da.get(), k, sa, db.get(), n, sb, quick.get(), n, sc, batch);
    launcher().gemm_batched(id, Tier::kTuned, m, n, k, da.get(), k, sa, db.get(), n, sb, tuned.get(), n, sc, batch);
    expect_same(quick.download(c_size), tuned.download(c_size), want, "gemm_batched " + std::to_string(batch));
  }
}

/// quick and tuned are bit for bit the same.
template <class T>
void expect_bits(const std::vector<T>& quick, const std::vector<T>& tuned, const std::string& what) {
  ASSERT_EQ(quick.size(), tuned.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < quick.size(); ++i) {
    if (std::memcmp(&quick[i], &tuned[i], sizeof(T)) != 0 && differ++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " quick " << +quick[i] << " and tuned " << +tuned[i];
    }
  }
  EXPECT_EQ(differ, 0u) << what;
}

// alpha and beta through the quick kernels' epilogue: every flag combination
// the API makes, on gemm and gemm_batched, bit for bit the tuned kernel's.
TYPED_TEST(GpuTiers, alpha_beta_quick_equals_tuned) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(9);
  const long long m = 67, n = 45, k = 129, batch = 3;
  const auto a = random_matrix<S, T>(static_cast<std::size_t>(m * k * batch), rng, true);
  const auto b = random_matrix<S, T>(static_cast<std::size_t>(k * n * batch), rng, true);
  const auto c0 = random_matrix<S, T>(static_cast<std::size_t>(m * n * batch), rng, true);
  const T one = reference::one<S, T>(), zero = reference::zero<S, T>();
  const T value = std::is_same_v<T, std::uint8_t> ? T(1) : T(3);
  const std::vector<std::pair<T, T>> scalings = {{value, zero}, {one, value}, {value, value}, {one, one}, {value, one}};
  DeviceBuffer<T> da(a), db(b);
  for (const auto& [alpha, beta] : scalings) {
    const detail::Scaling sc = detail::scaling<S, T>(alpha, beta);
    const std::string what = " flags " + std::to_string(sc.flags);
    std::vector<T> out[2], outb[2];
    for (Tier tier : {Tier::kQuick, Tier::kTuned}) {
      const int t = tier == Tier::kQuick ? 0 : 1;
      DeviceBuffer<T> dc(c0), dcb(c0);
      launcher().gemm(kernel_id<S, T, Op::kGemm>(), tier, m, n, k, da.get(), k, db.get(), n, dc.get(), n, 0, 0,
                      nullptr, sc);
      launcher().gemm_batched(kernel_id<S, T, Op::kGemmBatched>(), tier, m, n, k, da.get(), k, m * k, db.get(), n,
                              k * n, dcb.get(), n, m * n, batch, nullptr, sc);
      out[t] = dc.download(c0.size());
      outb[t] = dcb.download(c0.size());
    }
    std::vector<T> want(c0.begin(), c0.begin() + m * n);
    reference::gemm<S, T>(Trans::kNo, Trans::kNo, m, n, k, alpha, a.data(), k, b.data(), n, beta, want.data(), n);
    expect_same(std::vector<T>(out[0].begin(), out[0].begin() + m * n),
                std::vector<T>(out[1].begin(), out[1].begin() + m * n), want, "gemm alpha/beta" + what);
    expect_bits(outb[0], outb[1], "gemm_batched alpha/beta" + what);
  }
}

// The batched argmax and the small-tile variants of the batched products
// (each with its own quick kernel): quick bit for bit the tuned, C and index.
TYPED_TEST(GpuTiers, batched_argmax_and_small_tiles_quick_equal_tuned) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(11);
  for (const auto& [m, n, k, batch] :
       std::vector<std::array<long long, 4>>{{7, 9, 13, 300}, {16, 16, 33, 40}, {31, 17, 33, 9}, {64, 64, 70, 5},
                                             {129, 65, 33, 3}}) {
    const long long sa = m * k + 5, sb = k * n, sc = m * n + 1;
    const auto a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, true);
    const auto b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, true);
    const std::size_t c_size = static_cast<std::size_t>(sc * batch);
    const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    DeviceBuffer<T> da(a), db(b);
    const auto argmax_id = catalog::pick_tile(kernel_id<S, T, Op::kGemmBatchedArgmax>(), m, n);
    const auto plain_id = catalog::pick_tile(kernel_id<S, T, Op::kGemmBatched>(), m, n);
    std::vector<T> c[2], plain[2];
    std::vector<std::int32_t> arg[2];
    for (Tier tier : {Tier::kQuick, Tier::kTuned}) {
      const int t = tier == Tier::kQuick ? 0 : 1;
      DeviceBuffer<T> dc(std::vector<T>(c_size, T(3))), dp(std::vector<T>(c_size, T(3)));
      DeviceBuffer<std::int32_t> darg(std::vector<std::int32_t>(c_size, 7));
      launcher().gemm_batched_argmax(argmax_id, tier, m, n, k, da.get(), k, sa, db.get(), n, sb, dc.get(), n, sc,
                                     darg.get(), n, sc, batch);
      launcher().gemm_batched(plain_id, tier, m, n, k, da.get(), k, sa, db.get(), n, sb, dp.get(), n, sc, batch);
      c[t] = dc.download(c_size);
      plain[t] = dp.download(c_size);
      arg[t] = darg.download(c_size);
    }
    const std::string name = std::string(catalog::kInfo[static_cast<std::size_t>(argmax_id)].name) + " " + what;
    expect_bits(c[0], c[1], name + " values");
    expect_bits(arg[0], arg[1], name + " indices");
    expect_bits(plain[0], plain[1], std::string(catalog::kInfo[static_cast<std::size_t>(plain_id)].name) + " " + what);
    std::vector<T> want(c_size, T(3));
    std::vector<std::int32_t> want_arg(c_size, 7);
    reference::gemm_batched_argmax<S, T>(Trans::kNo, Trans::kNo, m, n, k, a.data(), k, sa, b.data(), n, sb,
                                         want.data(), n, sc, want_arg.data(), n, sc, batch);
    expect_same(c[0], c[1], want, name + " values vs reference");
    expect_same(arg[0], arg[1], want_arg, name + " indices vs reference");
  }
}

TEST(GpuTiersLaunch, quick_and_tuned_kernels_are_different_functions_with_their_own_shapes) {
  if (!drv::available()) GTEST_SKIP() << "no CUDA device";
  const auto id = catalog::KernelId::kGemmMaxplusF32;
  const jit::Resolved& quick = launcher().kernel(id, Tier::kQuick);
  const jit::Resolved& tuned = launcher().kernel(id, Tier::kTuned);
  EXPECT_NE(quick.function, tuned.function);
  EXPECT_EQ(quick.launch.tile_m, catalog::kQuickLaunch[static_cast<std::size_t>(id)].tile_m);
  EXPECT_EQ(tuned.launch.tile_m, catalog::kTunedLaunch[static_cast<std::size_t>(id)].tile_m);
}

}  // namespace
}  // namespace tropical
