// Batched argmax, batched backward and alpha/beta on a real GPU against the
// CPU reference, for every semiring x type: batches of 1, 7 and 70,000 small
// products (every small tile), random and extreme data, transposes. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_data.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

using gpu_test::AllPairs;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

template <class P>
class GpuBatched : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};
TYPED_TEST_SUITE(GpuBatched, AllPairs);

/// One batched problem: sizes, batch, transposes.
struct Batch {
  std::int64_t m, n, k, batch;
  Trans ta, tb;
};

std::string describe(const Batch& b) {
  return std::to_string(b.batch) + " x " + std::to_string(b.m) + "x" + std::to_string(b.n) + "x" +
         std::to_string(b.k) + (b.ta == Trans::kYes ? " A^T" : "") + (b.tb == Trans::kYes ? " B^T" : "");
}

// Batches of 1, 7 and 70,000 small products (each small tile and the default),
// odd sizes, transposes, an empty k; k up to 64 (the argmax's small tiles keep
// every k-tile in shared memory and rescan there) and past it (two buffers,
// rescan from global memory), on each small tile.
const std::vector<Batch> kBatches = {
    {16, 16, 16, 1, Trans::kNo, Trans::kNo},     {16, 16, 16, 7, Trans::kYes, Trans::kNo},
    {32, 32, 32, 7, Trans::kNo, Trans::kYes},    {64, 64, 64, 7, Trans::kYes, Trans::kYes},
    {7, 9, 13, 70000, Trans::kNo, Trans::kNo},   {31, 17, 33, 700, Trans::kNo, Trans::kYes},
    {129, 65, 33, 3, Trans::kNo, Trans::kNo},    {5, 3, 0, 7, Trans::kNo, Trans::kNo},
    {1, 1, 1, 70000, Trans::kNo, Trans::kNo},    {16, 16, 80, 9, Trans::kNo, Trans::kYes},
    {32, 32, 65, 5, Trans::kYes, Trans::kNo},    {64, 64, 96, 3, Trans::kNo, Trans::kNo},
    {13, 29, 64, 11, Trans::kYes, Trans::kYes},
};

/// Operands of a batch with padded leading dimensions and strides.
template <class S, class T>
struct Operands {
  std::int64_t lda, ldb, ldc, sa, sb, sc;
  std::vector<T> a, b;
  Operands(const Batch& p, std::mt19937_64& rng, bool extremes) {
    lda = (p.ta == Trans::kYes ? p.m : p.k) + 1;
    ldb = (p.tb == Trans::kYes ? p.k : p.n) + 2;
    ldc = p.n + 1;
    sa = (p.ta == Trans::kYes ? p.k : p.m) * lda + 3;
    sb = (p.tb == Trans::kYes ? p.n : p.k) * ldb;
    sc = p.m * ldc + 5;
    a = random_matrix<S, T>(static_cast<std::size_t>(sa * p.batch), rng, extremes);
    b = random_matrix<S, T>(static_cast<std::size_t>(sb * p.batch), rng, extremes);
  }
  std::size_t c_size(const Batch& p) const { return static_cast<std::size_t>(sc * p.batch); }
};

/// Bit-for-bit equality, except that any NaN equals any NaN (the GPU's
/// canonical NaN and the CPU's differ in sign and payload).
template <class T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = std::memcmp(&got[i], &want[i], sizeof(T)) == 0 || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

