// The batched backward passes' CUDA fragments run on the CPU against the reference, bit for bit: dC of
// non-dyadic floats, so a sum in another order would show. Both accumulators: a gradient row (column) of at
// most the kernel's shared slab (k = 5, 64 for f32) and one longer than it (k = 70, through global memory);
// a batch of 3 with padded leading dimensions, transposes, and argmax entries out of [0, k) (skipped).
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

using emulation::Dim3;
using emulation::Case;
using emulation::cols_of;
using emulation::id_of;
using emulation::launch_kernel;
using emulation::rows_of;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

constexpr Case kCases[] = {{40, 33, 5, Trans::kNo, Trans::kNo},
                           {70, 45, 64, Trans::kYes, Trans::kNo},
                           {33, 130, 70, Trans::kNo, Trans::kYes},
                           {129, 3, 64, Trans::kYes, Trans::kYes}};

template <class S, class T>
void check_both_passes(const std::string& suffix) {
  std::mt19937_64 rng(31);
  for (const Case& c : kCases) {
    long long m = c.m, n = c.n, k = c.k, batch = 3;
    long long lda = cols_of(c.ta, m, k) + 2, ldb = cols_of(c.tb, k, n) + 1, ldg = n + 3, ldx = n + 1;
    long long sa = rows_of(c.ta, m, k) * lda, sb = rows_of(c.tb, k, n) * ldb, sg = m * ldg, sx = m * ldx;
    const std::vector<T> a = random_matrix<S, T>(static_cast<std::size_t>(sa * batch), rng, false);
    const std::vector<T> b = random_matrix<S, T>(static_cast<std::size_t>(sb * batch), rng, false);
    const std::vector<T> grad_c = random_matrix<MaxPlus, T>(static_cast<std::size_t>(sg * batch), rng, false);
    std::vector<std::int32_t> arg(static_cast<std::size_t>(sx * batch));
    std::uniform_int_distribution<int> pick(-1, static_cast<int>(k));  // -1 and k are skipped
    for (auto& x : arg) x = pick(rng);
    std::vector<T> want_a(a.size(), T(0)), want_b(b.size(), T(0)), got_a(a.size(), T(0)), got_b(b.size(), T(0));
    reference::backward_a_batched<S, T>(c.ta, c.tb, m, n, k, grad_c.data(), ldg, sg, arg.data(), ldx, sx, b.data(),
                                        ldb, sb, want_a.data(), lda, sa, batch);
    reference::backward_b_batched<S, T>(c.ta, c.tb, m, n, k, grad_c.data(), ldg, sg, arg.data(), ldx, sx, a.data(),
                                        lda, sa, want_b.data(), ldb, sb, batch);
    const int ta = c.ta == Trans::kYes, tb = c.tb == Trans::kYes;
    const auto a_id = id_of("tropical_backward_a_batched_" + suffix);
    const auto b_id = id_of("tropical_backward_b_batched_" + suffix);
    // src/gemm.cpp: one thread per row of op(dA) (column of op(dB)), z over the batch.
    const auto block = catalog::kInfo[static_cast<std::size_t>(a_id)].launch.block_x;
    const Dim3 grid_a{static_cast<unsigned>((m - 1) / block + 1), 1, static_cast<unsigned>(batch)};
    const Dim3 grid_b{static_cast<unsigned>((n - 1) / block + 1), 1, static_cast<unsigned>(batch)};
    catalog::BackwardABatchedArgs args_a{.grad_c = grad_c.data(), .argmax = arg.data(), .operand = b.data(),
                                         .grad = got_a.data(), .m = m, .n = n, .kk = k, .ldgc = ldg, .ldargmax = ldx,
                                         .ld_operand = ldb, .ld_grad = lda, .trans_a = ta, .trans_b = tb,
                                         .stride_gc = sg, .stride_argmax = sx, .stride_operand = sb, .stride_grad = sa,
                                         .batch = batch};
    launch_kernel(a_id, "tuned", {m, n, k}, args_a, &grid_a);
    catalog::BackwardBBatchedArgs args_b{.grad_c = grad_c.data(), .argmax = arg.data(), .operand = a.data(),
                                         .grad = got_b.data(), .m = m, .n = n, .kk = k, .ldgc = ldg, .ldargmax = ldx,
                                         .ld_operand = lda, .ld_grad = ldb, .trans_a = ta, .trans_b = tb,
                                         .stride_gc = sg, .stride_argmax = sx, .stride_operand = sa, .stride_grad = sb,
                                         .batch = batch};
    launch_kernel(b_id, "tuned", {m, n, k}, args_b, &grid_b);
    const std::string what = suffix + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    expect_equal(got_a, want_a, what + " backward_a");
    expect_equal(got_b, want_b, what + " backward_b");
  }
}

TEST(BackwardBatched, maxplus_f32_is_the_reference_bit_for_bit) { check_both_passes<MaxPlus, float>("maxplus_f32"); }

TEST(BackwardBatched, maxmul_f64_is_the_reference_bit_for_bit) { check_both_passes<MaxMul, double>("maxmul_f64"); }

}  // namespace
}  // namespace tropical
