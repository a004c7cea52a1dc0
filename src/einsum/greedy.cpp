// The greedy order, ported from python/tropical/_einsum_greedy.py (without its randomness) step for step,
// with the same floating-point costs and tie order, so that both planners give one tree for one network.

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>
#include <tuple>
#include <vector>

#include "tree.hpp"

namespace tropical::einsum_detail {

Tree greedy(const Problem& problem) {
  const int n = static_cast<int>(problem.leaves.size());
  if (n == 1) return Tree{1, {}};
  const int labels = problem.labels();
  const Mask& output = problem.output;
  const auto size = [&](const Mask& mask) { return std::pow(2.0, problem.log2_size(mask)); };
  std::vector<int> count(labels, 0);
  for (const Mask& mask : problem.leaves) {
    for (int bit : mask.bits()) ++count[bit];
  }
  // multi2/multi3: the labels held by at least two/three remaining tensors; a pair keeps the labels that
  // someone else (or the output) still holds.
  Mask multi2(labels), multi3(labels);
  for (int bit = 0; bit < labels; ++bit) {
    if (count[bit] >= 2) multi2.set(bit);
    if (count[bit] >= 3) multi3.set(bit);
  }
  std::vector<Mask> outs;
  std::vector<double> sizes;
  std::vector<std::set<int>> holders(labels);
  // Each tensor keeps only the labels shared with another tensor or the output (a private label is reduced
  // inside its operand first).
  for (int i = 0; i < n; ++i) {
    outs.push_back(problem.leaves[i] & (multi2 | output));
    for (int bit : outs[i].bits()) holders[bit].insert(i);
  }
  for (int i = 0; i < n; ++i) {
    for (int bit : without(problem.leaves[i], outs[i]).bits()) --count[bit];
  }
  for (int i = 0; i < n; ++i) sizes.push_back(size(outs[i]));
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  const auto result = [&](int a, int b) {
    const Mask& oa = outs[a];
    const Mask& ob = outs[b];
    return ((oa ^ ob) & (multi2 | output)) | ((oa & ob) & (multi3 | output));
  };
  const auto push = [&](int a, int b) {
    const double cost = size(result(a, b)) - (sizes[a] + sizes[b]);
    heap.emplace(cost, std::min(a, b), std::max(a, b));
  };
  for (int bit = 0; bit < labels; ++bit) {
    const std::vector<int> members(holders[bit].begin(), holders[bit].end());
    for (std::size_t x = 0; x < members.size(); ++x) {
      for (std::size_t y = x + 1; y < members.size(); ++y) push(members[x], members[y]);
    }
  }
  Tree tree{n, {}};
  std::set<int> alive;
  for (int i = 0; i < n; ++i) alive.insert(i);
  std::set<std::pair<int, int>> seen_pairs;
  while (alive.size() > 1) {
    int a = -1, b = -1;
    while (!heap.empty()) {
      const auto [cost, x, y] = heap.top();
      heap.pop();
      if (alive.contains(x) && alive.contains(y) && !seen_pairs.contains({x, y})) {
        a = x;
        b = y;
        break;
      }
    }
    if (a < 0) {  // no pair shares a label: join the two smallest
      std::vector<int> order(alive.begin(), alive.end());
      std::sort(order.begin(), order.end(),
                [&](int s, int t) { return std::tie(sizes[s], s) < std::tie(sizes[t], t); });
      a = order[0];
      b = order[1];
    }
    seen_pairs.insert({a, b});
    const int fresh = n + static_cast<int>(tree.children.size());
    Mask out = result(a, b);
    tree.children.emplace_back(a, b);
    for (int t : {a, b}) {
      alive.erase(t);
      for (int bit : outs[t].bits()) {
        holders[bit].erase(t);
        --count[bit];
      }
    }
    for (int bit : out.bits()) {
      holders[bit].insert(fresh);
      ++count[bit];
    }
    for (int bit : (outs[a] | outs[b]).bits()) {
      if (count[bit] >= 2)
        multi2.set(bit);
      else
        multi2.reset(bit);
      if (count[bit] >= 3)
        multi3.set(bit);
      else
        multi3.reset(bit);
    }
    sizes.push_back(size(out));
    outs.push_back(std::move(out));
    alive.insert(fresh);
    std::set<int> neighbours;
    for (int bit : outs[fresh].bits()) neighbours.insert(holders[bit].begin(), holders[bit].end());
    neighbours.erase(fresh);
    for (int d : neighbours) push(d, fresh);
  }
  return tree;
}

}  // namespace tropical::einsum_detail
