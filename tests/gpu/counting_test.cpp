// CountingTropical on a real GPU: gemm_counting and gemm_batched_counting
// against the CPU reference (values and counts exactly), and the quick tier
// bit for bit the tuned one, on spread values (one winner per element: the
// kernels' chunk rescan), tied integer values (their dense counting pass),
// blocks of both kinds in one product, -inf rows with zero and non-zero
// counts, zero counts, NaN values, odd shapes, transposes, padded and
// different leading dimensions, k = 0, batches with shared operands. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tier_launch.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;
using jit::Tier;

/// What the values hold.
enum class Data {
  kSpread,   // distinct-ish values: one winning chunk per element
  kTied,     // values in -2..2: ties everywhere (the dense pass)
  kMixed,    // spread, but rows 0..15 and every 7th column tied: some blocks dense, some not
  kSpecial,  // tied, plus -inf (with zero and non-zero counts), NaN, +inf, zero counts
  kAlternate,  // products alternately spread and tied: a block looping over the batch takes both passes
};

struct Shape {
  std::int64_t m, n, k;
  Trans ta, tb;
};

std::string describe(const Shape& s, Data d, std::int64_t batch) {
  const char* data[] = {"spread", "tied", "mixed", "special", "alternate"};
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         (s.ta == Trans::kYes ? " A^T" : "") + (s.tb == Trans::kYes ? " B^T" : "") + " " +
         data[static_cast<int>(d)] + " batch " + std::to_string(batch);
}

const std::vector<Shape> kShapes = {
    {1, 1, 1, Trans::kNo, Trans::kNo},       {7, 7, 7, Trans::kNo, Trans::kNo},
    {129, 65, 129, Trans::kNo, Trans::kNo},  {67, 45, 300, Trans::kYes, Trans::kNo},
    {33, 200, 17, Trans::kNo, Trans::kYes},  {130, 129, 1000, Trans::kYes, Trans::kYes},
    {5, 3, 0, Trans::kNo, Trans::kNo},       {64, 64, 64, Trans::kNo, Trans::kNo},
};

/// One operand stored as `t` says (rows x cols of op(X)): values and counts with different padding.
template <class T>
struct Operand {
  std::int64_t ld_values, ld_counts, stride_values, stride_counts;
  std::vector<T> values, counts;
};

template <class T>
Operand<T> make_operand(std::int64_t rows, std::int64_t cols, Trans t, std::int64_t batch, bool is_a, Data d,
                        std::mt19937_64& rng) {
  const std::int64_t stored_rows = t == Trans::kNo ? rows : cols, stored_cols = t == Trans::kNo ? cols : rows;
  Operand<T> o;
  o.ld_values = stored_cols + 3;
  o.ld_counts = stored_cols + 1;
  o.stride_values = stored_rows * o.ld_values + 5;
  o.stride_counts = stored_rows * o.ld_counts;
  o.values.assign(static_cast<std::size_t>(o.stride_values * batch + 1), T(1000));
  o.counts.assign(static_cast<std::size_t>(o.stride_counts * batch + 1), T(9));
  std::uniform_int_distribution<int> spread(-100000, 100000), tied(-2, 2), count(0, 3), pick(0, 99);
  constexpr T inf = std::numeric_limits<T>::infinity();
  for (std::int64_t p = 0; p < batch; ++p) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        // (r, c) of op(X); the row of A or column of B it belongs to decides a mixed tie.
        const std::int64_t line = is_a ? r : c;
        const bool tie = d == Data::kTied || d == Data::kSpecial ||
                         (d == Data::kMixed && (line < 16 || line % 7 == 0)) || (d == Data::kAlternate && p % 2 == 1);
        T v = tie ? T(tied(rng)) : T(spread(rng)) / T(64);
        T n = T(count(rng) + (d == Data::kSpecial ? 0 : 1));
        if (d == Data::kSpecial) {
          const int q = pick(rng);
          if (q < 5) v = -inf;
          else if (q < 7) v = std::numeric_limits<T>::quiet_NaN();
          else if (q < 8) v = inf;
          // Row 2 of A is all -inf with count 0 (the zero); row 3 all -inf with counts.
          if (is_a && r == 2) v = -inf, n = 0;
          if (is_a && r == 3) v = -inf;
        }
        const std::int64_t sr = t == Trans::kNo ? r : c, sc = t == Trans::kNo ? c : r;
        o.values[static_cast<std::size_t>(p * o.stride_values + sr * o.ld_values + sc)] = v;
        o.counts[static_cast<std::size_t>(p * o.stride_counts + sr * o.ld_counts + sc)] = n;
      }
    }
  }
  return o;
}

