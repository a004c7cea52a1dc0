// The device runners of plain and argmax runs (device_backend.hpp's steps): every pointer checked to be memory
// of the run's device, and a run that would wait or allocate refused under stream capture, before anything is
// queued.

#include <memory>
#include <vector>

#include "device_backend.hpp"
#include "permute.hpp"
#include "trace.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace {

namespace driver = jit::driver;
using einsum_detail::DeviceBackend;
using einsum_detail::RunDevices;
using einsum_detail::WaitOnExit;

void to_host(void* dst, const void* src, std::size_t bytes) {
  driver::check(driver::api().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
}

/// The device of a run on operands into output (element_bytes each) with `bytes` of a given workspace (null:
/// none given): every one checked before anything is queued.
int run_device(const EinsumProgram& plan, std::span<const void* const> operands, const void* output,
               std::size_t element_bytes, const void* workspace, std::size_t bytes, CUstream stream) {
  RunDevices devices;
  devices.add_operands(plan, operands, element_bytes, "einsum operand");
  devices.add(output, static_cast<std::size_t>(plan.output_size) * element_bytes, "the einsum output");
  if (workspace != nullptr) devices.add(workspace, bytes, "the einsum workspace");
  return devices.device(stream);
}

}  // namespace

void einsum_argmax_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                          std::span<const void* const> operands, void* output, std::int64_t* assignment,
                          void* workspace, CUstream stream) {
  using namespace einsum_detail;
  const Program& program = plan.program;
  check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  const std::size_t eb = kernels.element_bytes;
  const std::int64_t out = plan.output_size;
  const std::size_t rows = plan.network.labels.size() - plan.network.output.size();
  if (rows > 0 && assignment == nullptr) throw InvalidArgument("tropical: the einsum assignment is null");
  const std::size_t region = argmax_region(program, eb);
  const std::size_t bytes = argmax_bytes(program, eb);
  const int device = run_device(plan, operands, output, eb, workspace, bytes, stream);
  driver::ScopedContext context(device);
  refuse_under_capture(stream, "reads every step's argmax back to the host (an argmax run waits for the stream)");
  std::unique_ptr<DeviceBuffer<std::byte>> owned;
  if (workspace == nullptr) owned = std::make_unique<DeviceBuffer<std::byte>>(bytes, device);
  const WaitOnExit wait{stream, owned != nullptr};
  auto* ws = workspace != nullptr ? static_cast<std::byte*>(workspace) : owned->get();
  auto* argmax = reinterpret_cast<std::int32_t*>(ws + region);
  DeviceBackend backend(kernels, stream);
  if (program.ones_count > 0) backend.fill(ws, kernels.one, program.ones_count);
  const bool sliced = program.part_offset >= 0;  // one slice: no part, no merge, nothing found to keep
  std::vector<std::int64_t> found(sliced ? rows * out : 0), index(program.slice_extents.size(), 0);
  std::byte* part = sliced ? ws + program.part_offset * static_cast<std::int64_t>(eb) : nullptr;
  const std::int64_t slices = plan.info.slices;
  if (sliced && out == 1 && program.argmax_count * sizeof(std::int32_t) >= static_cast<std::size_t>(slices) * eb) {
    // A scalar: every slice's value first (plain products, each value kept at the argmax region's start), then
    // only the winning slice (the first of the best, the tie rule of the merge below) again with its argmax,
    // traced back once.
    auto* values = reinterpret_cast<std::byte*>(argmax);
    std::int64_t s = 0;
    bool first_slice = true;
    do {
      std::byte* result = first_slice ? static_cast<std::byte*>(output) : part;
      run_slice(program, backend, {operands, ws, result, eb, &index, nullptr});
      permute(eb, result, values + s * eb, StridedCopy{}, stream);  // one element
      if (!first_slice) merge(kernels, backend, part, output, out, ws);
      first_slice = false;
      ++s;
    } while (next_slice(program, index));
    driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<std::byte> host_values(static_cast<std::size_t>(slices) * eb);
    to_host(host_values.data(), values, host_values.size());
    std::int64_t best = 0;
    for (std::int64_t i = 1; i < slices; ++i) {
      if (kernels.better(host_values.data() + i * eb, host_values.data() + best * eb)) best = i;
    }
    for (std::size_t d = index.size(), rest = static_cast<std::size_t>(best); d-- > 0;) {  // the last label fastest
      index[d] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(program.slice_extents[d]));
      rest /= static_cast<std::size_t>(program.slice_extents[d]);
    }
    run_slice(program, backend, {operands, ws, part, eb, &index, argmax});
    driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
    trace_back(
        plan,
        [&](std::int64_t i) {
          std::int32_t k = 0;
          to_host(&k, argmax + i, sizeof k);
          return k;
        },
        index, assignment);
    return;
  }
  std::vector<std::byte> host_part(sliced ? out * eb : 0), host_out(sliced ? out * eb : 0);
  std::vector<std::int32_t> host_argmax;
  bool first = true;
  do {
    run_slice(program, backend,
              {operands, ws, first ? static_cast<std::byte*>(output) : part, eb, &index, argmax});
    driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
    // A scalar output reads one element of each argmax (a few hundred small copies); a larger one takes the
    // region at once.
    if (out > 1 && program.argmax_count > 0) {
      host_argmax.resize(program.argmax_count);
      to_host(host_argmax.data(), argmax, host_argmax.size() * sizeof(std::int32_t));
    }
    const auto read = [&](std::int64_t i) {
      if (!host_argmax.empty()) return host_argmax[i];
      std::int32_t k = 0;
      to_host(&k, argmax + i, sizeof k);
      return k;
    };
    trace_back(plan, read, index, first ? assignment : found.data());
    if (!first) {
      to_host(host_part.data(), part, host_part.size());
      to_host(host_out.data(), output, host_out.size());
      for (std::int64_t o = 0; o < out; ++o) {
        if (!kernels.better(host_part.data() + o * eb, host_out.data() + o * eb)) continue;
        for (std::size_t r = 0; r < rows; ++r) assignment[r * out + o] = found[r * out + o];
      }
      merge(kernels, backend, part, output, out, ws);
    }
    first = false;
  } while (next_slice(program, index));
  driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

