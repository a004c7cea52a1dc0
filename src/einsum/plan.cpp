// EinsumPlan: check the network, order it (a given path or greedy), slice it under the memory limit, and
// compile its steps; the planner's findings as python/tropical/_einsum_path.py reports them.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "network.hpp"
#include "program.hpp"
#include "tree.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

namespace tropical {

namespace {

std::shared_ptr<const detail::EinsumProgram> plan(einsum_detail::Network net, const EinsumOptions& options) {
  using namespace einsum_detail;
  auto out = std::make_shared<detail::EinsumProgram>();
  const Problem problem = problem_of(net);
  const int count = static_cast<int>(net.inputs.size());
  const Tree tree = options.path.empty() ? greedy(problem) : from_path(options.path, count);
  if (problem.log2_size(problem.output) > 62.0) {
    throw InvalidArgument("tropical: the output has more than 2^62 elements");
  }
  for (int label : net.output) {
    out->output_shape.push_back(net.sizes[label]);
    out->output_size *= net.sizes[label];
  }
  if (options.memory_limit < 0) {
    throw InvalidArgument("tropical: memory_limit is " + std::to_string(options.memory_limit) +
                          "; it counts elements and must be at least 1 (0: no limit)");
  }
  if (options.memory_limit > 0 && out->output_size > options.memory_limit) {
    throw InvalidArgument("tropical: memory_limit " + std::to_string(options.memory_limit) +
                          " is smaller than the output (" + std::to_string(out->output_size) + " elements)");
  }
  const Mask sliced = choose_slices(problem, tree, options.memory_limit);
  const Cost cost = tree.cost(problem.without(sliced));
  if (cost.log2_space > 62.0) {  // element counts and offsets are int64
    char shown[32];
    std::snprintf(shown, sizeof shown, "%.1f", cost.log2_space);
    throw InvalidArgument(std::string("tropical: the order makes a tensor of 2^") + shown +
                          " elements, past 64-bit sizes; pass a memory_limit (elements) to slice it");
  }
  EinsumInfo& info = out->info;
  for (int label : sliced.bits()) {
    info.sliced.push_back(net.labels[label]);
    info.slices *= net.sizes[label];
  }
  info.log2_time = cost.log2_time + std::log2(static_cast<double>(info.slices));
  info.log2_space = cost.log2_space;
  info.largest_intermediate = tree.children.empty() ? 0 : std::llround(std::pow(2.0, cost.largest));
  info.path = to_path(tree);
  out->program = compile(net, problem, tree, sliced);
  out->network = std::move(net);
  return out;
}

}  // namespace

EinsumPlan::EinsumPlan(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output,
                       const std::vector<std::vector<std::int64_t>>& shapes, const EinsumOptions& options)
    : program_(plan(einsum_detail::make_network(inputs, output, shapes, false), options)) {}

EinsumPlan::EinsumPlan(std::string_view equation, const std::vector<std::vector<std::int64_t>>& shapes,
                       const EinsumOptions& options) {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  einsum_detail::parse_equation(equation, shapes.size(), inputs, output);
  program_ = plan(einsum_detail::make_network(inputs, output, shapes, true), options);
}

const EinsumInfo& EinsumPlan::info() const { return program_->info; }

std::size_t EinsumPlan::operand_count() const { return program_->network.inputs.size(); }

const std::vector<std::int64_t>& EinsumPlan::output_shape() const { return program_->output_shape; }

std::int64_t EinsumPlan::output_size() const { return program_->output_size; }

std::size_t EinsumPlan::workspace_bytes(std::size_t element_bytes) const {
  return static_cast<std::size_t>(program_->program.workspace_elements) * element_bytes;
}

std::size_t EinsumPlan::counting_workspace_bytes(std::size_t element_bytes) const {
  return einsum_detail::counting_bytes(program_->program, program_->output_size, element_bytes);
}

std::vector<int> EinsumPlan::reduced_labels() const {
  std::vector<int> out;
  const auto& net = program_->network;
  for (std::size_t label = 0; label < net.labels.size(); ++label) {
    if (std::find(net.output.begin(), net.output.end(), static_cast<int>(label)) == net.output.end()) {
      out.push_back(net.labels[label]);
    }
  }
  return out;
}

std::size_t EinsumPlan::argmax_workspace_bytes(std::size_t element_bytes) const {
  return einsum_detail::argmax_bytes(program_->program, element_bytes);
}

}  // namespace tropical
