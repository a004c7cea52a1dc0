#pragma once

// The argmax traceback (python/tropical/_einsum_trace.py's walk): from the root down, per output element,
// each reduction's argmax read at the indices of the labels its result keeps (assigned by its ancestors, the
// output or the slice) and unravelled into the labels it reduced; nothing is re-contracted.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "program.hpp"

namespace tropical::einsum_detail {

/// The traceback of one slice into `found` (rows: the labels not in the output; columns: output elements),
/// reading the argmax region through read(index) (the host's array, or the device's element by element).
template <class Read>
void trace_back(const detail::EinsumProgram& plan, Read&& read, const std::vector<std::int64_t>& index,
                std::int64_t* found) {
  const auto& net = plan.network;
  const auto& program = plan.program;
  const int labels = static_cast<int>(net.labels.size());
  std::vector<int> row(labels, -1);
  int rows = 0;
  std::vector<bool> in_output(labels, false);
  for (int label : net.output) in_output[label] = true;
  for (int label = 0; label < labels; ++label) {
    if (!in_output[label]) row[label] = rows++;
  }
  std::vector<std::int64_t> value(labels, 0);
  for (std::int64_t o = 0; o < plan.output_size; ++o) {
    std::int64_t rest = o;
    for (std::size_t i = net.output.size(); i-- > 0;) {
      value[net.output[i]] = rest % net.sizes[net.output[i]];
      rest /= net.sizes[net.output[i]];
    }
    for (std::size_t i = 0; i < program.sliced.size(); ++i) value[program.sliced[i]] = index[i];
    for (const TraceNode& node : program.trace) {
      std::int64_t position = 0;
      for (int label : node.labels) position = position * net.sizes[label] + value[label];
      std::int64_t k = std::max<std::int32_t>(read(node.argmax + position), 0);  // -1: nothing beat the zero
      for (std::size_t i = node.contracted.size(); i-- > 0;) {
        const int label = node.contracted[i];
        value[label] = k % net.sizes[label];
        k /= net.sizes[label];
      }
    }
    for (int label = 0; label < labels; ++label) {
      if (row[label] >= 0) found[row[label] * plan.output_size + o] = value[label];
    }
  }
}

}  // namespace tropical::einsum_detail