namespace {

/// Checks a plain run's pointers and queues `steps(backend, workspace)` on stream, with an owned workspace (the
/// stream waited for before it is freed) where none is given.
template <class Steps>
void queue_plain(const EinsumProgram& plan, const EinsumKernels& kernels, std::span<const void* const> operands,
                 void* output, void* workspace, CUstream stream, const Steps& steps) {
  einsum_detail::check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  const std::size_t bytes = static_cast<std::size_t>(plan.program.workspace_elements) * kernels.element_bytes;
  const int device = run_device(plan, operands, output, kernels.element_bytes, workspace, bytes, stream);
  driver::ScopedContext context(device);
  DeviceBackend backend(kernels, stream);
  if (workspace != nullptr || bytes == 0) {
    steps(backend, workspace);
    return;
  }
  einsum_detail::refuse_under_capture(stream, "has no workspace: pass one of workspace_bytes() (a run allocates "
                                              "its own and waits for the stream to free it)");
  DeviceBuffer<std::byte> owned(bytes, device);
  const WaitOnExit wait{stream, true};
  steps(backend, owned.get());
  // The workspace is freed when this returns: wait for the steps that use it.
  driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace

void einsum_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                   std::span<const void* const> operands, void* output, void* workspace, CUstream stream) {
  queue_plain(plan, kernels, operands, output, workspace, stream, [&](DeviceBackend& backend, void* ws) {
    einsum_detail::run(plan, kernels, backend, operands, output, ws);
  });
}

void einsum_part_device(const EinsumProgram& plan, const EinsumKernels& kernels, const void* zero,
                        std::span<const void* const> operands, void* output, std::int64_t part,
                        std::int64_t parts, void* workspace, CUstream stream) {
  const einsum_detail::SliceRange range = einsum_detail::share(part, parts);
  queue_plain(plan, kernels, operands, output, workspace, stream, [&](DeviceBackend& backend, void* ws) {
    einsum_detail::run_slices(plan, kernels, backend, operands, output, ws, range, zero);
  });
}

}  // namespace tropical::detail
