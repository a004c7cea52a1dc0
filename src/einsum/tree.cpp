#include "tree.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "tropical/error.hpp"

namespace tropical::einsum_detail {

Problem::Problem(std::vector<Mask> leaves_, Mask output_, std::vector<double> log2_sizes_)
    : leaves(std::move(leaves_)), output(std::move(output_)), log2_sizes(std::move(log2_sizes_)) {
  const std::set<double> distinct(log2_sizes.begin(), log2_sizes.end());
  if (distinct.size() == 1) uniform = *distinct.begin();
}

double Problem::log2_size(const Mask& mask) const {
  if (uniform) return *uniform * mask.count();
  double total = 0.0;
  for (int i : mask.bits()) total += log2_sizes[i];
  return total;
}

Problem Problem::without(const Mask& sliced) const {
  std::vector<double> sizes = log2_sizes;
  for (int i : sliced.bits()) sizes[i] = 0.0;
  return Problem(leaves, output, std::move(sizes));
}

Problem problem_of(const Network& net) {
  const int labels = static_cast<int>(net.labels.size());
  std::vector<Mask> leaves;
  for (const auto& term : net.inputs) {
    Mask mask(labels);
    for (int label : term) mask.set(label);
    leaves.push_back(std::move(mask));
  }
  Mask output(labels);
  for (int label : net.output) output.set(label);
  std::vector<double> sizes;
  for (std::int64_t s : net.sizes) sizes.push_back(std::log2(static_cast<double>(s)));
  return Problem(std::move(leaves), std::move(output), std::move(sizes));
}

std::vector<Mask> Tree::outputs(const Problem& problem) const {
  const int n = count;
  const std::size_t total = n + children.size();
  std::vector<Mask> full(problem.leaves);
  full.resize(total, Mask(problem.labels()));
  for (std::size_t i = 0; i < children.size(); ++i)
    full[n + i] = full[children[i].first] | full[children[i].second];
  std::vector<Mask> need(total, Mask(problem.labels()));
  need.back() = problem.output;
  for (std::size_t i = children.size(); i-- > 0;) {
    const auto [a, b] = children[i];
    need[a] = need[n + i] | full[b];
    need[b] = need[n + i] | full[a];
  }
  if (children.empty()) need[0] = problem.output;
  for (std::size_t i = 0; i < total; ++i) full[i] &= need[i];
  return full;
}

Cost Tree::cost(const Problem& problem) const {
  const std::vector<Mask> outs = outputs(problem);
  double total = 0.0, space = 0.0, largest = 0.0;
  for (int leaf = 0; leaf < count; ++leaf) {
    if (outs[leaf] != problem.leaves[leaf]) {
      total += std::pow(2.0, problem.log2_size(problem.leaves[leaf]));
      space = std::max(space, problem.log2_size(outs[leaf]));
    }
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    total += std::pow(2.0, problem.log2_size(outs[children[i].first] | outs[children[i].second]));
    largest = std::max(largest, problem.log2_size(outs[count + i]));
  }
  space = std::max(space, largest);
  return {total > 0 ? std::log2(total) : 0.0, space, largest};
}

Tree from_path(const std::vector<std::vector<int>>& path, int count) {
  std::vector<int> remaining;
  for (int i = 0; i < count; ++i) remaining.push_back(i);
  Tree tree{count, {}};
  for (std::size_t number = 0; number < path.size(); ++number) {
    const auto& step = path[number];
    const std::string where = "step " + std::to_string(number) + " of the path";
    if (step.empty()) throw InvalidArgument("tropical: " + where + " is empty");
    std::vector<int> sorted(step);
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() || sorted.front() < 0 ||
        sorted.back() >= static_cast<int>(remaining.size())) {
      std::string shown = "(";
      for (std::size_t i = 0; i < step.size(); ++i) shown += (i ? ", " : "") + std::to_string(step[i]);
      throw InvalidArgument("tropical: " + where + ", " + shown + (step.size() == 1 ? ",)" : ")") +
                            ", names positions outside the " + std::to_string(remaining.size()) +
                            " remaining operands or one twice");
    }
    std::vector<int> nodes;
    for (int i : step) nodes.push_back(remaining[i]);
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) remaining.erase(remaining.begin() + *it);
    int node = nodes[0];
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      tree.children.emplace_back(node, nodes[i]);
      node = count + static_cast<int>(tree.children.size()) - 1;
    }
    remaining.push_back(node);
  }
  if (remaining.size() != 1) {
    throw InvalidArgument(
        "tropical: the path does not cover the operands: " + std::to_string(remaining.size()) +
        " operands remain after its " + std::to_string(path.size()) + " step(s) (a path for " +
        std::to_string(count) + " operands contracts them into one)");
  }
  return tree;
}

std::vector<std::vector<int>> to_path(const Tree& tree) {
  if (tree.children.empty()) return {{0}};
  std::vector<int> remaining;
  for (int i = 0; i < tree.count; ++i) remaining.push_back(i);
  std::vector<std::vector<int>> path;
  for (std::size_t i = 0; i < tree.children.size(); ++i) {
    const auto [a, b] = tree.children[i];
    const int pa = static_cast<int>(std::find(remaining.begin(), remaining.end(), a) - remaining.begin());
    const int pb = static_cast<int>(std::find(remaining.begin(), remaining.end(), b) - remaining.begin());
    path.push_back({std::min(pa, pb), std::max(pa, pb)});
    remaining.erase(remaining.begin() + std::max(pa, pb));
    remaining.erase(remaining.begin() + std::min(pa, pb));
    remaining.push_back(tree.count + static_cast<int>(i));
  }
  return path;
}

}  // namespace tropical::einsum_detail
