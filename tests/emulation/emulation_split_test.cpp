// Split k (templates/gemm_split.cu.j2) on the CPU: a tuned gemm whose rows of tiles from whole_rows on are
// computed by <name>_split, each tile's k split over `parts` blocks that merge in k order, equals the unsplit
// kernel's C bit for bit (the signs of zeros too), the epilogue (alpha, beta) included, as src/split_k.cpp
// launches it: the kernel on the whole rows, then the split kernel, its tickets zeroed. The emulator runs blocks
// one after another, so the merging part is always the grid's last and the fences go untested here (the GPU's
// split_gpu is their test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../gpu/test_data.hpp"
#include "launch_kernel.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

using emulation::Dim3;
using gpu_test::expect_equal;
using gpu_test::random_matrix;

struct Split {
  long long whole_rows;
  int parts;
};

template <class S, class T>
class SplitProduct {
 public:
  /// Random operands with extremes, or (zeros) zeros of both signs and a few small values, so that most
  /// maxima are zeros whose sign says which k won (the k loop's first, for f64's compare and select).
  SplitProduct(long long m, long long n, long long k, int trans_a, int trans_b, bool zeros, std::mt19937_64& rng,
               bool extremes = true)
      : m_(m), n_(n), k_(k), ta_(trans_a), tb_(trans_b) {
    lda_ = (ta_ ? m : k) + 1;
    ldb_ = (tb_ ? k : n) + 2;
    a_ = random_matrix<S, T>(static_cast<std::size_t>((ta_ ? k : m) * lda_), rng, extremes);
    b_ = random_matrix<S, T>(static_cast<std::size_t>((tb_ ? n : k) * ldb_), rng, extremes);
    if (zeros) {
      const bool min = S::kAdd == AddKind::kMin;
      const T v[] = {T(-0.0), T(0.0), T(min ? 1 : -1), T(min ? 2 : -2)};
      std::uniform_int_distribution<int> pick(0, S::kMul == MulKind::kMul ? 1 : 3);
      for (T& x : a_) x = v[pick(rng)];
      for (T& x : b_) x = v[pick(rng)];
    }
  }

  /// C (ld n) as src/split_k.cpp computes it under `split` (parts 0: the kernel alone), C starting as `c0`.
  std::vector<T> run(Split split, const std::vector<T>& c0, T alpha, T beta, int flags) {
    const auto index = static_cast<std::size_t>(id_);
    const jit::LaunchShape& shape = catalog::kTunedLaunch[index];
    const auto tile_rows = static_cast<unsigned>((m_ + shape.tile_m - 1) / shape.tile_m);
    const auto tile_cols = static_cast<unsigned>((n_ + shape.tile_n - 1) / shape.tile_n);
    std::vector<T> c = c0;
    // The workspace: a ticket per split tile (256 bytes' worth at least), then each part's tile.
    const long long split_tiles = (tile_rows - split.whole_rows) * tile_cols;
    const std::size_t tickets = static_cast<std::size_t>((split_tiles * 4 + 255) / 256 * 256);
    std::vector<std::uint64_t> work((tickets + static_cast<std::size_t>(split_tiles) * split.parts * shape.tile_m *
                                                  shape.tile_n * sizeof(T)) / 8 + 1, 0);
    catalog::GemmArgs args{.a = a_.data(), .b = b_.data(), .c = c.data(), .m = m_, .n = n_, .kk = k_,
                           .lda = lda_, .ldb = ldb_, .ldc = n_, .trans_a = ta_, .trans_b = tb_, .alpha = &alpha,
                           .beta = &beta, .flags = flags, .work = work.data(), .whole_rows = split.whole_rows,
                           .parts = split.parts};
    const Dim3 whole{tile_cols, split.parts == 0 ? tile_rows : static_cast<unsigned>(split.whole_rows), 1};
    if (whole.y > 0) emulation::launch_kernel(id_, "tuned", {m_, n_, k_}, args, &whole);
    if (split.parts > 0) {
      const std::string name = std::string(catalog::kInfo[index].name) + "_split";
      const emulation::Entry entry = emulation::find_kernel(name.c_str(), "tuned");
      EXPECT_NE(entry, nullptr) << name << " is not built for the CPU";
      if (entry == nullptr) return c;
      auto pointers = args.pointers();
      emulation::launch(entry, pointers.data(),
                        Dim3{tile_cols, static_cast<unsigned>((tile_rows - split.whole_rows) * split.parts), 1},
                        Dim3{shape.block_x, shape.block_y, 1});
      std::uint32_t left = 0;
      std::memcpy(&left, work.data(), 4);
      EXPECT_EQ(left, static_cast<std::uint32_t>(split.parts)) << name << ": the first tile's tickets";
    }
    return c;
  }

