// The argmax mode on host memory: every slice run with each product's argmax kept, then traced back from the
// root per output element (python/tropical/_einsum_trace.py's walk: a node's result labels are assigned by
// its ancestors, its argmax read there and unravelled into the labels it reduced); slices merged where the
// new one is strictly better (ties keep the first slice).

#include <algorithm>
#include <cstring>

#include "host.hpp"
#include "trace.hpp"
#include "tropical/error.hpp"

namespace tropical::detail {

void einsum_argmax_host(const EinsumProgram& plan, const EinsumKernels& kernels,
                        std::span<const void* const> operands, void* output, std::int64_t* assignment,
                        void* workspace, int threads) {
  using namespace einsum_detail;
  const Program& program = plan.program;
  check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  const std::size_t eb = kernels.element_bytes;
  const std::size_t region = argmax_region(program, eb);
  HostWorkspace owned(workspace == nullptr ? argmax_bytes(program, eb) : 0);
  auto* ws = static_cast<std::byte*>(workspace != nullptr ? workspace : owned.get());
  auto* argmax = reinterpret_cast<std::int32_t*>(ws + region);
  HostBackend backend(kernels, threads);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  const std::size_t rows = plan.network.labels.size() - plan.network.output.size();
  const std::int64_t out = plan.output_size;
  if (rows > 0 && assignment == nullptr) throw InvalidArgument("tropical: the einsum assignment is null");
  const bool sliced = program.part_offset >= 0;  // one slice: no part, no merge, nothing found to keep
  std::vector<std::int64_t> found(sliced ? rows * out : 0);
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  std::byte* part = sliced ? ws + program.part_offset * static_cast<std::int64_t>(eb) : nullptr;
  auto* result = static_cast<std::byte*>(output);
  bool first = true;
  do {
    run_slice(program, backend, {operands, ws, first ? result : part, eb, &index, argmax});
    einsum_detail::trace_back(
        plan, [&](std::int64_t i) { return argmax[i]; }, index, first ? assignment : found.data());
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