/// Exact equality, NaN equal to NaN, +0 equal to -0 (the values' sign of a zero tie is the hardware's max).
template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i] || (got[i] != got[i] && want[i] != want[i])) && bad++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

template <class T>
void expect_bits(const std::vector<T>& quick, const std::vector<T>& tuned, const std::string& what) {
  ASSERT_EQ(quick.size(), tuned.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < quick.size(); ++i) {
    if (std::memcmp(&quick[i], &tuned[i], sizeof(T)) != 0 && differ++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " quick " << quick[i] << " and tuned " << tuned[i];
    }
  }
  EXPECT_EQ(differ, 0u) << what;
}

testing::TierLauncher& launcher() {
  static testing::TierLauncher* const l = new testing::TierLauncher;
  return *l;
}

template <class T>
class GpuCounting : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};
using CountingTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuCounting, CountingTypes);

/// One shape and data: the public API (gemm_counting for batch 1, else gemm_batched_counting; B shared
/// across the batch when share_b) and both tiers launched directly, against the reference.
template <class T>
void check(const Shape& s, Data d, std::int64_t batch, bool share_b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string what = describe(s, d, batch) + (share_b ? " shared B" : "");
  Operand<T> a = make_operand<T>(s.m, s.k, s.ta, batch, true, d, rng);
  Operand<T> b = make_operand<T>(s.k, s.n, s.tb, share_b ? 1 : batch, false, d, rng);
  if (share_b) b.stride_values = b.stride_counts = 0;
  const std::int64_t ldcv = s.n + 2, ldcc = s.n + 1, scv = s.m * ldcv + 3, scc = s.m * ldcc;
  const std::size_t size_v = static_cast<std::size_t>(scv * batch + 1), size_c = static_cast<std::size_t>(scc * batch + 1);
  std::vector<T> want_v(size_v, T(-5)), want_c(size_c, T(-5));
  reference::gemm_batched_counting<T>(
      s.ta, s.tb, s.m, s.n, s.k,
      {a.values.data(), a.ld_values, a.counts.data(), a.ld_counts, a.stride_values, a.stride_counts},
      {b.values.data(), b.ld_values, b.counts.data(), b.ld_counts, b.stride_values, b.stride_counts},
      {want_v.data(), ldcv, want_c.data(), ldcc, scv, scc}, batch);
  DeviceBuffer<T> dav(a.values), dac(a.counts), dbv(b.values), dbc(b.counts);
  const CountingMatrix<const T> da{dav.get(), a.ld_values, dac.get(), a.ld_counts, a.stride_values, a.stride_counts};
  const CountingMatrix<const T> db{dbv.get(), b.ld_values, dbc.get(), b.ld_counts, b.stride_values, b.stride_counts};
  // The public API (whichever tier serves the call).
  {
    DeviceBuffer<T> cv(std::vector<T>(size_v, T(-5))), cc(std::vector<T>(size_c, T(-5)));
    const CountingMatrix<T> dc{cv.get(), ldcv, cc.get(), ldcc, scv, scc};
    if (batch == 1 && !share_b) {
      gemm_counting<T>(s.ta, s.tb, s.m, s.n, s.k, da, db, dc);
    } else {
      gemm_batched_counting<T>(s.ta, s.tb, s.m, s.n, s.k, da, db, dc, batch);
    }
    expect_equal(cv.download(size_v), want_v, "values " + what);
    expect_equal(cc.download(size_c), want_c, "counts " + what);
  }
  // Each tier of the batched kernel (and of its fewtiles variant, which the launcher takes for products of
  // few blocks) directly: equal to the reference and to each other, bit for bit.
  const catalog::KernelId batched = kernel_id<CountingTropical, T, Op::kGemmBatched>();
  std::vector<catalog::KernelId> kernels{batched};
  for (const catalog::KernelInfo& info : catalog::kInfo) {
    if (info.base == batched && info.variant == "fewtiles") kernels.push_back(info.id);
  }
  for (const catalog::KernelId id : kernels) {
    const std::string name = std::string(catalog::kInfo[static_cast<std::size_t>(id)].name) + " " + what;
    std::vector<T> got_v[2], got_c[2];
    for (const Tier tier : {Tier::kQuick, Tier::kTuned}) {
      const int t = tier == Tier::kQuick ? 0 : 1;
      DeviceBuffer<T> cv(std::vector<T>(size_v, T(-5))), cc(std::vector<T>(size_c, T(-5)));
      const CountingMatrix<T> dc{cv.get(), ldcv, cc.get(), ldcc, scv, scc};
      launcher().counting<T>(id, tier, s.m, s.n, s.k, da, db, dc, batch, s.ta == Trans::kYes, s.tb == Trans::kYes);
      got_v[t] = cv.download(size_v);
      got_c[t] = cc.download(size_c);
    }
    expect_equal(got_v[1], want_v, "tuned values " + name);
    expect_equal(got_c[1], want_c, "tuned counts " + name);
    expect_bits(got_v[0], got_v[1], "values quick vs tuned " + name);
    expect_bits(got_c[0], got_c[1], "counts quick vs tuned " + name);
  }
}

