// The catalog's CUDA fragments run on the CPU (tests/emulation/cuda_host.hpp), both tiers, against the
// reference, bit for bit (NaN equal to NaN, zeros by value): the kernels named in
// tests/emulation/meson.build, with the argument lists and grids the library's launchers use
// (src/launch.cpp, src/gemm.cpp). No GPU needed: this is what CI checks of a kernel change; the GPU
// suites (tests/gpu/) check the same on the hardware and the benchmarks its speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../gpu/test_data.hpp"
#include "launch_kernel.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

using emulation::Dim3;
using emulation::id_of;
using emulation::launch_kernel;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

constexpr const char* kTiers[] = {"tuned", "quick"};

struct Shape {
  std::int64_t m, n, k;
  Trans ta, tb;
  std::int64_t pad;  // extra leading-dimension elements
};
// Partial tiles, k past several k-tiles, transposes and padded leading dimensions.
constexpr Shape kShapes[] = {{130, 133, 70, Trans::kNo, Trans::kNo, 0},
                             {37, 71, 33, Trans::kYes, Trans::kYes, 3},
                             {1, 5, 129, Trans::kNo, Trans::kYes, 1}};

std::int64_t rows_of(Trans t, std::int64_t r, std::int64_t c) { return t == Trans::kYes ? c : r; }
std::int64_t cols_of(Trans t, std::int64_t r, std::int64_t c) { return t == Trans::kYes ? r : c; }
int flag(Trans t) { return t == Trans::kYes ? 1 : 0; }

// One product's operands, passed as the library's launchers pass them (src/launch.cpp): runs a tier's gemm
// or gemm_argmax into the given outputs.
template <class S, class T>
struct Product {
  const void* a;
  const void* b;
  long long m, n, k, lda, ldb, ldc, ldx;
  int ta, tb;

  void gemm(const char* tier, T* c, T alpha = T{}, T beta = T{}, int flags = 0) {
    catalog::GemmArgs args{.a = a, .b = b, .c = c, .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                           .trans_a = ta, .trans_b = tb, .alpha = &alpha, .beta = &beta, .flags = flags,
                           .work = nullptr, .whole_rows = 0, .parts = 0};
    launch_kernel(kernel_id<S, T, Op::kGemm>(), tier, {m, n, k}, args);
  }
  void argmax(const char* tier, T* c, std::int32_t* x) {
    catalog::GemmArgmaxArgs args{.a = a, .b = b, .c = c, .argmax = x, .m = m, .n = n, .kk = k, .lda = lda,
                                 .ldb = ldb, .ldc = ldc, .ldargmax = ldx, .trans_a = ta, .trans_b = tb};
    launch_kernel(kernel_id<S, T, Op::kGemmArgmax>(), tier, {m, n, k}, args);
  }
  /// "<tier> MxNxK<suffix>", for failure messages.
  std::string what(const char* tier, const std::string& suffix) const {
    return std::string(tier) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           suffix;
  }
};

template <class P>
class Products : public ::testing::Test {};

template <class S, class T>
using Pair = gpu_test::Pair<S, T>;
using Emulated = ::testing::Types<Pair<MaxPlus, float>, Pair<MinPlus, double>, Pair<MaxMul, float>,
                                  Pair<MaxMin, float>, Pair<MinPlus, std::int32_t>, Pair<MaxPlus, std::int16_t>,
                                  Pair<MinPlus, std::int16_t>, Pair<MaxMul, std::int64_t>, Pair<MinMax, double>,
                                  Pair<AndOr, std::uint8_t>>;
TYPED_TEST_SUITE(Products, Emulated);

