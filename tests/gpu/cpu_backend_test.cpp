// The CPU backend and the GPU kernels on the same inputs, bit for bit (the
// sign of a zero where +0 and -0 tie aside, as tests/cpu/test_data.hpp says):
// every semiring x type, plain, alpha/beta, argmax, batched and the batched
// (deterministic) backward passes, odd shapes and transposes, ties and
// extremes. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../cpu/test_data.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cpu_test {
namespace {

template <class P>
class CpuVsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
  }
};
TYPED_TEST_SUITE(CpuVsGpu, AllPairs);

template <class P>
class CpuVsGpuBackward : public CpuVsGpu<P> {};
TYPED_TEST_SUITE(CpuVsGpuBackward, BackwardPairs);

struct Shape {
  std::int64_t m, n, k, batch;
  Trans ta, tb;
};
const std::vector<Shape> kShapes = {{63, 65, 127, 1, Trans::kNo, Trans::kNo},   {257, 63, 17, 1, Trans::kYes, Trans::kNo},
                                    {17, 257, 65, 1, Trans::kNo, Trans::kYes},  {3, 1, 1031, 1, Trans::kYes, Trans::kYes},
                                    {16, 16, 16, 9, Trans::kNo, Trans::kNo},    {33, 7, 40, 5, Trans::kYes, Trans::kYes},
                                    {300, 200, 100, 2, Trans::kNo, Trans::kNo}};

std::string describe(const Shape& s, Data data) {
  return cpu_test::describe(s.ta, s.tb, s.m, s.n, s.k, data) + " batch=" + std::to_string(s.batch);
}

/// Dense operands of a batch (leading dimensions = stored row lengths).
template <class S, class T>
struct Batch {
  std::int64_t lda, ldb, sa, sb, sc;
  std::vector<T> a, b, c;
  Batch(const Shape& s, std::mt19937_64& rng, Data data)
      : lda(s.ta == Trans::kNo ? s.k : s.m), ldb(s.tb == Trans::kNo ? s.n : s.k), sa(s.m * s.k), sb(s.k * s.n),
        sc(s.m * s.n), a(random_values<S, T>(static_cast<std::size_t>(sa * s.batch), rng, data)),
        b(random_values<S, T>(static_cast<std::size_t>(sb * s.batch), rng, data)),
        c(random_values<S, T>(static_cast<std::size_t>(sc * s.batch), rng, data)) {}
};

// NaNs compare as NaN across devices (test_data.hpp's same_bits): their sign is each processor's.
constexpr bool kAnyNan = true;

TYPED_TEST(CpuVsGpu, products_argmax_and_alpha_beta_are_the_same_bits) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(2024);
  for (const Shape& s : kShapes) {
    for (const Data data : {Data::kTies, Data::kExtremes}) {
      const Batch<S, T> o(s, rng, data);
      const std::string what = describe(s, data);
      const std::vector<T> ab = random_values<S, T>(2, rng, data);
      DeviceBuffer<T> da(o.a), db(o.b), dc(o.c);
      DeviceBuffer<std::int32_t> dx(o.c.size());
      std::vector<T> c = o.c;
      std::vector<std::int32_t> x(o.c.size());
      // Plain (batched on the GPU always; the single product too when batch is 1).
      gemm_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, dc.get(), s.n, o.sc,
                         s.batch);
      cpu::gemm_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb, c.data(),
                              s.n, o.sc, s.batch);
      expect_same_bits(dc.download(c.size()), c, "gemm_batched " + what, kAnyNan);
      if (s.batch == 1) {
        gemm<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), o.lda, db.get(), o.ldb, dc.get(), s.n);
        expect_same_bits(dc.download(c.size()), c, "gemm " + what, kAnyNan);
      }
      // alpha/beta, in place on C.
      dc.upload(o.c);
      c = o.c;
      gemm_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, ab[0], da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, ab[1],
                         dc.get(), s.n, o.sc, s.batch);
      cpu::gemm_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, ab[0], o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb,
                              ab[1], c.data(), s.n, o.sc, s.batch);
      expect_same_bits(dc.download(c.size()), c, "alpha/beta " + what, kAnyNan);
      // Argmax.
      gemm_batched_argmax<S, T>(s.ta, s.tb, s.m, s.n, s.k, da.get(), o.lda, o.sa, db.get(), o.ldb, o.sb, dc.get(),
                                s.n, o.sc, dx.get(), s.n, o.sc, s.batch);
      cpu::gemm_batched_argmax<S, T>(s.ta, s.tb, s.m, s.n, s.k, o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb,
                                     c.data(), s.n, o.sc, x.data(), s.n, o.sc, s.batch);
      expect_same_bits(dc.download(c.size()), c, "argmax C " + what, kAnyNan);
      expect_same_bits(dx.download(x.size()), x, "argmax k " + what, kAnyNan);
    }
  }
}

TYPED_TEST(CpuVsGpuBackward, batched_backward_passes_are_the_same_bits) {
  using S = typename TypeParam::Semiring;
  using T = typename TypeParam::Element;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> grad(-3, 3);
  for (const Shape& s : kShapes) {
    const Batch<S, T> o(s, rng, Data::kTies);
    std::vector<T> gc(o.c.size()), c(o.c.size());
    for (auto& g : gc) g = static_cast<T>(grad(rng));
    std::vector<std::int32_t> x(o.c.size());
    cpu::gemm_batched_argmax<S, T>(s.ta, s.tb, s.m, s.n, s.k, o.a.data(), o.lda, o.sa, o.b.data(), o.ldb, o.sb,
                                   c.data(), s.n, o.sc, x.data(), s.n, o.sc, s.batch);
    DeviceBuffer<T> da(o.a), db(o.b), dgc(gc), dga(o.a.size()), dgb(o.b.size());
    DeviceBuffer<std::int32_t> dx(x);
    std::vector<T> ga(o.a.size()), gb(o.b.size());
    backward_a_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, dgc.get(), s.n, o.sc, dx.get(), s.n, o.sc, db.get(), o.ldb,
                             o.sb, dga.get(), o.lda, o.sa, s.batch);
    cpu::backward_a_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, gc.data(), s.n, o.sc, x.data(), s.n, o.sc, o.b.data(),
                                  o.ldb, o.sb, ga.data(), o.lda, o.sa, s.batch);
    expect_same_bits(dga.download(ga.size()), ga, "backward_a_batched " + describe(s, Data::kTies), kAnyNan);
    backward_b_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, dgc.get(), s.n, o.sc, dx.get(), s.n, o.sc, da.get(), o.lda,
                             o.sa, dgb.get(), o.ldb, o.sb, s.batch);
    cpu::backward_b_batched<S, T>(s.ta, s.tb, s.m, s.n, s.k, gc.data(), s.n, o.sc, x.data(), s.n, o.sc, o.a.data(),
                                  o.lda, o.sa, gb.data(), o.ldb, o.sb, s.batch);
    expect_same_bits(dgb.download(gb.size()), gb, "backward_b_batched " + describe(s, Data::kTies), kAnyNan);
  }
}

}  // namespace
}  // namespace tropical::cpu_test
