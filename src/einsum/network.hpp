#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tropical::einsum_detail {

/// A checked network with its labels renumbered 0..L-1 in order of first appearance (the planners' bit
/// order, as the Python planner's): inputs and output in those indices, the user's label of each index, its
/// extent, and the operands' shapes.
struct Network {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int> labels;
  std::vector<std::int64_t> sizes;
  std::vector<std::vector<std::int64_t>> shapes;
  bool letters = false;  ///< the labels are character codes (an equation's): messages show them as letters

  /// How messages name user label `label`.
  std::string name(int label) const;
};

/// The Network of user-labelled terms over operands of the given shapes; throws InvalidArgument naming the
/// operand or label at fault (as tropical.einsum's parser does).
Network make_network(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output,
                     const std::vector<std::vector<std::int64_t>>& shapes, bool letters);

/// The terms and output (character codes) of a numpy-notation equation for `count` operands; throws
/// InvalidArgument for a label that is not a letter, "...", two "->" or a wrong operand count.
void parse_equation(std::string_view equation, std::size_t count, std::vector<std::vector<int>>& inputs,
                    std::vector<int>& output);

}  // namespace tropical::einsum_detail