TYPED_TEST(GpuCounting, equals_the_reference_on_spread_values) {
  std::uint64_t seed = 1;
  for (const auto& s : kShapes) check<TypeParam>(s, Data::kSpread, 1, false, seed++);
}

TYPED_TEST(GpuCounting, equals_the_reference_on_tied_values) {
  std::uint64_t seed = 100;
  for (const auto& s : kShapes) check<TypeParam>(s, Data::kTied, 1, false, seed++);
}

TYPED_TEST(GpuCounting, equals_the_reference_with_tied_and_spread_blocks_in_one_product) {
  std::uint64_t seed = 200;
  for (const auto& s : kShapes) check<TypeParam>(s, Data::kMixed, 1, false, seed++);
}

TYPED_TEST(GpuCounting, equals_the_reference_with_minus_infinity_rows_nan_and_zero_counts) {
  std::uint64_t seed = 300;
  for (const auto& s : kShapes) check<TypeParam>(s, Data::kSpecial, 1, false, seed++);
}

TYPED_TEST(GpuCounting, batches_equal_the_reference_with_strides_and_a_shared_operand) {
  check<TypeParam>({67, 45, 129, Trans::kNo, Trans::kNo}, Data::kMixed, 3, false, 400);
  check<TypeParam>({16, 16, 16, Trans::kNo, Trans::kYes}, Data::kTied, 70000, false, 401);
  check<TypeParam>({33, 20, 50, Trans::kYes, Trans::kNo}, Data::kSpread, 5, true, 402);
  check<TypeParam>({7, 9, 0, Trans::kNo, Trans::kNo}, Data::kSpread, 2, false, 403);
}

// Products of many blocks, which the launcher runs on the default tile (8 x 4 elements a thread for f32) rather
// than its fewtiles variant on a GPU of up to 144 SMs (src/counting_tile.hpp): a batch of 1500 one-block
// products and a 2304 x 2304 product (1296 blocks).
TYPED_TEST(GpuCounting, products_of_many_blocks_equal_the_reference) {
  check<TypeParam>({64, 45, 40, Trans::kNo, Trans::kYes}, Data::kMixed, 1500, false, 500);
  check<TypeParam>({2304, 2304, 48, Trans::kYes, Trans::kNo}, Data::kSpread, 1, false, 501);
}

// A batch past the grid's 65535 products, so that each block loops over several: spread and tied products
// alternate, and each block's winners share shared memory with the dense pass of the product before.
TYPED_TEST(GpuCounting, blocks_looping_over_the_batch_alternate_the_rescan_and_the_dense_pass) {
  check<TypeParam>({20, 16, 48, Trans::kNo, Trans::kNo}, Data::kAlternate, 70001, false, 502);
}

TYPED_TEST(GpuCounting, a_large_product_equals_the_reference) {
  check<TypeParam>({1025, 257, 2050, Trans::kNo, Trans::kNo}, Data::kMixed, 1, false, 500);
}

TEST(GpuCountingArguments, are_checked_before_any_launch) {
  if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  DeviceBuffer<float> x(std::vector<float>(64, 1.0f)), out(std::vector<float>(64, -5.0f));
  const CountingMatrix<const float> a{x.get(), 4, x.get() + 16, 4};
  EXPECT_THROW(gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a, {out.get(), 2, out.get(), 2}),
               InvalidArgument);
  EXPECT_THROW(gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a, {x.get(), 2, out.get(), 2}),
               InvalidArgument);
  EXPECT_THROW(gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, {x.get(), 3, x.get(), 4}, a,
                                    {out.get(), 2, out.get() + 8, 2}),
               InvalidArgument);
  // Host memory is not device memory.
  std::vector<float> host(64);
  EXPECT_THROW(gemm_counting<float>(Trans::kNo, Trans::kNo, 2, 2, 4, a, a, {out.get(), 2, host.data(), 2}),
               InvalidArgument);
  EXPECT_EQ(out.download(64), std::vector<float>(64, -5.0f));
}

}  // namespace
}  // namespace tropical
