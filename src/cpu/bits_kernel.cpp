// The packed boolean product's register tile, compiled once per instruction set
// by Highway's foreach_target (this file includes itself once per target); the
// run-time choice is the other microkernels' (chosen_target_index()).
#include <cstdint>

#include "bits_kernel.hpp"
#include "kernel.hpp"

// The same target list as microkernel.cpp: the dispatch tables are indexed by its choice.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SSSE3 | HWY_AVX3_DL | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/bits_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tropical::cpu::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kT = kBitsTile;

// "Any bit" tiles stop at the first block of k after which every element of the
// tile is true: reachability products are mostly dense rows, and the rest of k
// cannot change them.
constexpr std::int64_t kAnyBlock = 64;

void BitsTile(const std::uint64_t* a, const std::uint64_t* b, std::int64_t stride, std::int64_t words,
              bool count, std::int64_t* out) {
  const hn::ScalableTag<std::uint64_t> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  using V = hn::Vec<decltype(d)>;
  V acc[kT][kT];
  for (int r = 0; r < kT; ++r) {
    for (int c = 0; c < kT; ++c) acc[r][c] = hn::Zero(d);
  }
  if (count) {
    for (std::int64_t p = 0; p < words; p += lanes) {
      V bv[kT];
      for (int c = 0; c < kT; ++c) bv[c] = hn::Load(d, b + c * stride + p);
      for (int r = 0; r < kT; ++r) {
        const V av = hn::Load(d, a + r * stride + p);
        for (int c = 0; c < kT; ++c) acc[r][c] = hn::Add(acc[r][c], hn::PopulationCount(hn::And(av, bv[c])));
      }
    }
    for (int r = 0; r < kT; ++r) {
      for (int c = 0; c < kT; ++c)
        out[r * kT + c] = static_cast<std::int64_t>(hn::GetLane(hn::SumOfLanes(d, acc[r][c])));
    }
    return;
  }
  const V zero = hn::Zero(d);
  for (std::int64_t block = 0; block < words; block += kAnyBlock) {
    const std::int64_t end = block + kAnyBlock < words ? block + kAnyBlock : words;
    for (std::int64_t p = block; p < end; p += lanes) {
      V bv[kT];
      for (int c = 0; c < kT; ++c) bv[c] = hn::Load(d, b + c * stride + p);
      for (int r = 0; r < kT; ++r) {
        const V av = hn::Load(d, a + r * stride + p);
        for (int c = 0; c < kT; ++c) acc[r][c] = hn::Or(acc[r][c], hn::And(av, bv[c]));
      }
    }
    bool all = true;
    for (int r = 0; r < kT && all; ++r) {
      for (int c = 0; c < kT && all; ++c) all = !hn::AllTrue(d, hn::Eq(acc[r][c], zero));
    }
    if (all) break;
  }
  for (int r = 0; r < kT; ++r) {
    for (int c = 0; c < kT; ++c) out[r * kT + c] = hn::AllTrue(d, hn::Eq(acc[r][c], zero)) ? 0 : 1;
  }
}

}  // namespace tropical::cpu::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tropical::cpu::detail {

HWY_EXPORT(BitsTile);

BitsTileFn bits_tile() { return HWY_DISPATCH_TABLE(BitsTile)[chosen_target_index()]; }

}  // namespace tropical::cpu::detail
#endif  // HWY_ONCE
