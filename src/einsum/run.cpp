// Running a program: every slice's steps in order with its sliced labels' indices, the first slice writing
// the output and each later one its part, merged into the output by C = part (+) C (a product by the one).

#include "run.hpp"

#include <string>

#include "tropical/error.hpp"

namespace tropical::einsum_detail {

std::byte* Memory::at(const Where& w) const {
  std::int64_t offset = w.offset;
  std::byte* base = nullptr;
  switch (w.space) {
    case Space::kOperand:
      base = static_cast<std::byte*>(const_cast<void*>(operands[w.operand]));
      for (const auto& [ordinal, stride] : w.fixed) offset += (*index)[ordinal] * stride;
      break;
    case Space::kWorkspace:
      base = workspace;
      break;
    case Space::kResult:
      base = result;
      break;
    case Space::kOnes:
      base = workspace;
      break;
  }
  return base + offset * static_cast<std::int64_t>(element_bytes);
}

void check_pointers(const detail::EinsumProgram& plan, std::span<const void* const> operands,
                    const void* output, const void* workspace) {
  if (operands.size() != plan.network.inputs.size()) {
    throw InvalidArgument("tropical: the einsum plan takes " + std::to_string(plan.network.inputs.size()) +
                          " operand(s) but " + std::to_string(operands.size()) + " were given");
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (operands[i] == nullptr)
      throw InvalidArgument("tropical: einsum operand " + std::to_string(i) + " is null");
  }
  if (output == nullptr) throw InvalidArgument("tropical: the einsum output is null");
  if (workspace == nullptr && plan.program.workspace_elements > 0) {
    throw InvalidArgument("tropical: the einsum workspace is null");
  }
}

void run_slice(const Program& program, Backend& backend, const Memory& memory) {
  for (const Step& step : program.steps) {
    if (const auto* c = std::get_if<CopyStep>(&step)) {
      backend.copy(*c, memory.at(c->src), memory.at(c->dst));
      continue;
    }
    const auto& p = std::get<ProductStep>(step);
    std::optional<Operand<std::int32_t>> argmax;
    if (memory.argmax != nullptr && p.argmax >= 0) {
      argmax = Operand<std::int32_t>{memory.argmax + p.argmax, p.m, p.n, p.n, Trans::kNo, p.m * p.n};
    }
    backend.product(Product<void>{{memory.at(p.a), p.m, p.k, p.lda, p.ta, p.stride_a},
                                  {memory.at(p.b), p.k, p.n, p.ldb, p.tb, p.stride_b},
                                  {memory.at(p.c), p.m, p.n, p.ldc, Trans::kNo, p.stride_c},
                                  argmax,
                                  {},
                                  p.batch});
  }
}

void merge(const detail::EinsumKernels& kernels, Backend& backend, const void* part, void* output,
           std::int64_t output_size, const void* ones) {
  // The 1 x 1 one times part as one row, C read: C = part (+) C (a row: the grid's columns are not limited).
  backend.product(Product<void>{{ones, 1, 1, 1},
                                {part, 1, output_size, output_size},
                                {output, 1, output_size, output_size},
                                {},
                                kernels.accumulate,
                                1});
}

bool next_slice(const Program& program, std::vector<std::int64_t>& index) {
  std::size_t d = index.size();
  while (d > 0 && ++index[d - 1] == program.slice_extents[d - 1]) index[--d] = 0;
  return d > 0;
}

std::vector<std::int64_t> slice_index(const Program& program, std::int64_t slice) {
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  for (std::size_t d = index.size(); d-- > 0;) {
    index[d] = slice % program.slice_extents[d];
    slice /= program.slice_extents[d];
  }
  return index;
}

SliceRange share(std::int64_t part, std::int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts) {
    throw InvalidArgument("tropical: part " + std::to_string(part) + " of " + std::to_string(parts) +
                          " is not a share of the slices (parts >= 1, 0 <= part < parts)");
  }
  return SliceRange{part, parts};
}

void run_slices(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
                std::span<const void* const> operands, void* output, void* workspace, SliceRange range,
                const void* zero) {
  const Program& program = plan.program;
  check_pointers(plan, operands, output, workspace);
  const std::int64_t slices = plan.info.slices;
  if (range.first >= slices) {
    backend.fill(output, zero, plan.output_size);
    return;
  }
  const std::size_t eb = kernels.element_bytes;
  auto* ws = static_cast<std::byte*>(workspace);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  std::byte* part = program.part_offset >= 0 ? ws + program.part_offset * static_cast<std::int64_t>(eb) : nullptr;
  const bool lone = part != nullptr && range.first + range.step >= slices;
  for (std::int64_t s = range.first; s < slices; s += range.step) {
    const std::vector<std::int64_t> index = slice_index(program, s);
    const bool direct = s == range.first && !lone;
    run_slice(program, backend, {operands, ws, direct ? static_cast<std::byte*>(output) : part, eb, &index});
    if (direct) continue;
    if (lone) backend.fill(output, zero, plan.output_size);
    merge(kernels, backend, part, output, plan.output_size, ws);
  }
}

void run(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
         std::span<const void* const> operands, void* output, void* workspace) {
  const Program& program = plan.program;
  check_pointers(plan, operands, output, workspace);
  const std::size_t eb = kernels.element_bytes;
  auto* ws = static_cast<std::byte*>(workspace);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  std::byte* part = program.part_offset >= 0 ? ws + program.part_offset * static_cast<std::int64_t>(eb) : nullptr;
  bool first = true;
  do {
    run_slice(program, backend, {operands, ws, first ? static_cast<std::byte*>(output) : part, eb, &index});
    if (!first) merge(kernels, backend, part, output, plan.output_size, ws);
    first = false;
  } while (next_slice(program, index));
}

}  // namespace tropical::einsum_detail
