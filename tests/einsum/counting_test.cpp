// CountingTropical plans on host arrays (src/einsum/counting.cpp): random small networks against a
// brute-force count over every assignment of the labels (the largest value of each output element and how
// many configurations reach it, counts multiplied along one), and sliced runs equal to unsliced ones bit for
// bit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "random_networks.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using einsum_test::Net;

using einsum_test::Pairs;
using einsum_test::random_pairs;

template <class T>
std::pair<std::vector<T>, std::vector<T>> brute_force(const Net& net, const Pairs<T>& p) {
  std::vector<int> labels;
  for (const auto& [label, size] : net.sizes) labels.push_back(label);
  std::int64_t out_size = 1;
  for (int label : net.output) out_size *= net.sizes.at(label);
  std::vector<T> best(out_size, -INFINITY), count(out_size, T(0));
  std::map<int, std::int64_t> at;
  for (int label : labels) at[label] = 0;
  while (true) {
    T v = 0, c = 1;
    for (std::size_t i = 0; i < net.inputs.size(); ++i) {
      std::int64_t offset = 0;
      for (int label : net.inputs[i]) offset = offset * net.sizes.at(label) + at[label];
      v += p.values[i][offset];
      c *= p.counts[i][offset];
    }
    std::int64_t o = 0;
    for (int label : net.output) o = o * net.sizes.at(label) + at[label];
    if (v > best[o]) {
      best[o] = v;
      count[o] = c;
    } else if (v == best[o]) {
      count[o] += c;
    }
    std::size_t d = labels.size();
    while (d > 0 && ++at[labels[d - 1]] == net.sizes.at(labels[d - 1])) at[labels[--d]] = 0;
    if (d == 0) break;
  }
  return {best, count};
}

template <class T>
std::pair<std::vector<T>, std::vector<T>> run(const EinsumPlan& plan, const Pairs<T>& p) {
  std::vector<const T*> v, c;
  for (std::size_t i = 0; i < p.values.size(); ++i) {
    v.push_back(p.values[i].data());
    c.push_back(p.counts[i].data());
  }
  std::vector<T> values(plan.output_size()), counts(plan.output_size());
  einsum_counting_host<T>(plan, v, c, values.data(), counts.data(), nullptr, 1);
  return {values, counts};
}

template <class T>
void random_networks_count_as_the_brute_force(unsigned seed) {
  std::mt19937 rng(seed);
  int sliced = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Net net = einsum_test::random_net(rng);
    SCOPED_TRACE(einsum_test::describe(net));
    const Pairs<T> p = random_pairs<T>(net, rng);
    const auto [want_v, want_c] = brute_force(net, p);
    const EinsumPlan plan(net.inputs, net.output, net.shapes());
    const auto [got_v, got_c] = run(plan, p);
    for (std::size_t o = 0; o < want_v.size(); ++o) {
      ASSERT_EQ(got_v[o], want_v[o]) << "element " << o;
      ASSERT_EQ(got_c[o], want_c[o]) << "element " << o;
    }
    for (std::int64_t limit : {1, 2, 4}) {
      try {
        const EinsumPlan s(net.inputs, net.output, net.shapes(), {plan.info().path, limit});
        sliced += s.info().slices > 1;
        const auto [v, c] = run(s, p);
        ASSERT_EQ(std::memcmp(v.data(), got_v.data(), v.size() * sizeof(T)), 0) << "limit " << limit;
        ASSERT_EQ(std::memcmp(c.data(), got_c.data(), c.size() * sizeof(T)), 0) << "limit " << limit;
      } catch (const InvalidArgument&) {
        // the limit cannot be met
      }
    }
  }
  EXPECT_GT(sliced, 100);
}

TEST(EinsumCounting, random_networks_count_as_the_brute_force_sliced_or_not_float) {
  random_networks_count_as_the_brute_force<float>(99);
}

TEST(EinsumCounting, random_networks_count_as_the_brute_force_sliced_or_not_double) {
  random_networks_count_as_the_brute_force<double>(100);
}

TEST(EinsumCounting, the_workspace_holds_values_counts_and_for_a_sliced_plan_the_device_merge) {
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 4}, {4, 5}, {5, 3}};
  const EinsumPlan whole("ij,jk,ki->i", shapes);
  ASSERT_EQ(whole.info().slices, 1);
  EXPECT_EQ(whole.counting_workspace_bytes(4), 2 * whole.workspace_bytes(4));
  const EinsumPlan sliced("ij,jk,ki->i", shapes, {whole.info().path, 4});
  ASSERT_GT(sliced.info().slices, 1);
  // Values and counts, then per array a row of two ones and a 2 x output matrix (3 elements of output).
  for (std::size_t eb : {4u, 8u}) {
    EXPECT_GE(sliced.counting_workspace_bytes(eb), 2 * sliced.workspace_bytes(eb) + 2 * (2 + 2 * 3) * eb);
  }
  // The host run works in it as in its own.
  std::vector<double> a(12, 1.0), b(20, 1.0), c(15, 1.0), ones(20, 1.0);
  const std::vector<const double*> values = {a.data(), b.data(), c.data()}, counts = {ones.data(), ones.data(),
                                                                                        ones.data()};
  std::vector<std::max_align_t> ws(sliced.counting_workspace_bytes(8) / sizeof(std::max_align_t) + 1);
  std::vector<double> v(3), n(3);
  einsum_counting_host<double>(sliced, values, counts, v.data(), n.data(), ws.data(), 1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(v[static_cast<std::size_t>(i)], 3.0);
    EXPECT_EQ(n[static_cast<std::size_t>(i)], 20.0);  // every j and k ties: 4 x 5 configurations
  }
}

}  // namespace
}  // namespace tropical
