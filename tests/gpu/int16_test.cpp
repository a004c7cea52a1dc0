// int16 products on a real GPU, beyond the catalog-wide suites (which run
// every int16 kernel on small values and on extremes): the MaxPlus and
// MinPlus products whose k-tiles take Hopper's DPX 16x2 path when every
// staged element lies in [-2^14, 2^14) and the exact 32-bit path otherwise.
// Against the CPU reference, with the quick tier bit for bit the tuned one:
// values in +-2^13 (DPX throughout), at the edge of the DPX range (sums that
// reach -2^15, the zero), the full 16-bit range (every bit pattern, the
// extremes often), and k-tiles that alternate between the two paths within
// one product, batched and transposed. Skips without a GPU.
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
using I16 = std::int16_t;
constexpr int kLow = std::numeric_limits<I16>::lowest(), kHigh = std::numeric_limits<I16>::max();

enum class Data {
  kSmall,      // +-2^13: the DPX path everywhere
  kEdge,       // -2^14 .. 2^14 - 1 (the DPX range's ends) and just outside it
  kFull,       // every bit pattern, lowest()/max() and their neighbours often
  kAlternate,  // k in [32t, 32t + 32): small for even t, full range for odd t (both paths in one product)
};

/// Element (row, col) of op(X) for data d; col is the k index for A, row for B.
I16 value(Data d, std::int64_t k, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> small(-(1 << 13), (1 << 13) - 1), edge(0, 7), any(kLow, kHigh), pick(0, 15);
  switch (d) {
    case Data::kSmall: return static_cast<I16>(small(rng));
    case Data::kEdge: {
      const int e[] = {-(1 << 14), -(1 << 14) + 1, (1 << 14) - 1, (1 << 14) - 2, 1 << 14, -(1 << 14) - 1, 0, -1};
      return static_cast<I16>(e[edge(rng)]);
    }
    case Data::kAlternate:
      if ((k / 32) % 2 == 0) return static_cast<I16>(small(rng));
      [[fallthrough]];
    case Data::kFull: {
      const int p = pick(rng);
      return static_cast<I16>(p == 0 ? kLow : p == 1 ? kHigh : p == 2 ? kLow + 1 : p == 3 ? kHigh - 1 : any(rng));
    }
  }
  return 0;
}

std::vector<I16> operand(std::int64_t rows, std::int64_t cols, Trans t, std::int64_t ld, std::int64_t batch,
                         std::int64_t stride, bool is_a, Data d, std::mt19937_64& rng) {
  std::vector<I16> x(static_cast<std::size_t>(stride * batch), I16(7));
  for (std::int64_t p = 0; p < batch; ++p) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t sr = t == Trans::kNo ? r : c, sc = t == Trans::kNo ? c : r;
        x[static_cast<std::size_t>(p * stride + sr * ld + sc)] = value(d, is_a ? c : r, rng);
      }
    }
  }
  return x;
}

void expect_bits(const std::vector<I16>& got, const std::vector<I16>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

testing::TierLauncher& launcher() {
  static testing::TierLauncher* const l = new testing::TierLauncher;
  return *l;
}

struct Shape {
  std::int64_t m, n, k;
  Trans ta, tb;
};

template <class S>
void check(const Shape& s, Data d, std::int64_t batch, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string what = std::string(S::kName) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                           std::to_string(s.k) + (s.ta == Trans::kYes ? " A^T" : "") +
                           (s.tb == Trans::kYes ? " B^T" : "") + " data " + std::to_string(static_cast<int>(d)) +
                           " batch " + std::to_string(batch);
  const std::int64_t lda = (s.ta == Trans::kNo ? s.k : s.m) + 8, ldb = (s.tb == Trans::kNo ? s.n : s.k) + 8;
  const std::int64_t ldc = s.n + 3;
  const std::int64_t sa = (s.ta == Trans::kNo ? s.m : s.k) * lda, sb = (s.tb == Trans::kNo ? s.k : s.n) * ldb;
  const std::int64_t sc = s.m * ldc;
  const auto a = operand(s.m, s.k, s.ta, lda, batch, sa, true, d, rng);
  const auto b = operand(s.k, s.n, s.tb, ldb, batch, sb, false, d, rng);
  const std::size_t c_size = static_cast<std::size_t>(sc * batch);
  std::vector<I16> want(c_size, I16(3));
  reference::gemm_batched<S, I16>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, sa, b.data(), ldb, sb, want.data(), ldc,
                                  sc, batch);
  DeviceBuffer<I16> da(a), db(b);
  {
    DeviceBuffer<I16> dc(std::vector<I16>(c_size, I16(3)));
    if (batch == 1) {
      gemm<S, I16>(s.ta, s.tb, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, dc.get(), ldc);
    } else {
      gemm_batched<S, I16>(s.ta, s.tb, s.m, s.n, s.k, da.get(), lda, sa, db.get(), ldb, sb, dc.get(), ldc, sc, batch);
    }
    expect_bits(dc.download(c_size), want, "api " + what);
  }
  if (batch != 1 || s.ta == Trans::kYes || s.tb == Trans::kYes) return;
  // Both tiers of gemm directly: each equal to the reference, hence to each other.
  for (const Tier tier : {Tier::kQuick, Tier::kTuned}) {
    DeviceBuffer<I16> dc(std::vector<I16>(c_size, I16(3)));
    launcher().gemm(kernel_id<S, I16, Op::kGemm>(), tier, s.m, s.n, s.k, da.get(), lda, db.get(), ldb, dc.get(), ldc);
    expect_bits(dc.download(c_size), want, std::string(tier == Tier::kQuick ? "quick " : "tuned ") + what);
  }
}

class GpuInt16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};

const std::vector<Shape> kShapes = {
    {1, 1, 1, Trans::kNo, Trans::kNo},       {129, 65, 129, Trans::kNo, Trans::kNo},
    {257, 130, 300, Trans::kNo, Trans::kNo}, {67, 45, 97, Trans::kYes, Trans::kNo},
    {33, 200, 64, Trans::kNo, Trans::kYes},  {5, 3, 0, Trans::kNo, Trans::kNo},
};

TEST_F(GpuInt16, products_equal_the_reference_on_every_kind_of_data) {
  std::uint64_t seed = 1;
  for (const Data d : {Data::kSmall, Data::kEdge, Data::kFull, Data::kAlternate}) {
    for (const auto& s : kShapes) {
      check<MaxPlus>(s, d, 1, seed++);
      check<MinPlus>(s, d, 1, seed++);
    }
  }
}

TEST_F(GpuInt16, batches_equal_the_reference_on_every_kind_of_data) {
  std::uint64_t seed = 100;
  for (const Data d : {Data::kSmall, Data::kEdge, Data::kFull, Data::kAlternate}) {
    check<MaxPlus>({64, 64, 64, Trans::kNo, Trans::kNo}, d, 17, seed++);
    check<MinPlus>({33, 20, 70, Trans::kYes, Trans::kYes}, d, 5, seed++);
  }
}

TEST_F(GpuInt16, a_large_product_equals_the_reference) {
  check<MaxPlus>({1025, 513, 1030, Trans::kNo, Trans::kNo}, Data::kAlternate, 1, 200);
  check<MinPlus>({1025, 513, 1030, Trans::kNo, Trans::kNo}, Data::kSmall, 1, 201);
}

}  // namespace
}  // namespace tropical