TYPED_TEST(Products, gemm_and_argmax_of_both_tiers_are_the_reference) {
  using S = typename TypeParam::Semi;
  using T = typename TypeParam::Elem;
  std::mt19937_64 rng(26);
  for (const Shape& s : kShapes) {
    for (const bool extremes : {false, true}) {
      const std::int64_t ar = rows_of(s.ta, s.m, s.k), ac = cols_of(s.ta, s.m, s.k);
      const std::int64_t br = rows_of(s.tb, s.k, s.n), bc = cols_of(s.tb, s.k, s.n);
      const long long lda = ac + s.pad, ldb = bc + s.pad, ldc = s.n + s.pad, ldx = s.n;
      const long long m = s.m, n = s.n, k = s.k;
      const std::vector<T> a = random_matrix<S, T>(static_cast<std::size_t>(ar * lda), rng, extremes);
      const std::vector<T> b = random_matrix<S, T>(static_cast<std::size_t>(br * ldb), rng, extremes);
      std::vector<T> want(static_cast<std::size_t>(m * ldc), T(7));
      std::vector<std::int32_t> want_arg(static_cast<std::size_t>(m * ldx), 7);
      std::vector<T> want_plain = want;
      reference::gemm<S, T>(s.ta, s.tb, m, n, k, a.data(), lda, b.data(), ldb, want_plain.data(), ldc);
      reference::gemm_argmax<S, T>(s.ta, s.tb, m, n, k, a.data(), lda, b.data(), ldb, want.data(), ldc,
                                   want_arg.data(), ldx);
      Product<S, T> p{a.data(), b.data(), m, n, k, lda, ldb, ldc, ldx, flag(s.ta), flag(s.tb)};
      for (const char* tier : kTiers) {
        const std::string what = p.what(tier, extremes ? " with extremes" : "");
        std::vector<T> c(want.size(), T(7));
        p.gemm(tier, c.data());
        expect_equal(c, want_plain, "gemm " + what);
        // The epilogue: C = alpha (x) P (+) beta (x) C, with the flags the library passes for them.
        std::vector<T> scaled = random_matrix<S, T>(want.size(), rng, extremes);
        std::vector<T> want_scaled = scaled;
        const std::vector<T> ab = random_matrix<S, T>(2, rng, false);
        reference::gemm<S, T>(s.ta, s.tb, m, n, k, ab[0], a.data(), lda, b.data(), ldb, ab[1], want_scaled.data(),
                              ldc);
        const detail::Scaling sc = detail::scaling<S, T>(ab[0], ab[1]);
        p.gemm(tier, scaled.data(), ab[0], ab[1], sc.flags);
        expect_equal(scaled, want_scaled, "gemm alpha/beta (flags " + std::to_string(sc.flags) + ") " + what);
        std::fill(c.begin(), c.end(), T(7));
        std::vector<std::int32_t> arg(want_arg.size(), 7);
        p.argmax(tier, c.data(), arg.data());
        expect_equal(c, want, "gemm_argmax C " + what);
        expect_equal(arg, want_arg, "gemm_argmax argmax " + what);
      }
    }
  }
}

// Zeros of both signs and a few small values: most maxima are a zero that -0 and +0 products tie
// for, so the sign of C's zero depends on how the kernel reduces. The argmax kernels carry the running
// maximum through every k-step in k order, as the plain product does: their C is the plain product's bit
// for bit, in both tiers, and the index is the reference's (the first k whose product equals the maximum).
template <class S, class T>
void expect_argmax_c_is_the_product_c() {
  std::mt19937_64 rng(25);
  const bool min = S::kAdd == AddKind::kMin;
  const T v[] = {T(-0.0), T(0.0), T(min ? 1 : -1), T(min ? 2 : -2)};
  std::uniform_int_distribution<int> pick(0, S::kMul == MulKind::kMul ? 1 : 3);  // MaxMul: no negatives
  for (const Shape& s : kShapes) {
    const std::int64_t ar = rows_of(s.ta, s.m, s.k), br = rows_of(s.tb, s.k, s.n);
    const long long lda = cols_of(s.ta, s.m, s.k) + s.pad, ldb = cols_of(s.tb, s.k, s.n) + s.pad;
    const long long ldc = s.n, ldx = s.n;
    const long long m = s.m, n = s.n, k = s.k;
    std::vector<T> a(static_cast<std::size_t>(ar * lda)), b(static_cast<std::size_t>(br * ldb));
    for (T& x : a) x = v[pick(rng)];
    for (T& x : b) x = v[pick(rng)];
    std::vector<T> want(static_cast<std::size_t>(m * ldc));
    std::vector<std::int32_t> want_arg(want.size());
    reference::gemm_argmax<S, T>(s.ta, s.tb, m, n, k, a.data(), lda, b.data(), ldb, want.data(), ldc,
                                 want_arg.data(), ldx);
    Product<S, T> p{a.data(), b.data(), m, n, k, lda, ldb, ldc, ldx, flag(s.ta), flag(s.tb)};
    std::vector<T> first;
    for (const char* tier : kTiers) {
      const std::string what = p.what(tier, " on signed zeros");
      std::vector<T> plain(want.size()), c(want.size());
      std::vector<std::int32_t> arg(want.size(), 7);
      p.gemm(tier, plain.data());
      p.argmax(tier, c.data(), arg.data());
      expect_equal(c, want, "gemm_argmax C " + what);
      expect_equal(arg, want_arg, "gemm_argmax argmax " + what);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < c.size(); ++i) differ += std::signbit(c[i]) != std::signbit(plain[i]);
      EXPECT_EQ(differ, 0u) << "gemm_argmax C and gemm C differ in the sign of a zero: " << what;
      if (first.empty()) {
        first = c;
      } else {
        std::size_t tiers_differ = 0;
        for (std::size_t i = 0; i < c.size(); ++i) tiers_differ += std::signbit(c[i]) != std::signbit(first[i]);
        EXPECT_EQ(tiers_differ, 0u) << "the tiers' gemm_argmax C differ in the sign of a zero: " << what;
      }
    }
  }
}

