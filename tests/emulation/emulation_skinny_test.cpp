// The skinny tiles of the batched products (templates/gemm_skinny.cu.j2) run on the CPU against the reference,
// bit for bit: 1 to 8 rows, n past one block of columns, k past one staged chunk, transposes, padded leading
// dimensions, a batch of 3, alpha/beta; the argmax's ties on small integers (the smallest k wins). The launcher
// routes a product here (catalog::pick_tile) when it has at most 8 rows and no small tile holds it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../gpu/test_data.hpp"
#include "launch_kernel.hpp"
#include "shapes.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

using emulation::Case;
using emulation::cols_of;
using emulation::id_of;
using emulation::launch_kernel;
using emulation::rows_of;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

constexpr Case kCases[] = {{1, 300, 5, Trans::kNo, Trans::kNo},
                           {3, 513, 130, Trans::kYes, Trans::kNo},
                           {8, 257, 1, Trans::kNo, Trans::kYes},
                           {5, 70, 260, Trans::kYes, Trans::kYes}};

template <class S, class T>
void check_skinny(const std::string& name, bool ties) {
  std::mt19937_64 rng(41);
  std::uniform_int_distribution<int> tiny(-2, 2);
  for (const Case& c : kCases) {
    long long m = c.m, n = c.n, k = c.k, batch = 3;
    long long lda = cols_of(c.ta, m, k) + 1, ldb = cols_of(c.tb, k, n) + 2, ldc = n + 3, ldx = n + 1;
    long long sa = rows_of(c.ta, m, k) * lda, sb = rows_of(c.tb, k, n) * ldb, sc = m * ldc, sx = m * ldx;
    std::vector<T> a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, true);
    std::vector<T> b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, true);
    if (ties) {
      for (T& x : a) x = static_cast<T>(tiny(rng) < -1 ? 0 : tiny(rng) + 2);
      for (T& x : b) x = static_cast<T>(tiny(rng) + 2);
    }
    const std::string what = name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    const int ta = c.ta == Trans::kYes, tb = c.tb == Trans::kYes;
    const auto plain = id_of("tropical_gemm_batched_" + name + "_skinny");
    const auto with_argmax = id_of("tropical_gemm_batched_argmax_" + name + "_skinny");
    // Plain, then with C read back: C = alpha (x) (A (x) B) (+) beta (x) C_old.
    for (int flags : {0, 7}) {
      std::vector<T> want = random_matrix<S, T>(static_cast<std::size_t>(sc * batch), rng, false), got = want;
      const T alpha = flags ? T(1) : T(0), beta = flags ? T(2) : T(0);
      reference::gemm_batched<S, T>(c.ta, c.tb, m, n, k, flags ? alpha : reference::one<S, T>(), a.data(), lda, sa, b.data(), ldb,
                                    sb, flags ? beta : reference::zero<S, T>(), want.data(), ldc, sc, batch);
      catalog::GemmBatchedArgs args{.a = a.data(), .b = b.data(), .c = got.data(), .m = m, .n = n, .kk = k,
                                    .lda = lda, .ldb = ldb, .ldc = ldc, .trans_a = ta, .trans_b = tb, .stride_a = sa,
                                    .stride_b = sb, .stride_c = sc, .batch = batch, .alpha = &alpha, .beta = &beta,
                                    .flags = flags};
      launch_kernel(plain, "tuned", {m, n, k, batch}, args);
      expect_equal(got, want, what + " gemm flags " + std::to_string(flags));
    }
    std::vector<T> want_c(static_cast<std::size_t>(sc * batch), T(0)), got_c = want_c;
    std::vector<std::int32_t> want_x(static_cast<std::size_t>(sx * batch), 7), got_x = want_x;
    reference::gemm_batched_argmax<S, T>(c.ta, c.tb, m, n, k, a.data(), lda, sa, b.data(), ldb, sb, want_c.data(), ldc,
                                         sc, want_x.data(), ldx, sx, batch);
    catalog::GemmBatchedArgmaxArgs args{.a = a.data(), .b = b.data(), .c = got_c.data(), .argmax = got_x.data(),
                                        .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb, .ldc = ldc, .ldargmax = ldx,
                                        .trans_a = ta, .trans_b = tb, .stride_a = sa, .stride_b = sb, .stride_c = sc,
                                        .stride_argmax = sx, .batch = batch};
    launch_kernel(with_argmax, "tuned", {m, n, k, batch}, args);
    expect_equal(got_c, want_c, what + " argmax C");
    expect_equal(got_x, want_x, what + " argmax");
  }
}

