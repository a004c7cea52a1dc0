// One runner's share of a sliced einsum plan on a real GPU (tropical::einsum_part, src/einsum/device.cpp): every
// part of 1 to 4 runners gives the CPU backend's part bit for bit (einsum_part_host), the parts merged with max are
// the whole run, a part holding no slice is the semiring zero, and a bad share is refused before anything runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "einsum_device.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

class GpuEinsumPart : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!jit::driver::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    einsum_test::use_temporary_cache("tropical-einsum-part");
  }
};

/// A ring of `n` binary labels with chords to the opposite vertex: vertex terms of 2, edge terms of 2 x 2, random
/// small integers (many ties), a scalar output.
struct Ring {
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<float>> operands;
};

Ring ring(int n, unsigned seed) {
  Ring r;
  std::mt19937 rng(seed);
  const auto value = [&] { return static_cast<float>(static_cast<int>(rng() % 5) - 2); };
  for (int v = 0; v < n; ++v) {
    r.inputs.push_back({v});
    r.shapes.push_back({2});
    r.operands.push_back({value(), value()});
    for (int w : {(v + 1) % n, (v + n / 2) % n}) {
      if (w == v || (w == (v + n / 2) % n && v >= n / 2)) continue;
      r.inputs.push_back({v, w});
      r.shapes.push_back({2, 2});
      r.operands.push_back({value(), value(), value(), value()});
    }
  }
  return r;
}

TEST_F(GpuEinsumPart, every_share_gives_the_host_share_and_the_shares_merge_to_the_whole_run) {
  const Ring g = ring(24, 3);
  const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, 4});  // intermediates of 4 elements: hundreds of slices
  ASSERT_GE(plan.info().slices, 4);
  std::vector<const float*> host;
  for (const auto& x : g.operands) host.push_back(x.data());
  float whole = 0;
  einsum_host<MaxPlus, float>(plan, host, &whole);
  einsum_test::DeviceOperands<float> d(g.operands);
  DeviceBuffer<float> out(1);
  DeviceBuffer<std::byte> ws(plan.workspace_bytes(sizeof(float)));
  const std::int64_t slices = plan.info().slices;
  for (std::int64_t parts : {1, 2, 3, 7}) {
    float merged = -INFINITY;
    for (std::int64_t part = 0; part < parts; ++part) {
      float want = 0;
      einsum_part_host<MaxPlus, float>(plan, host, &want, part, parts);
      einsum_part<MaxPlus, float>(plan, d.pointers, out.get(), part, parts, part % 2 == 0 ? ws.get() : nullptr);
      const float got = out.download(1)[0];
      EXPECT_EQ(std::memcmp(&got, &want, sizeof(float)), 0) << "part " << part << " of " << parts << ": " << got
                                                              << " vs " << want;
      merged = std::fmax(merged, got);
    }
    EXPECT_EQ(merged, whole) << parts << " parts";
  }
  // More runners than slices: the last holds none and gives the zero.
  einsum_part<MaxPlus, float>(plan, d.pointers, out.get(), slices, slices + 1, ws.get());
  EXPECT_EQ(out.download(1)[0], -INFINITY);
  EXPECT_THROW((einsum_part<MaxPlus, float>(plan, d.pointers, out.get(), 2, 2)), InvalidArgument);
  EXPECT_THROW((einsum_part<MaxPlus, float>(plan, d.pointers, out.get(), 0, 0)), InvalidArgument);
}

}  // namespace
}  // namespace tropical
