#include "argmax_part.hpp"

#include <algorithm>
#include <cstring>

#include "../einsum/program.hpp"
#include "../einsum/trace.hpp"

namespace tropical::distributed_detail {

namespace {

std::size_t reduced_rows(const detail::EinsumProgram& plan) {
  return plan.network.labels.size() - plan.network.output.size();
}

std::size_t values_bytes(const detail::EinsumProgram& plan, std::size_t element_bytes) {
  return (static_cast<std::size_t>(plan.output_size) * element_bytes + 7) / 8 * 8;
}

}  // namespace

std::size_t ArgmaxPart::packed_bytes(const detail::EinsumProgram& plan, std::size_t element_bytes) {
  const auto out = static_cast<std::size_t>(plan.output_size);
  return values_bytes(plan, element_bytes) + (1 + reduced_rows(plan)) * out * sizeof(std::int64_t);
}

void ArgmaxPart::pack(const detail::EinsumProgram& plan, std::size_t element_bytes, std::byte* out) const {
  std::memcpy(out, values.data(), values.size());
  out += values_bytes(plan, element_bytes);
  std::memcpy(out, won.data(), won.size() * sizeof(std::int64_t));
  out += won.size() * sizeof(std::int64_t);
  std::memcpy(out, assignment.data(), assignment.size() * sizeof(std::int64_t));
}

ArgmaxPart ArgmaxPart::unpack(const detail::EinsumProgram& plan, std::size_t element_bytes, const std::byte* in) {
  const auto out = static_cast<std::size_t>(plan.output_size);
  ArgmaxPart p{std::vector<std::byte>(out * element_bytes), std::vector<std::int64_t>(out),
               std::vector<std::int64_t>(reduced_rows(plan) * out)};
  std::memcpy(p.values.data(), in, p.values.size());
  in += values_bytes(plan, element_bytes);
  std::memcpy(p.won.data(), in, p.won.size() * sizeof(std::int64_t));
  in += p.won.size() * sizeof(std::int64_t);
  std::memcpy(p.assignment.data(), in, p.assignment.size() * sizeof(std::int64_t));
  return p;
}

ArgmaxPart argmax_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                       einsum_detail::Backend& backend, const ToHost& to_host, std::span<const void* const> operands,
                       void* output, void* workspace, einsum_detail::SliceRange range, const void* zero) {
  using namespace einsum_detail;
  const Program& program = plan.program;
  const std::size_t eb = kernels.element_bytes;
  const std::int64_t out = plan.output_size;
  const std::int64_t slices = plan.info.slices;
  const std::size_t rows = reduced_rows(plan);
  ArgmaxPart p{std::vector<std::byte>(static_cast<std::size_t>(out) * eb),
               std::vector<std::int64_t>(static_cast<std::size_t>(out), slices),
               std::vector<std::int64_t>(rows * static_cast<std::size_t>(out), 0)};
  if (range.first >= slices) {
    backend.fill(output, zero, out);
    for (std::int64_t o = 0; o < out; ++o) std::memcpy(p.values.data() + o * eb, zero, eb);
    return p;
  }
  auto* ws = static_cast<std::byte*>(workspace);
  auto* argmax = reinterpret_cast<std::int32_t*>(ws + argmax_region(program, eb));
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  std::byte* part = program.part_offset >= 0 ? ws + program.part_offset * static_cast<std::int64_t>(eb) : nullptr;
  // A lone slice of a sliced plan is merged into the zero, as run_slices does.
  const bool lone = part != nullptr && range.first + range.step >= slices;
  std::vector<std::int32_t> host_argmax(static_cast<std::size_t>(program.argmax_count));
  std::vector<std::int64_t> found(rows * static_cast<std::size_t>(out));
  std::vector<std::byte> host_part(p.values.size());
  auto* result = static_cast<std::byte*>(output);
  for (std::int64_t s = range.first; s < slices; s += range.step) {
    const std::vector<std::int64_t> index = slice_index(program, s);
    const bool direct = s == range.first && !lone;
    run_slice(program, backend, {operands, ws, direct ? result : part, eb, &index, argmax});
    if (!host_argmax.empty()) to_host(host_argmax.data(), argmax, host_argmax.size() * sizeof(std::int32_t));
    const bool first = s == range.first;
    trace_back(plan, [&](std::int64_t i) { return host_argmax[static_cast<std::size_t>(i)]; }, index,
               first ? p.assignment.data() : found.data());
    if (first) {
      std::fill(p.won.begin(), p.won.end(), s);
      if (lone) {
        backend.fill(output, zero, out);
        merge(kernels, backend, part, output, out, ws);
      }
      continue;
    }
    to_host(host_part.data(), part, host_part.size());
    to_host(p.values.data(), output, p.values.size());
    for (std::int64_t o = 0; o < out; ++o) {
      if (!kernels.better(host_part.data() + o * eb, p.values.data() + o * eb)) continue;
      p.won[static_cast<std::size_t>(o)] = s;
      for (std::size_t r = 0; r < rows; ++r) p.assignment[r * out + o] = found[r * out + o];
    }
    merge(kernels, backend, part, output, out, ws);
  }
  to_host(p.values.data(), output, p.values.size());
  return p;
}

ArgmaxPart merge_argmax(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                        std::span<const ArgmaxPart> parts) {
  const std::size_t eb = kernels.element_bytes;
  const auto out = static_cast<std::size_t>(plan.output_size);
  const std::size_t rows = reduced_rows(plan);
  ArgmaxPart best = parts[0];
  for (std::size_t r = 1; r < parts.size(); ++r) {
    const ArgmaxPart& p = parts[r];
    for (std::size_t o = 0; o < out; ++o) {
      const std::byte* v = p.values.data() + o * eb;
      std::byte* b = best.values.data() + o * eb;
      const bool ahead = kernels.better(v, b);
      const bool tie = !ahead && !kernels.better(b, v);
      if (!ahead && !(tie && p.won[o] < best.won[o])) continue;
      std::memcpy(b, v, eb);
      best.won[o] = p.won[o];
      for (std::size_t i = 0; i < rows; ++i) best.assignment[i * out + o] = p.assignment[i * out + o];
    }
  }
  return best;
}

}  // namespace tropical::distributed_detail