template <class S, class T>
void check_batched_argmax(const Batch& p, std::uint64_t seed, bool extremes) {
  std::mt19937_64 rng(seed);
  const Operands<S, T> o(p, rng, extremes);
  const std::size_t c_size = o.c_size(p);
  std::vector<T> want_c(c_size, T(42));
  std::vector<std::int32_t> want_arg(c_size, 7);
  reference::gemm_batched_argmax<S, T>(p.ta, p.tb, p.m, p.n, p.k, o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb,
                                       want_c.data(), o.ldc, o.sc, want_arg.data(), o.ldc, o.sc, p.batch);
  DeviceBuffer<T> da(o.a), db(o.b), dc(std::vector<T>(c_size, T(42)));
  DeviceBuffer<std::int32_t> darg(std::vector<std::int32_t>(c_size, 7));
  gemm_batched_argmax<S, T>(p.ta, p.tb, p.m, p.n, p.k, da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, dc.get(), o.ldc,
                            o.sc, darg.get(), o.ldc, o.sc, p.batch);
  const auto got_c = dc.download(c_size);
  const auto got_arg = darg.download(c_size);
  expect_equal(got_c, want_c, "gemm_batched_argmax values " + describe(p));
  expect_equal(got_arg, want_arg, "gemm_batched_argmax indices " + describe(p));
  // Equal to gemm_argmax on each slice (the first 7).
  for (std::int64_t s = 0; s < std::min<std::int64_t>(p.batch, 7); ++s) {
    const std::size_t size = static_cast<std::size_t>(p.m * o.ldc);
    DeviceBuffer<T> c1(std::vector<T>(size, T(42)));
    DeviceBuffer<std::int32_t> arg1(std::vector<std::int32_t>(size, 7));
    gemm_argmax<S, T>(p.ta, p.tb, p.m, p.n, p.k, da.get() + s * o.sa, o.lda, db.get() + s * o.sb, o.ldb, c1.get(),
                      o.ldc, arg1.get(), o.ldc);
    const auto off = static_cast<std::ptrdiff_t>(s * o.sc);
    expect_equal(c1.download(size), std::vector<T>(got_c.begin() + off, got_c.begin() + off + static_cast<std::ptrdiff_t>(size)),
                 "slice " + std::to_string(s) + " vs gemm_argmax " + describe(p));
    expect_equal(arg1.download(size),
                 std::vector<std::int32_t>(got_arg.begin() + off, got_arg.begin() + off + static_cast<std::ptrdiff_t>(size)),
                 "slice argmax " + std::to_string(s) + " vs gemm_argmax " + describe(p));
  }
  if constexpr (kInCatalog<S, T, Op::kBackwardABatched>) {
    // Deterministic batched backward: bit-identical to the reference.
    const auto gc = random_matrix<MaxPlus, T>(c_size, rng, false);
    const std::size_t ga_size = o.a.size(), gb_size = o.b.size();
    std::vector<T> want_ga(ga_size, T(9)), want_gb(gb_size, T(9));
    reference::backward_a_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, gc.data(), o.ldc, o.sc, want_arg.data(), o.ldc,
                                        o.sc, o.b.data(), o.ldb, o.sb, want_ga.data(), o.lda, o.sa, p.batch);
    reference::backward_b_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, gc.data(), o.ldc, o.sc, want_arg.data(), o.ldc,
                                        o.sc, o.a.data(), o.lda, o.sa, want_gb.data(), o.ldb, o.sb, p.batch);
    DeviceBuffer<T> dgc(gc), dga(std::vector<T>(ga_size, T(9))), dgb(std::vector<T>(gb_size, T(9)));
    backward_a_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, dgc.get(), o.ldc, o.sc, darg.get(), o.ldc, o.sc, db.get(),
                             o.ldb, o.sb, dga.get(), o.lda, o.sa, p.batch);
    backward_b_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, dgc.get(), o.ldc, o.sc, darg.get(), o.ldc, o.sc, da.get(),
                             o.lda, o.sa, dgb.get(), o.ldb, o.sb, p.batch);
    const auto got_ga = dga.download(ga_size), got_gb = dgb.download(gb_size);
    expect_same_bits(got_ga, want_ga, "backward_a_batched bits " + describe(p));
    expect_same_bits(got_gb, want_gb, "backward_b_batched bits " + describe(p));
  }
}

TYPED_TEST(GpuBatched, batched_argmax_and_backward_match_the_reference_on_random_data) {
  std::uint64_t seed = 1;
  for (const auto& p : kBatches) check_batched_argmax<typename TypeParam::Semi, typename TypeParam::Elem>(p, seed++, false);
}

TYPED_TEST(GpuBatched, batched_argmax_and_backward_match_the_reference_with_extremes) {
  std::uint64_t seed = 100;
  for (const auto& p : kBatches) check_batched_argmax<typename TypeParam::Semi, typename TypeParam::Elem>(p, seed++, true);
}

/// alpha, beta pairs: (one, zero), (one, one), (other, one), (one, other), (other, other), (zero, one).
template <class S, class T>
std::vector<std::array<T, 2>> scalings() {
  const T z = reference::zero<S, T>(), o = reference::one<S, T>();
  const T other = T(S::kAdd == AddKind::kOr ? 5 : 3);  // AndOr: a true byte other than 1
  return {{o, z}, {o, o}, {other, o}, {o, other}, {other, other}, {z, o}};
}