  std::string what(Split s) const {
    return catalog::kInfo[static_cast<std::size_t>(id_)].name.data() + std::string(" ") + std::to_string(m_) + "x" +
           std::to_string(n_) + "x" + std::to_string(k_) + " whole rows " + std::to_string(s.whole_rows) +
           ", parts " + std::to_string(s.parts);
  }

 private:
  catalog::KernelId id_ = kernel_id<S, T, Op::kGemm>();
  long long m_, n_, k_, lda_ = 0, ldb_ = 0;
  int ta_, tb_;
  std::vector<T> a_, b_;
};

// Two rows of tiles (the second one row deep), three k-tiles (the last one short where k allows).
template <class S, class T>
void expect_split_is_the_unsplit_product(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto id = kernel_id<S, T, Op::kGemm>();
  const auto& launch = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  ASSERT_GT(launch.tile_k, 0u);
  const long long m = launch.tile_m + 1, n = 5, k = 3 * launch.tile_k - 1;
  for (const int trans : {0, 1, 2}) {
    SplitProduct<S, T> p(m, n, k, trans % 2, 1 - trans % 2, trans == 2 && std::is_floating_point_v<T>, rng);
    const std::vector<T> c0 = random_matrix<S, T>(static_cast<std::size_t>(m * n), rng, true);
    const std::vector<T> ab = random_matrix<S, T>(2, rng, false);
    const detail::Scaling scaling = detail::scaling<S, T>(ab[0], ab[1]);
    const std::vector<T> plain = p.run({0, 0}, c0, T{}, T{}, 0);
    const std::vector<T> scaled = p.run({0, 0}, c0, ab[0], ab[1], scaling.flags);
    for (const Split s : {Split{0, 3}, Split{1, 2}, Split{1, 3}}) {
      const std::vector<T> c = p.run(s, c0, T{}, T{}, 0);
      expect_equal(c, plain, p.what(s));
      if constexpr (std::is_floating_point_v<T>) {
        std::size_t signs = 0;
        for (std::size_t i = 0; i < c.size(); ++i) signs += std::signbit(c[i]) != std::signbit(plain[i]);
        EXPECT_EQ(signs, 0u) << "the sign of a zero differs: " << p.what(s);
      }
    }
    expect_equal(p.run({1, 3}, c0, ab[0], ab[1], scaling.flags), scaled,
                 "alpha/beta (flags " + std::to_string(scaling.flags) + ") " + p.what({1, 3}));
  }
}

// Many parts: one row of tiles, nine k-tiles over eight parts (the last part's merge loop runs seven times),
// whole rows 0.
template <class S, class T>
void expect_many_parts_merge_in_k_order(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto& launch = catalog::kInfo[static_cast<std::size_t>(kernel_id<S, T, Op::kGemm>())].launch;
  const long long m = launch.tile_m - 3, n = 7, k = 9 * launch.tile_k - 2;
  // Plain random values (extremes would make most int16 maxima saturate, zeros most float ones tie), so that a
  // part left out or merged out of order changes C.
  SplitProduct<S, T> p(m, n, k, 0, 1, false, rng, false);
  const std::vector<T> c0 = random_matrix<S, T>(static_cast<std::size_t>(m * n), rng, true);
  const std::vector<T> plain = p.run({0, 0}, c0, T{}, T{}, 0);
  const std::vector<T> c = p.run({0, 8}, c0, T{}, T{}, 0);
  expect_equal(c, plain, p.what({0, 8}));
}

TEST(EmulatedSplit, eight_parts_merge_to_the_unsplit_product_bit_for_bit) {
  expect_many_parts_merge_in_k_order<MaxPlus, float>(51);
  expect_many_parts_merge_in_k_order<MinPlus, double>(52);
  expect_many_parts_merge_in_k_order<MaxPlus, std::int16_t>(53);
}

TEST(EmulatedSplit, parts_merge_to_the_unsplit_product_bit_for_bit) {
  expect_split_is_the_unsplit_product<MaxPlus, float>(41);
  expect_split_is_the_unsplit_product<MinPlus, double>(42);
  expect_split_is_the_unsplit_product<MaxPlus, std::int16_t>(43);
  expect_split_is_the_unsplit_product<AndOr, std::uint8_t>(44);
}

}  // namespace
}  // namespace tropical