TEST(SignedZeros, argmax_c_is_the_plain_product_c_bit_for_bit) {
  expect_argmax_c_is_the_product_c<MaxPlus, float>();
  expect_argmax_c_is_the_product_c<MaxMul, float>();
  expect_argmax_c_is_the_product_c<MaxMin, float>();
  expect_argmax_c_is_the_product_c<MinPlus, double>();
  expect_argmax_c_is_the_product_c<MinMax, double>();
}

// The batched argmax of the tensor-network shapes on the named tiles (semiring S, T), both tiers. The small
// tiles keep their operands as chunk cells and rescan from there where k <= 64 (64^3, 16^3, and 50 x 40 x 50:
// a partial last k-tile, rows and columns short of the tile), from global memory beyond (37 x 29 x 70).
template <class S, class T>
void expect_batched_argmax_is_the_reference(std::initializer_list<const char*> names, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const char* name : names) {
    for (const Shape& s : {Shape{64, 64, 64, Trans::kNo, Trans::kNo, 0}, Shape{16, 16, 16, Trans::kNo, Trans::kYes, 0},
                           Shape{50, 40, 50, Trans::kYes, Trans::kYes, 1},
                           Shape{37, 29, 70, Trans::kYes, Trans::kNo, 2}}) {
      long long m = s.m, n = s.n, k = s.k, batch = 5;
      long long lda = cols_of(s.ta, s.m, s.k) + s.pad, ldb = cols_of(s.tb, s.k, s.n) + s.pad, ldc = n, ldx = n;
      long long sa = rows_of(s.ta, s.m, s.k) * lda, sb = rows_of(s.tb, s.k, s.n) * ldb, sc = m * ldc, sx = m * ldx;
      const std::vector<T> a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, true);
      const std::vector<T> b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, true);
      std::vector<T> want(static_cast<std::size_t>(sc * batch));
      std::vector<std::int32_t> want_arg(static_cast<std::size_t>(sx * batch));
      reference::gemm_batched_argmax<S, T>(s.ta, s.tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, want.data(), ldc,
                                           sc, want_arg.data(), ldx, sx, batch);
      for (const char* tier : kTiers) {
        std::vector<T> c(want.size(), T(7));
        std::vector<std::int32_t> arg(want_arg.size(), 7);
        catalog::GemmBatchedArgmaxArgs args{.a = a.data(), .b = b.data(), .c = c.data(), .argmax = arg.data(),
                                            .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                                            .ldargmax = ldx, .trans_a = flag(s.ta), .trans_b = flag(s.tb),
                                            .stride_a = sa, .stride_b = sb, .stride_c = sc, .stride_argmax = sx,
                                            .batch = batch};
        launch_kernel(id_of(name), tier, {m, n, k, batch}, args);
        const std::string what = std::string(name) + " " + tier + " " + std::to_string(m) + "x" +
                                 std::to_string(n) + "x" + std::to_string(k);
        expect_equal(c, want, what + " C");
        expect_equal(arg, want_arg, what + " argmax");
        // Blocks that walk several products (grid z under the batch, as for batches past 65535): each product
        // starts from the shared memory the block's previous one left.
        const auto index = static_cast<std::size_t>(id_of(name));
        const auto& shape =
            std::string_view(tier) == "quick" ? catalog::kQuickLaunch[index] : catalog::kTunedLaunch[index];
        const Dim3 walk{static_cast<unsigned>((n - 1) / shape.tile_n + 1),
                        static_cast<unsigned>((m - 1) / shape.tile_m + 1), 2};
        std::fill(c.begin(), c.end(), T(7));
        std::fill(arg.begin(), arg.end(), 7);
        launch_kernel(id_of(name), tier, {m, n, k, batch}, args, &walk);
        expect_equal(c, want, what + " C, 2 blocks along the batch");
        expect_equal(arg, want_arg, what + " argmax, 2 blocks along the batch");
      }
    }
  }
}

