// Einsum plans on a real GPU (src/einsum/device.cpp, device_counting.cpp): the device run gives the host run's
// bits on random small networks (every feature, greedy and sliced), on an independent-set network of a random
// 3-regular graph (bond dimension 2, hundreds of steps) with and without slicing, with a workspace of the
// caller's or none, and captured in a CUDA graph; CountingTropical runs likewise; a run that would wait or
// allocate is refused under stream capture, leaving the capture intact; a leaf reduction and a slice merge of
// more rows than a grid has row tiles run (as one row).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../einsum/random_networks.hpp"
#include "einsum_device.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;

class GpuEinsum : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    einsum_test::use_temporary_cache("tropical-einsum");
  }
};

using einsum_test::DeviceOperands;

template <class S, class T>
std::vector<T> on_host(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands) {
  std::vector<const T*> pointers;
  for (const auto& x : operands) pointers.push_back(x.data());
  std::vector<T> out(plan.output_size());
  einsum_host<S, T>(plan, pointers, out.data());
  return out;
}

/// The device run (workspace: the caller's when given_workspace, else the library's).
template <class S, class T>
std::vector<T> on_device(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands,
                         bool given_workspace) {
  DeviceOperands<T> d(operands);
  DeviceBuffer<T> out(plan.output_size());
  if (given_workspace) {
    DeviceBuffer<std::byte> ws(plan.workspace_bytes(sizeof(T)));
    einsum<S, T>(plan, d.pointers, out.get(), ws.get());
    return out.download(plan.output_size());
  }
  einsum<S, T>(plan, d.pointers, out.get());
  return out.download(plan.output_size());
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class S, class T>
void random_networks_match(unsigned seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<S, T>(net, rng);
    for (std::int64_t limit : {0, 2}) {
      try {
        const EinsumPlan plan(net.inputs, net.output, net.shapes(), {{}, limit});
        const auto want = on_host<S, T>(plan, operands);
        EXPECT_TRUE(same_bits(on_device<S, T>(plan, operands, trial % 2 == 0), want)) << "limit " << limit;
      } catch (const InvalidArgument&) {
        // the limit cannot be met
      }
    }
  }
}

TEST_F(GpuEinsum, random_networks_give_the_host_bits) {
  random_networks_match<MaxPlus, float>(1);
  random_networks_match<MinPlus, double>(2);
  random_networks_match<MaxMul, float>(3);
  random_networks_match<MaxMin, double>(4);
  random_networks_match<MaxPlus, std::int32_t>(5);
  random_networks_match<AndOr, std::uint8_t>(6);
}

/// The independent-set network of a random 3-regular graph on n vertices: a vector (0, 1) per vertex, the
/// matrix (0, 0; 0, -inf) per edge, scalar output (the size of the largest independent set).
struct IndependentSet {
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<float>> operands;
};

IndependentSet independent_set(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::set<std::pair<int, int>> edges;
  while (true) {
    edges.clear();
    std::vector<int> stubs;
    for (int v = 0; v < n; ++v) stubs.insert(stubs.end(), 3, v);
    std::shuffle(stubs.begin(), stubs.end(), rng);
    bool ok = true;
    for (std::size_t i = 0; ok && i < stubs.size(); i += 2) {
      const int a = std::min(stubs[i], stubs[i + 1]), b = std::max(stubs[i], stubs[i + 1]);
      ok = a != b && edges.insert({a, b}).second;
    }
    if (ok) break;
  }
  IndependentSet g;
  for (int v = 0; v < n; ++v) {
    g.inputs.push_back({v});
    g.shapes.push_back({2});
    g.operands.push_back({0.0f, 1.0f});
  }
  for (const auto& [a, b] : edges) {
    g.inputs.push_back({a, b});
    g.shapes.push_back({2, 2});
    g.operands.push_back({0.0f, 0.0f, 0.0f, -INFINITY});
  }
  return g;
}

TEST_F(GpuEinsum, independent_set_network_gives_the_host_bits_sliced_or_not) {
  const IndependentSet g = independent_set(60, 7);
  for (std::int64_t limit : {0, 1 << 6}) {
    const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, limit});
    const auto want = on_host<MaxPlus, float>(plan, g.operands);
    EXPECT_TRUE(same_bits(on_device<MaxPlus, float>(plan, g.operands, true), want)) << "limit " << limit;
    EXPECT_TRUE(same_bits(on_device<MaxPlus, float>(plan, g.operands, false), want)) << "limit " << limit;
  }
}