template <class S, class T>
void check_scaling(const Batch& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Operands<S, T> o(p, rng, true);
  const std::size_t c_size = o.c_size(p);
  const auto c0 = random_matrix<S, T>(c_size, rng, true);
  for (const auto& [alpha, beta] : scalings<S, T>()) {
    const std::string what = describe(p) + " alpha " + std::to_string(+alpha) + " beta " + std::to_string(+beta);
    std::vector<T> want = c0;
    reference::gemm_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, alpha, o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb,
                                  beta, want.data(), o.ldc, o.sc, p.batch);
    DeviceBuffer<T> da(o.a), db(o.b), dc(c0);
    gemm_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, alpha, da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, beta, dc.get(),
                       o.ldc, o.sc, p.batch);
    expect_equal(dc.download(c_size), want, "gemm_batched " + what);
    // The non-batched product on slice 0, in place.
    std::vector<T> want1(c0.begin(), c0.begin() + static_cast<std::ptrdiff_t>(p.m * o.ldc));
    reference::gemm<S, T>(p.ta, p.tb, p.m, p.n, p.k, alpha, o.a.data(), o.lda, o.b.data(), o.ldb, beta, want1.data(),
                          o.ldc);
    DeviceBuffer<T> dc1(std::vector<T>(c0.begin(), c0.begin() + static_cast<std::ptrdiff_t>(want1.size())));
    gemm<S, T>(p.ta, p.tb, p.m, p.n, p.k, alpha, da.get(), o.lda, db.get(), o.ldb, beta, dc1.get(), o.ldc);
    expect_equal(dc1.download(want1.size()), want1, "gemm " + what);
  }
}

TYPED_TEST(GpuBatched, alpha_and_beta_match_the_reference) {
  std::uint64_t seed = 200;
  for (const auto& p : kBatches) {
    if (p.batch <= 7) check_scaling<typename TypeParam::Semi, typename TypeParam::Elem>(p, seed++);
  }
  check_scaling<typename TypeParam::Semi, typename TypeParam::Elem>({7, 9, 13, 70000, Trans::kNo, Trans::kNo}, seed++);
  check_scaling<typename TypeParam::Semi, typename TypeParam::Elem>({300, 200, 129, 1, Trans::kYes, Trans::kNo}, seed++);
}

TYPED_TEST(GpuBatched, beta_zero_gives_the_bits_of_the_plain_product_and_reads_no_c) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(300);
  for (const Batch& p : {Batch{300, 200, 129, 1, Trans::kNo, Trans::kNo}, Batch{16, 16, 16, 7, Trans::kNo, Trans::kYes}}) {
    const Operands<S, T> o(p, rng, true);
    const std::size_t c_size = o.c_size(p);
    DeviceBuffer<T> da(o.a), db(o.b), plain(std::vector<T>(c_size, T(1))), scaled(std::vector<T>(c_size, T(1)));
    gemm<S, T>(p.ta, p.tb, p.m, p.n, p.k, da.get(), o.lda, db.get(), o.ldb, plain.get(), o.ldc);
    // C starts as poison (NaN for floats): beta = zero must not read it.
    std::vector<T> poison(c_size, std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN() : T(1));
    scaled.upload(poison);
    gemm<S, T>(p.ta, p.tb, p.m, p.n, p.k, reference::one<S, T>(), da.get(), o.lda, db.get(), o.ldb,
               reference::zero<S, T>(), scaled.get(), o.ldc);
    const std::size_t size = static_cast<std::size_t>(p.m * o.ldc);
    auto x = plain.download(size), y = scaled.download(size);
    for (std::int64_t i = 0; i < p.m; ++i) {
      EXPECT_EQ(std::memcmp(x.data() + i * o.ldc, y.data() + i * o.ldc, static_cast<std::size_t>(p.n) * sizeof(T)), 0)
          << "row " << i << " " << describe(p);
    }
    DeviceBuffer<T> bplain(std::vector<T>(c_size, T(1))), bscaled(poison);
    gemm_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, bplain.get(), o.ldc,
                       o.sc, p.batch);
    gemm_batched<S, T>(p.ta, p.tb, p.m, p.n, p.k, reference::one<S, T>(), da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb,
                       reference::zero<S, T>(), bscaled.get(), o.ldc, o.sc, p.batch);
    x = bplain.download(c_size);
    y = bscaled.download(c_size);
    for (std::int64_t s = 0; s < p.batch; ++s) {
      for (std::int64_t i = 0; i < p.m; ++i) {
        const std::size_t at = static_cast<std::size_t>(s * o.sc + i * o.ldc);
        EXPECT_EQ(std::memcmp(x.data() + at, y.data() + at, static_cast<std::size_t>(p.n) * sizeof(T)), 0)
            << "batched product " << s << " row " << i << " " << describe(p);
      }
    }
  }
}