TEST(BatchedArgmax, every_tile_of_both_tiers_is_the_reference) {
  expect_batched_argmax_is_the_reference<MaxPlus, float>(
      {"tropical_gemm_batched_argmax_maxplus_f32", "tropical_gemm_batched_argmax_maxplus_f32_64x64",
       "tropical_gemm_batched_argmax_maxplus_f32_32x32", "tropical_gemm_batched_argmax_maxplus_f32_16x16"},
      25);
}

// The small tiles' rescan with other semirings' products and padding (the zero: +inf for MinMax, 0 for MaxMul).
TEST(BatchedArgmax, small_tiles_of_other_semirings_are_the_reference) {
  expect_batched_argmax_is_the_reference<MinMax, float>({"tropical_gemm_batched_argmax_minmax_f32_64x64"}, 26);
  expect_batched_argmax_is_the_reference<MaxMul, float>({"tropical_gemm_batched_argmax_maxmul_f32_32x32"}, 27);
  expect_batched_argmax_is_the_reference<MaxMin, float>({"tropical_gemm_batched_argmax_maxmin_f32_16x16"}, 28);
}

// The backward passes (one tier each): dC of small integers, so that sums are exact in any order (the
// non-batched passes scatter with atomics).
TEST(Backward, both_passes_are_the_reference) {
  std::mt19937_64 rng(24);
  std::uniform_int_distribution<int> small(-8, 8);
  for (const Shape& s : kShapes) {
    long long m = s.m, n = s.n, k = s.k;
    long long lda = cols_of(s.ta, s.m, s.k) + s.pad, ldb = cols_of(s.tb, s.k, s.n) + s.pad, ldg = n, ldx = n;
    const std::int64_t ar = rows_of(s.ta, s.m, s.k), br = rows_of(s.tb, s.k, s.n);
    const std::vector<float> a = random_matrix<MaxPlus, float>(static_cast<std::size_t>(ar * lda), rng, false);
    const std::vector<float> b = random_matrix<MaxPlus, float>(static_cast<std::size_t>(br * ldb), rng, false);
    std::vector<float> c(static_cast<std::size_t>(m * n)), grad_c(c.size());
    std::vector<std::int32_t> arg(c.size());
    for (float& g : grad_c) g = static_cast<float>(small(rng));
    reference::gemm_argmax<MaxPlus, float>(s.ta, s.tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), n,
                                           arg.data(), ldx);
    std::vector<float> want_a(a.size(), 0.f), want_b(b.size(), 0.f);
    reference::backward_a<MaxPlus, float>(s.ta, s.tb, m, n, k, grad_c.data(), ldg, arg.data(), ldx, b.data(), ldb,
                                          want_a.data(), lda);
    reference::backward_b<MaxPlus, float>(s.ta, s.tb, m, n, k, grad_c.data(), ldg, arg.data(), ldx, a.data(), lda,
                                          want_b.data(), ldb);
    const int ta = flag(s.ta), tb = flag(s.tb);
    std::vector<float> got_a(a.size(), 0.f), got_b(b.size(), 0.f);
    // The kernels add into a zeroed gradient (the library clears it first), and read the other operand.
    catalog::BackwardAArgs args_a{.grad_c = grad_c.data(), .argmax = arg.data(), .operand = b.data(),
                                  .grad = got_a.data(), .m = m, .n = n, .kk = k, .ldgc = ldg, .ldargmax = ldx,
                                  .ld_operand = ldb, .ld_grad = lda, .trans_a = ta, .trans_b = tb};
    launch_kernel(id_of("tropical_backward_a_maxplus_f32"), "tuned", {m, n, k}, args_a);
    expect_equal(got_a, want_a, "backward_a");
    // backward_b's grid (src/gemm.cpp): x over row blocks of dC, y over strips of columns.
    const auto b_id = id_of("tropical_backward_b_maxplus_f32");
    const auto& shape = catalog::kInfo[static_cast<std::size_t>(b_id)].launch;
    const Dim3 grid{static_cast<unsigned>((m - 1) / shape.tile_m + 1), static_cast<unsigned>((n - 1) / shape.tile_n + 1),
                    1};
    catalog::BackwardBArgs args_b{.grad_c = grad_c.data(), .argmax = arg.data(), .operand = a.data(),
                                  .grad = got_b.data(), .m = m, .n = n, .kk = k, .ldgc = ldg, .ldargmax = ldx,
                                  .ld_operand = lda, .ld_grad = ldb, .trans_a = ta, .trans_b = tb};
    launch_kernel(b_id, "tuned", {m, n, k}, args_b, &grid);
    expect_equal(got_b, want_b, "backward_b");
  }
}