TEST_F(GpuEinsum, a_run_captured_in_a_cuda_graph_replays_it) {
  const IndependentSet g = independent_set(40, 8);
  const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, 1 << 5});
  const auto want = on_host<MaxPlus, float>(plan, g.operands);
  DeviceOperands<float> d(g.operands);
  DeviceBuffer<float> out(1);
  DeviceBuffer<std::byte> ws(plan.workspace_bytes(sizeof(float)));
  einsum<MaxPlus, float>(plan, d.pointers, out.get(), ws.get());  // resolves every kernel before the capture
  const auto& api = drv::api();
  drv::ScopedContext context(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  einsum<MaxPlus, float>(plan, d.pointers, out.get(), ws.get(), stream);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  const float poison = 12345.0f;
  out.upload({poison});
  ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_TRUE(same_bits(out.download(1), want));
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

/// (values, assignment) of the argmax run on the host and on the device.
template <class S, class T>
void argmax_matches(const EinsumPlan& plan, const std::vector<std::vector<T>>& operands) {
  std::vector<const T*> pointers;
  for (const auto& x : operands) pointers.push_back(x.data());
  const std::size_t rows = plan.reduced_labels().size();
  std::vector<T> want(plan.output_size());
  std::vector<std::int64_t> want_assign(rows * plan.output_size());
  einsum_argmax_host<S, T>(plan, pointers, want.data(), want_assign.data());
  DeviceOperands<T> d(operands);
  DeviceBuffer<T> out(plan.output_size());
  std::vector<std::int64_t> assign(rows * plan.output_size(), -7);
  einsum_argmax<S, T>(plan, d.pointers, out.get(), assign.data());
  EXPECT_TRUE(same_bits(out.download(plan.output_size()), want));
  EXPECT_EQ(assign, want_assign);
}

TEST_F(GpuEinsum, argmax_gives_the_host_values_and_assignment) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 60; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const auto operands = einsum_test::random_operands<MaxPlus, float>(net, rng);
    for (std::int64_t limit : {0, 2}) {
      try {
        argmax_matches<MaxPlus, float>(EinsumPlan(net.inputs, net.output, net.shapes(), {{}, limit}),
                                       operands);
      } catch (const InvalidArgument&) {
        // the limit cannot be met
      }
    }
  }
  const IndependentSet g = independent_set(60, 10);
  for (std::int64_t limit : {0, 1 << 6}) {
    argmax_matches<MaxPlus, float>(EinsumPlan(g.inputs, {}, g.shapes, {{}, limit}), g.operands);
  }
}

using einsum_test::Pairs;
using einsum_test::random_pairs;

template <class T>
std::pair<std::vector<T>, std::vector<T>> counting_on_host(const EinsumPlan& plan, const Pairs<T>& p) {
  std::vector<const T*> v, c;
  for (std::size_t i = 0; i < p.values.size(); ++i) {
    v.push_back(p.values[i].data());
    c.push_back(p.counts[i].data());
  }
  std::vector<T> values(plan.output_size()), counts(plan.output_size());
  einsum_counting_host<T>(plan, v, c, values.data(), counts.data());
  return {values, counts};
}

/// The device counting run (workspace: the caller's when given_workspace, else the library's).
template <class T>
std::pair<std::vector<T>, std::vector<T>> counting_on_device(const EinsumPlan& plan, const Pairs<T>& p,
                                                             bool given_workspace) {
  DeviceOperands<T> v(p.values), c(p.counts);
  DeviceBuffer<T> values(plan.output_size()), counts(plan.output_size());
  std::unique_ptr<DeviceBuffer<std::byte>> ws;
  if (given_workspace) ws = std::make_unique<DeviceBuffer<std::byte>>(plan.counting_workspace_bytes(sizeof(T)));
  einsum_counting<T>(plan, v.pointers, c.pointers, values.get(), counts.get(), ws ? ws->get() : nullptr);
  return {values.download(plan.output_size()), counts.download(plan.output_size())};
}

template <class T>
void counting_matches(const EinsumPlan& plan, const Pairs<T>& p, bool given_workspace) {
  const auto [want_v, want_c] = counting_on_host(plan, p);
  const auto [v, c] = counting_on_device(plan, p, given_workspace);
  EXPECT_TRUE(same_bits(v, want_v)) << "values; slices " << plan.info().slices;
  EXPECT_TRUE(same_bits(c, want_c)) << "counts; slices " << plan.info().slices;
}

template <class T>
void random_networks_count_as_the_host(unsigned seed) {
  std::mt19937 rng(seed);
  int sliced = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const einsum_test::Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const Pairs<T> p = random_pairs<T>(net, rng);
    for (std::int64_t limit : {0, 1, 2}) {  // 1 slices every label it can
      try {
        const EinsumPlan plan(net.inputs, net.output, net.shapes(), {{}, limit});
        sliced += plan.info().slices > 1;
        counting_matches<T>(plan, p, trial % 2 == 0);
      } catch (const InvalidArgument&) {
        // the limit cannot be met
      }
    }
  }
  EXPECT_GT(sliced, 10);
}

TEST_F(GpuEinsum, counting_gives_the_host_bits_sliced_or_not) {
  random_networks_count_as_the_host<float>(11);
  random_networks_count_as_the_host<double>(12);
}

/// The independent-set network of g with every count 1: the size of the largest independent set and how many
/// sets reach it.
template <class T>
Pairs<T> counting_independent_set(const IndependentSet& g) {
  Pairs<T> p;
  for (const auto& x : g.operands) {
    p.values.emplace_back(x.begin(), x.end());
    p.counts.emplace_back(x.size(), T(1));
  }
  return p;
}

