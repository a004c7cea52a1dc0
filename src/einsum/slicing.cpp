// Slicing, ported from python/tropical/_einsum_slicing.py with the same scores and tie order: repeatedly
// slice the label held by the most oversized tensors (ties: the largest of them, then the smallest index).
// Only labels reduced away are sliced: an output label would split the output instead of merging it.

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "tree.hpp"
#include "tropical/error.hpp"

namespace tropical::einsum_detail {

Mask choose_slices(const Problem& problem, const Tree& tree, std::int64_t memory_limit) {
  Mask sliced(problem.labels());
  if (memory_limit == 0) return sliced;
  if (memory_limit < 1) {
    throw InvalidArgument("tropical: memory_limit is " + std::to_string(memory_limit) +
                          "; it counts elements and must be at least 1");
  }
  const double limit = std::log2(static_cast<double>(memory_limit));
  const int n = tree.count;
  while (true) {
    const Problem current = problem.without(sliced);
    const std::vector<Mask> outs = tree.outputs(current);
    std::vector<Mask> over;
    for (std::size_t node = 0; node < outs.size(); ++node) {
      const bool made = static_cast<int>(node) >= n || outs[node] != problem.leaves[node];
      if (made && current.log2_size(outs[node]) > limit + 1e-9) over.push_back(outs[node]);
    }
    if (over.empty()) return sliced;
    std::map<int, std::pair<int, double>> scores;  // label -> (oversized tensors holding it, the largest)
    double worst = 0.0;
    for (const Mask& mask : over) {
      const double weight = current.log2_size(mask);
      worst = std::max(worst, weight);
      for (int bit : without(without(mask, problem.output), sliced).bits()) {
        auto& [count, largest] = scores[bit];
        ++count;
        largest = std::max(largest, weight);
      }
    }
    if (scores.empty()) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.1f", worst);
      throw InvalidArgument("tropical: memory_limit " + std::to_string(memory_limit) +
                            " is too small: a tensor of 2^" + shown +
                            " elements holds only output labels, which are not sliced");
    }
    int best = -1;
    for (const auto& [bit, score] : scores) {
      if (best < 0 || score > scores[best]) best = bit;  // increasing bits: a tie keeps the smaller
    }
    sliced.set(best);
  }
}

}  // namespace tropical::einsum_detail
