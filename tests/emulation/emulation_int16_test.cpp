// int16 MaxPlus and MinPlus on the CPU build of their fragments (tests/emulation/), both tiers, bit for bit
// the reference on the data that decides between a k-tile's DPX 16x2 path and its exact 32-bit path
// (templates/gemm_tile_i16x2.cuh.j2): values in +-2^13 (DPX throughout), the edges of the DPX range
// [-2^14, 2^14) and just past them, the full 16-bit range with lowest()/max() often, and k-tiles that
// alternate between the two paths within one product. tests/gpu/int16_test.cpp checks the same on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "launch_kernel.hpp"
#include "tropical/tropical.hpp"

namespace tropical {
namespace {

using I16 = std::int16_t;
constexpr int kLow = std::numeric_limits<I16>::lowest(), kHigh = std::numeric_limits<I16>::max();

enum class Data { kSmall, kEdge, kFull, kAlternate, kOddLarge };

/// Element at k-index k of an operand for data d (kAlternate: small for even k-tiles of 32, full for odd;
/// kOddLarge: small but lowest() or max() at k = 17 of each k-tile of 32, the high half of a word of A).
I16 value(Data d, std::int64_t k, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> small(-(1 << 13), (1 << 13) - 1), edge(0, 7), any(kLow, kHigh), pick(0, 15);
  if (d == Data::kAlternate) d = (k / 32) % 2 == 0 ? Data::kSmall : Data::kFull;
  if (d == Data::kOddLarge) return k % 32 == 17 ? (pick(rng) % 2 ? kHigh : kLow) : static_cast<I16>(small(rng));
  switch (d) {
    case Data::kSmall: return static_cast<I16>(small(rng));
    case Data::kEdge: {
      const int e[] = {-(1 << 14), -(1 << 14) + 1, (1 << 14) - 1, (1 << 14) - 2, 1 << 14, -(1 << 14) - 1, 0, -1};
      return static_cast<I16>(e[edge(rng)]);
    }
    default: {
      const int p = pick(rng);
      return static_cast<I16>(p == 0 ? kLow : p == 1 ? kHigh : p == 2 ? kLow + 1 : p == 3 ? kHigh - 1 : any(rng));
    }
  }
}

template <class S>
void check(std::int64_t m_, std::int64_t n_, std::int64_t k_, Data d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  long long m = m_, n = n_, k = k_, lda = k + 8, ldb = n + 8, ldc = n + 3;
  std::vector<I16> a(static_cast<std::size_t>(m * lda), I16(7)), b(static_cast<std::size_t>(k * ldb), I16(7));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < k; ++c) a[static_cast<std::size_t>(r * lda + c)] = value(d, c, rng);
  }
  for (std::int64_t r = 0; r < k; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      b[static_cast<std::size_t>(r * ldb + c)] = value(d == Data::kOddLarge ? Data::kSmall : d, r, rng);
    }
  }
  std::vector<I16> want(static_cast<std::size_t>(m * ldc), I16(3));
  reference::gemm<S, I16>(Trans::kNo, Trans::kNo, m, n, k, a.data(), lda, b.data(), ldb, want.data(), ldc);
  const auto id = kernel_id<S, I16, Op::kGemm>();
  const std::string name(catalog::kInfo[static_cast<std::size_t>(id)].name);
  const I16 alpha = 0, beta = 0;
  for (const char* tier : {"tuned", "quick"}) {
    std::vector<I16> c(want.size(), I16(3));
    catalog::GemmArgs args{.a = a.data(), .b = b.data(), .c = c.data(), .m = m, .n = n, .kk = k, .lda = lda,
                           .ldb = ldb, .ldc = ldc, .trans_a = 0, .trans_b = 0, .alpha = &alpha, .beta = &beta,
                           .flags = 0, .work = nullptr, .whole_rows = 0, .parts = 0};
    emulation::launch_kernel(id, tier, {m, n, k}, args);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i] != want[i] && bad++ < 5) {
        ADD_FAILURE() << name << " " << tier << " data " << static_cast<int>(d) << " " << m << "x" << n << "x" << k
                      << ": element " << i << " is " << c[i] << ", want " << want[i];
      }
    }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(EmulatedInt16, products_equal_the_reference_on_every_kind_of_data) {
  std::uint64_t seed = 1;
  for (const Data d : {Data::kSmall, Data::kEdge, Data::kFull, Data::kAlternate, Data::kOddLarge}) {
    // 128 x 136 x 96: leading dimensions of whole vectors, so whole k-tiles take the vector path.
    for (const auto& [m, n, k] :
         {std::array<std::int64_t, 3>{1, 1, 1}, {129, 65, 129}, {70, 130, 100}, {128, 136, 96}}) {
      check<MaxPlus>(m, n, k, d, seed++);
      check<MinPlus>(m, n, k, d, seed++);
    }
  }
}

}  // namespace
}  // namespace tropical