TEST_F(GpuEinsum, independent_set_counting_gives_the_host_bits_sliced_or_not) {
  const IndependentSet g = independent_set(60, 13);
  for (std::int64_t limit : {0, 1 << 6}) {
    const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, limit});
    counting_matches<float>(plan, counting_independent_set<float>(g), true);
    counting_matches<double>(plan, counting_independent_set<double>(g), false);
  }
}

TEST_F(GpuEinsum, a_counting_run_captured_in_a_cuda_graph_replays_it) {
  const IndependentSet g = independent_set(40, 14);
  const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, 1 << 5});
  ASSERT_GT(plan.info().slices, 1);
  const Pairs<double> p = counting_independent_set<double>(g);
  const auto [want_v, want_c] = counting_on_host(plan, p);
  DeviceOperands<double> v(p.values), c(p.counts);
  DeviceBuffer<double> values(1), counts(1);
  DeviceBuffer<std::byte> ws(plan.counting_workspace_bytes(sizeof(double)));
  // Resolves every kernel before the capture.
  einsum_counting<double>(plan, v.pointers, c.pointers, values.get(), counts.get(), ws.get());
  const auto& api = drv::api();
  drv::ScopedContext context(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  einsum_counting<double>(plan, v.pointers, c.pointers, values.get(), counts.get(), ws.get(), stream);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  values.upload({12345.0});
  counts.upload({-1.0});
  ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_TRUE(same_bits(values.download(1), want_v));
  EXPECT_TRUE(same_bits(counts.download(1), want_c));
  EXPECT_GT(want_c[0], 0.0);
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

/// The message of the InvalidArgument that f throws ("" if none).
std::string invalid_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST_F(GpuEinsum, runs_that_would_wait_or_allocate_are_refused_under_capture_and_leave_it_intact) {
  const IndependentSet g = independent_set(40, 15);
  const EinsumPlan plan(g.inputs, {}, g.shapes, {{}, 1 << 5});
  ASSERT_GT(plan.workspace_bytes(sizeof(float)), 0u);
  DeviceOperands<float> d(g.operands);
  const Pairs<float> p = counting_independent_set<float>(g);
  DeviceOperands<float> v(p.values), c(p.counts);
  DeviceBuffer<float> out(1), counts(1);
  DeviceBuffer<std::byte> ws(plan.argmax_workspace_bytes(sizeof(float)));
  std::vector<std::int64_t> assignment(plan.reduced_labels().size());
  einsum<MaxPlus, float>(plan, d.pointers, out.get(), ws.get());  // resolves the kernels before the capture
  const auto& api = drv::api();
  drv::ScopedContext context(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const auto refused = [](const std::string& message) {
    return message.find("being captured into a CUDA graph") != std::string::npos;
  };
  EXPECT_PRED1(refused, invalid_message([&] { einsum<MaxPlus, float>(plan, d.pointers, out.get(), nullptr, stream); }));
  EXPECT_PRED1(refused, invalid_message([&] {
                 einsum_argmax<MaxPlus, float>(plan, d.pointers, out.get(), assignment.data(), ws.get(), stream);
               }));
  EXPECT_PRED1(refused, invalid_message([&] {
                 einsum_counting<float>(plan, v.pointers, c.pointers, out.get(), counts.get(), nullptr, stream);
               }));
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(api.cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "a refused run broke the capture";
  // A run with a workspace is captured as before, in the same capture.
  einsum<MaxPlus, float>(plan, d.pointers, out.get(), ws.get(), stream);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

TEST_F(GpuEinsum, a_leaf_reduction_and_a_slice_merge_past_the_grid_s_row_tiles_run) {
  // 9e6 rows: past 65535 row tiles of up to 128 rows, which a product of that many rows and one column needs.
  const std::int64_t rows = 9'000'000;
  std::mt19937 rng(16);
  const auto draw = [&](std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& e : x) e = static_cast<float>(rng() % 5);
    return x;
  };
  // ij->i: j reduced inside the one operand.
  const EinsumPlan leaf("ij->i", {{rows, 2}});
  const std::vector<std::vector<float>> one = {draw(rows * 2)};
  EXPECT_TRUE(same_bits(on_device<MaxPlus, float>(leaf, one, true), on_host<MaxPlus, float>(leaf, one)));
  // ij,jk,ik->i under a limit of the output's size: k sliced, each slice's i merged into the output.
  const EinsumPlan sliced("ij,jk,ik->i", {{rows, 2}, {2, 2}, {rows, 2}}, {{}, rows});
  ASSERT_GT(sliced.info().slices, 1);
  const std::vector<std::vector<float>> three = {draw(rows * 2), draw(4), draw(rows * 2)};
  EXPECT_TRUE(same_bits(on_device<MaxPlus, float>(sliced, three, true), on_host<MaxPlus, float>(sliced, three)));
  Pairs<float> p;
  p.values = three;
  for (const auto& x : three) p.counts.emplace_back(x.size(), 1.0f);
  counting_matches<float>(sliced, p, true);
  p.values = one;
  p.counts = {std::vector<float>(one[0].size(), 1.0f)};
  counting_matches<float>(leaf, p, false);
}

}  // namespace
}  // namespace tropical