TEST(Skinny, maxplus_f32_is_the_reference_bit_for_bit) { check_skinny<MaxPlus, float>("maxplus_f32", false); }
TEST(Skinny, maxplus_f32_ties_go_to_the_smallest_k) { check_skinny<MaxPlus, float>("maxplus_f32", true); }
TEST(Skinny, minplus_f64_is_the_reference_bit_for_bit) { check_skinny<MinPlus, double>("minplus_f64", false); }
TEST(Skinny, maxmul_f32_is_the_reference_bit_for_bit) { check_skinny<MaxMul, float>("maxmul_f32", true); }

// CountingTropical's skinny tile: tied values (small integers) so that counts add up over many k, and counts
// that are not powers of two, against the reference's one-pass (value, count) walk.
template <class T>
void check_counting_skinny(const std::string& name) {
  std::mt19937_64 rng(43);
  std::uniform_int_distribution<int> few(-2, 2), count(1, 5);
  for (const Case& c : kCases) {
    long long m = c.m, n = c.n, k = c.k, batch = 2;
    long long lda = cols_of(c.ta, m, k) + 1, ldb = cols_of(c.tb, k, n) + 2, ldc = n + 3;
    long long sa = rows_of(c.ta, m, k) * lda, sb = rows_of(c.tb, k, n) * ldb, sc = m * ldc;
    const auto fill = [&](long long size, bool counts) {
      std::vector<T> v(static_cast<std::size_t>(size * batch));
      for (T& x : v) x = static_cast<T>(counts ? count(rng) : few(rng));
      return v;
    };
    const std::vector<T> av = fill(sa, false), ac = fill(sa, true), bv = fill(sb, false), bc = fill(sb, true);
    std::vector<T> want_v(static_cast<std::size_t>(sc * batch), T(7)), want_c = want_v, got_v = want_v,
        got_c = want_v;
    reference::gemm_batched_counting<T>(c.ta, c.tb, m, n, k, {av.data(), lda, ac.data(), lda, sa, sa},
                                        {bv.data(), ldb, bc.data(), ldb, sb, sb},
                                        {want_v.data(), ldc, want_c.data(), ldc, sc, sc}, batch);
    catalog::CountingArgs args{.a_values = av.data(), .a_counts = ac.data(), .b_values = bv.data(),
                               .b_counts = bc.data(), .c_values = got_v.data(), .c_counts = got_c.data(), .m = m,
                               .n = n, .kk = k, .lda_values = lda, .lda_counts = lda, .ldb_values = ldb,
                               .ldb_counts = ldb, .ldc_values = ldc, .ldc_counts = ldc,
                               .trans_a = c.ta == Trans::kYes, .trans_b = c.tb == Trans::kYes,
                               .stride_a_values = sa, .stride_a_counts = sa, .stride_b_values = sb,
                               .stride_b_counts = sb, .stride_c_values = sc, .stride_c_counts = sc, .batch = batch};
    launch_kernel(id_of("tropical_gemm_batched_counting_" + name + "_skinny"), "tuned", {m, n, k, batch}, args);
    const std::string what = name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    expect_equal(got_v, want_v, what + " counting values");
    expect_equal(got_c, want_c, what + " counting counts");
  }
}

TEST(Skinny, counting_f32_is_the_reference_bit_for_bit) { check_counting_skinny<float>("f32"); }
TEST(Skinny, counting_f64_is_the_reference_bit_for_bit) { check_counting_skinny<double>("f64"); }

TEST(Skinny, the_launcher_takes_it_for_few_rows_that_no_small_tile_holds) {
  using catalog::KernelId;
  using catalog::pick_product;
  using catalog::pick_tile;
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 8, 65) == KernelId::kGemmBatchedMaxplusF32TileSkinny);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 2, 1 << 24) == KernelId::kGemmBatchedMaxplusF32TileSkinny);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 8, 16) == KernelId::kGemmBatchedMaxplusF32Tile16x16);
  static_assert(pick_tile(KernelId::kGemmBatchedMaxplusF32, 9, 1000) == KernelId::kGemmBatchedMaxplusF32);
  static_assert(pick_product(KernelId::kGemmArgmaxMinplusF64, 4, 100000) ==
                KernelId::kGemmBatchedArgmaxMinplusF64TileSkinny);
  static_assert(pick_product(KernelId::kGemmMaxplusI32, 4, 100000) == KernelId::kGemmMaxplusI32);
  static_assert(pick_product(KernelId::kGemmCountingF32, 3, 5000) == KernelId::kGemmBatchedCountingF32TileSkinny);
  static_assert(pick_tile(KernelId::kGemmBatchedCountingF64, 9, 5000) == KernelId::kGemmBatchedCountingF64);
  SUCCEED();
}

}  // namespace
}  // namespace tropical
