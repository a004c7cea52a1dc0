// Running a program: every slice's steps in order with its sliced labels' indices, the first slice writing the
// output and each later one its part, merged into the output by C = part (+) C (a product by the one).

#include "run.hpp"

#include <string>

#include "tropical/error.hpp"

namespace tropical::einsum_detail {

namespace {

struct Memory {
  std::span<const void* const> operands;
  std::byte* workspace;
  std::byte* result;
  std::size_t element_bytes;
  const std::vector<std::int64_t>* index;  // the slice's index of every sliced label

  std::byte* at(const Where& w) const {
    std::int64_t offset = w.offset;
    std::byte* base = nullptr;
    switch (w.space) {
      case Space::kOperand:
        base = static_cast<std::byte*>(const_cast<void*>(operands[w.operand]));
        for (const auto& [ordinal, stride] : w.fixed) offset += (*index)[ordinal] * stride;
        break;
      case Space::kWorkspace: base = workspace; break;
      case Space::kResult: base = result; break;
      case Space::kOnes: base = workspace; break;
    }
    return base + offset * static_cast<std::int64_t>(element_bytes);
  }
};

}  // namespace

void run(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
         std::span<const void* const> operands, void* output, void* workspace) {
  const Program& program = plan.program;
  if (operands.size() != plan.network.inputs.size()) {
    throw InvalidArgument("tropical: the einsum plan takes " + std::to_string(plan.network.inputs.size()) +
                          " operand(s) but " + std::to_string(operands.size()) + " were given");
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (operands[i] == nullptr) throw InvalidArgument("tropical: einsum operand " + std::to_string(i) + " is null");
  }
  if (output == nullptr) throw InvalidArgument("tropical: the einsum output is null");
  if (workspace == nullptr && program.workspace_elements > 0) {
    throw InvalidArgument("tropical: the einsum workspace is null");
  }
  const std::size_t eb = kernels.element_bytes;
  auto* ws = static_cast<std::byte*>(workspace);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  for (bool first = true;; first = false) {
    Memory memory{operands, ws, first ? static_cast<std::byte*>(output) : ws + program.part_offset * eb, eb, &index};
    for (const Step& step : program.steps) {
      if (const auto* c = std::get_if<CopyStep>(&step)) {
        backend.copy(*c, memory.at(c->src), memory.at(c->dst));
        continue;
      }
      const auto& p = std::get<ProductStep>(step);
      backend.product(Product<void>{{memory.at(p.a), p.m, p.k, p.lda, p.ta, p.stride_a},
                                    {memory.at(p.b), p.k, p.n, p.ldb, p.tb, p.stride_b},
                                    {memory.at(p.c), p.m, p.n, p.ldc, Trans::kNo, p.stride_c},
                                    {},
                                    {},
                                    p.batch});
    }
    if (!first) {  // output = part (+) output: output_size x 1 times the 1 x 1 one, C read
      backend.product(Product<void>{{memory.result, plan.output_size, 1, 1},
                                    {ws, 1, 1, 1},
                                    {output, plan.output_size, 1, 1},
                                    {},
                                    kernels.accumulate,
                                    1});
    }
    // The next slice in lexicographic order (the last sliced label fastest, as itertools.product).
    std::size_t d = index.size();
    while (d > 0 && ++index[d - 1] == program.slice_extents[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
}

}  // namespace tropical::einsum_detail