// CountingTropical: values and counts, spread and tied values, both tiers, the default tile (8 x 4 elements a
// thread) and the fewtiles variant (4 x 4).
// Besides kShapes (whose leading dimensions allow vectors in two k-tiles of B alone), two whose whole tiles load
// as vectors: every leading dimension a multiple of 4, m and n past a 64 x 64 tile, k past a k-tile;
// untransposed and transposed.
constexpr Shape kCountingShapes[] = {kShapes[0], kShapes[1], kShapes[2], {130, 130, 70, Trans::kNo, Trans::kNo, 2},
                                     {96, 136, 52, Trans::kYes, Trans::kYes, 4}};

TEST(Counting, both_tiers_are_the_reference) {
  std::mt19937_64 rng(23);
  for (const bool tied : {false, true}) {
    for (const Shape& s : kCountingShapes) {
      long long m = s.m, n = s.n, k = s.k, batch = 1;
      long long lda = cols_of(s.ta, s.m, s.k) + s.pad, ldb = cols_of(s.tb, s.k, s.n) + s.pad, ldc = n;
      const std::int64_t ar = rows_of(s.ta, s.m, s.k), br = rows_of(s.tb, s.k, s.n);
      std::uniform_int_distribution<int> few(-2, 2), count(0, 3);
      std::uniform_real_distribution<float> spread(-1.f, 1.f);
      const auto values = [&](std::int64_t size) {
        std::vector<float> v(static_cast<std::size_t>(size));
        for (float& x : v) x = tied ? static_cast<float>(few(rng)) : spread(rng);
        return v;
      };
      const auto counts = [&](std::int64_t size) {
        std::vector<float> v(static_cast<std::size_t>(size));
        for (float& x : v) x = static_cast<float>(count(rng));
        return v;
      };
      const std::vector<float> av = values(ar * lda), ac = counts(ar * lda), bv = values(br * ldb),
                               bc = counts(br * ldb);
      std::vector<float> want_v(static_cast<std::size_t>(m * ldc)), want_c(want_v.size());
      reference::gemm_counting<float>(s.ta, s.tb, m, n, k, {av.data(), lda, ac.data(), lda},
                                      {bv.data(), ldb, bc.data(), ldb}, {want_v.data(), ldc, want_c.data(), ldc});
      for (const char* kernel : {"tropical_gemm_counting_f32", "tropical_gemm_counting_f32_fewtiles"}) {
        for (const char* tier : kTiers) {
          std::vector<float> cv(want_v.size(), 7.f), cc(want_c.size(), 7.f);
          catalog::CountingArgs args{.a_values = av.data(), .a_counts = ac.data(), .b_values = bv.data(),
                                     .b_counts = bc.data(), .c_values = cv.data(), .c_counts = cc.data(), .m = m,
                                     .n = n, .kk = k, .lda_values = lda, .lda_counts = lda, .ldb_values = ldb,
                                     .ldb_counts = ldb, .ldc_values = ldc, .ldc_counts = ldc, .trans_a = flag(s.ta),
                                     .trans_b = flag(s.tb), .stride_a_values = 0, .stride_a_counts = 0,
                                     .stride_b_values = 0, .stride_b_counts = 0, .stride_c_values = 0,
                                     .stride_c_counts = 0, .batch = batch};
          launch_kernel(id_of(kernel), tier, {m, n, k}, args);
          const std::string what = std::string(kernel) + " " + tier + (tied ? " tied " : " spread ") +
                                   std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
          expect_equal(cv, want_v, "counting values " + what);
          expect_equal(cc, want_c, "counting counts " + what);
        }
      }
    }
  }
}

TEST(Emulation, every_product_kernel_built_here_has_both_tiers) {
  for (const auto& info : catalog::kInfo) {
    const std::string name(info.name);
    if (emulation::find_kernel(name.c_str(), "tuned") == nullptr) continue;
    const bool two_tiers = !catalog::kQuickKernels[static_cast<std::size_t>(info.id)].source.empty();
    EXPECT_EQ(emulation::entry_of(info.id, "quick") != nullptr, two_tiers) << name;
  }
}

}  // namespace
}  // namespace tropical