TEST(GpuApiBatched, null_and_host_pointers_are_rejected_with_their_names) {
  if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device";
  DeviceBuffer<float> a(64), c(64);
  DeviceBuffer<std::int32_t> arg(64);
  std::vector<float> host(64);
  try {
    gemm_batched_argmax<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, a.get(), 4, 16, host.data(), 4, 16, c.get(),
                                        4, 16, arg.get(), 4, 16, 2);
    FAIL() << "a host B was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("B is not memory of a CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_GE(device_count(), 1);
}

// With the real driver: cuMemAlloc's allocation is the bound (fake_cuda's model of it in the API
// suite), a batch that fits it exactly runs, one element more is refused; an output may share no element
// with an input, but blocks of one matrix that share none run and are right.
TEST(GpuApiBatched, a_batch_that_fits_its_allocation_exactly_runs_and_one_element_more_is_refused) {
  if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<float> a_host = {1, 2, 3, 4}, b_host = {10, 20, 30, 40, 50, 60, 70, 80,
                                                            90, 100, 110, 120, 130, 140, 150, 160};
  DeviceBuffer<float> a(a_host), b(b_host);
  constexpr std::int64_t kElements = std::int64_t{1} << 20, kBatch = kElements / 64;  // 4 x 16 products
  DeviceBuffer<float> c(static_cast<std::size_t>(kElements));
  const auto product = [&](float* c_at, std::int64_t stride_c, std::int64_t batch) {
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 4, 16, 1, a.get(), 1, 0, b.get(), 16, 0, c_at, 16, stride_c,
                                 batch);
  };
  product(c.get(), 64, kBatch);
  const std::vector<float> got = c.download(static_cast<std::size_t>(kElements));
  for (std::int64_t p = 0; p < kBatch; p += kBatch - 1) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 16; ++j) {
        ASSERT_EQ(got[static_cast<std::size_t>(p * 64 + i * 16 + j)], a_host[i] + b_host[j]) << p << " " << i << " " << j;
      }
    }
  }
  // A call that is not refused says what happened instead (it ran, or another error), for the log.
  const auto refused = [&](auto&& call) {
    try {
      call();
    } catch (const InvalidArgument& e) {
      if (std::string(e.what()).find("past the end of its allocation") != std::string::npos) return true;
      ADD_FAILURE() << "refused for another reason: " << e.what();
      return false;
    }
    ADD_FAILURE() << "ran: the allocation check let it through";
    return false;
  };
  EXPECT_TRUE(refused([&] { product(c.get(), 65, kBatch); }));
  EXPECT_TRUE(refused([&] { product(c.get() + 1, 64, kBatch); }));
  EXPECT_TRUE(refused([&] { product(c.get(), 64, kBatch + 1); }));
  EXPECT_TRUE(refused([&] {
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a.get(), 1, 0, b.get(), 1, 0, c.get(), 1, 1,
                                 std::int64_t{1} << 40);
  }));
  EXPECT_TRUE(refused([&] {  // an input: 2^20 elements of A one apart, from a 4-element buffer
    gemm_batched<MaxPlus, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a.get(), 1, 1, b.get(), 1, 0, c.get(), 1, 1,
                                 kElements);
  }));
  // Nothing ran for them: the context is fine and C is as the first product left it.
  EXPECT_EQ(c.download(64), std::vector<float>(got.begin(), got.begin() + 64));
}

TEST(GpuApiBatched, blocks_of_one_matrix_that_share_no_element_run_and_partial_overlaps_are_refused) {
  if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device";
  // One 8 x 8 matrix: C = its block (0, 1) = block (0, 0) (x) block (1, 0) over (min, +).
  std::vector<float> m(64);
  for (int i = 0; i < 64; ++i) m[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % 23);
  DeviceBuffer<float> d(m);
  gemm<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, d.get(), 8, d.get() + 32, 8, d.get() + 4, 8);
  std::vector<float> want = m;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      float best = INFINITY;
      for (int q = 0; q < 4; ++q) best = std::fmin(best, m[static_cast<std::size_t>(i * 8 + q)] + m[static_cast<std::size_t>((4 + q) * 8 + j)]);
      want[static_cast<std::size_t>(i * 8 + 4 + j)] = best;
    }
  }
  EXPECT_EQ(d.download(64), want);
  EXPECT_THROW((gemm<MinPlus, float>(Trans::kNo, Trans::kNo, 4, 4, 4, d.get(), 8, d.get() + 32, 8, d.get() + 3, 8)),
               InvalidArgument);
  EXPECT_EQ(d.download(64), want);
}

}  // namespace
}  // namespace tropical
