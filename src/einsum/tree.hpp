#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "mask.hpp"
#include "network.hpp"

namespace tropical::einsum_detail {

/// A network as the planners see it: a label mask per operand, the output's mask and the log2 extent of
/// every label (python/tropical/_einsum_tree.py's Problem, with the same floating-point sums).
struct Problem {
  std::vector<Mask> leaves;
  Mask output;
  std::vector<double> log2_sizes;
  std::optional<double> uniform;  ///< the one log2 extent when all labels share it

  Problem(std::vector<Mask> leaves_, Mask output_, std::vector<double> log2_sizes_);
  /// log2 of the element count of a tensor with the labels of mask.
  double log2_size(const Mask& mask) const;
  /// The same problem with the labels of `sliced` fixed to one index (extent 1).
  Problem without(const Mask& sliced) const;
  int labels() const { return static_cast<int>(log2_sizes.size()); }
};

/// The Problem of a network (label index i is bit i).
Problem problem_of(const Network& net);

/// (log2 time, log2 space, log2 size of the largest intermediate) of a tree; see Tree::cost.
struct Cost {
  double log2_time, log2_space, largest;
};

/// A binary contraction tree: children[i] = (left, right) of node count + i, every child before its parent.
struct Tree {
  int count = 0;
  std::vector<std::pair<int, int>> children;

  int root() const { return count + static_cast<int>(children.size()) - 1; }
  /// The kept-label mask of every node (leaves first): the labels of its subtree that the output or an
  /// operand outside it still needs.
  std::vector<Mask> outputs(const Problem& problem) const;
  /// Every pairwise product's multiply-adds and every reduction inside one operand (time), the largest
  /// tensor made (space), the largest intermediate.
  Cost cost(const Problem& problem) const;
};

/// The Tree of an opt_einsum-format path for `count` operands; throws InvalidArgument for an empty step, a
/// position outside the remaining operands or named twice, or a path that leaves more than one operand.
Tree from_path(const std::vector<std::vector<int>>& path, int count);

/// The opt_einsum-format path (pairs) of a tree; [[0]] for one operand.
std::vector<std::vector<int>> to_path(const Tree& tree);

/// The greedy order (python/tropical/_einsum_greedy.py without randomness, alpha 1: the same tree).
Tree greedy(const Problem& problem);

/// The labels to slice so that every tensor the tree makes has at most memory_limit elements (0: none);
/// throws InvalidArgument when only output labels are left to slice (python/tropical/_einsum_slicing.py).
Mask choose_slices(const Problem& problem, const Tree& tree, std::int64_t memory_limit);

}  // namespace tropical::einsum_detail
