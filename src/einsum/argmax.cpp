// The argmax mode on host memory: every slice run with each product's argmax kept, then traced back from the
// root per output element (python/tropical/_einsum_trace.py's walk: a node's result labels are assigned by
// its ancestors, its argmax read there and unravelled into the labels it reduced); slices merged where the
// new one is strictly better (ties keep the first slice).

#include <algorithm>
#include <cstring>

#include "host.hpp"
#include "tropical/error.hpp"

namespace tropical::detail {

namespace {

/// The traceback of one slice into `found` (rows: the labels not in the output; columns: output elements).
void trace_back(const EinsumProgram& plan, const std::int32_t* argmax, const std::vector<std::int64_t>& index,
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
    for (const einsum_detail::TraceNode& node : program.trace) {
      std::int64_t position = 0;
      for (int label : node.labels) position = position * net.sizes[label] + value[label];
      std::int64_t k =
          std::max<std::int32_t>(argmax[node.argmax + position], 0);  // -1: nothing beat the zero
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

}  // namespace

void einsum_argmax_host(const EinsumProgram& plan, const EinsumKernels& kernels,
                        std::span<const void* const> operands, void* output, std::int64_t* assignment,
                        void* workspace, int threads) {
  using namespace einsum_detail;
  const Program& program = plan.program;
  check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  const std::size_t eb = kernels.element_bytes;
  const std::size_t region = argmax_region(program, eb);
  HostWorkspace owned(workspace == nullptr ? region + program.argmax_count * sizeof(std::int32_t) : 0);
  auto* ws = static_cast<std::byte*>(workspace != nullptr ? workspace : owned.get());
  auto* argmax = reinterpret_cast<std::int32_t*>(ws + region);
  HostBackend backend(kernels, threads);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  const std::size_t rows = plan.network.labels.size() - plan.network.output.size();
  const std::int64_t out = plan.output_size;
  if (rows > 0 && assignment == nullptr) throw InvalidArgument("tropical: the einsum assignment is null");
  std::vector<std::int64_t> found(rows * out);
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  std::byte* part = ws + program.part_offset * static_cast<std::int64_t>(eb);
  auto* result = static_cast<std::byte*>(output);
  bool first = true;
  do {
    run_slice(program, backend, {operands, ws, first ? result : part, eb, &index, argmax});
    trace_back(plan, argmax, index, first ? assignment : found.data());
    if (!first) {
      for (std::int64_t o = 0; o < out; ++o) {
        if (!kernels.better(part + o * eb, result + o * eb)) continue;
        for (std::size_t r = 0; r < rows; ++r) assignment[r * out + o] = found[r * out + o];
      }
      merge(kernels, backend, part, output, out, ws);
    }
    first = false;
  } while (next_slice(program, index));
}

}  // namespace tropical::detail
