// The device runner: strided copies by the library's permute kernel, products by gemm_batched's kernels, the
// ones by byte memsets (stream operations a CUDA graph can capture: no host-to-device copy).

#include <cstring>
#include <memory>
#include <vector>

#include "boxes.hpp"
#include "permute.hpp"
#include "run.hpp"
#include "trace.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/gemm.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace {

namespace driver = jit::driver;
static_assert(einsum_detail::kMaxBoxRank == kMaxPermuteRank, "a box is one launch of the permute kernel");

class DeviceBackend final : public einsum_detail::Backend {
 public:
  DeviceBackend(const EinsumKernels& kernels, CUstream stream) : kernels_(kernels), stream_(stream) {}

  void copy(const einsum_detail::CopyStep& c, const void* src, void* dst) override {
    const auto eb = static_cast<std::int64_t>(kernels_.element_bytes);
    for (const einsum_detail::Box& b : einsum_detail::split(c)) {
      StridedCopy box{};
      box.rank = b.rank;
      for (int i = 0; i < b.rank; ++i) {
        box.size[i] = b.size[i];
        box.src_stride[i] = b.src_stride[i];
        box.dst_stride[i] = b.dst_stride[i];
      }
      permute(kernels_.element_bytes, static_cast<const std::byte*>(src) + b.src_offset * eb,
              static_cast<std::byte*>(dst) + b.dst_offset * eb, box, stream_);
    }
  }

  void product(const Product<void>& p) override {
    // A product that keeps its argmax (an argmax run's steps) takes the argmax kernel: the plain one would leave
    // the argmax unwritten.
    launch_gemm_batched(p.argmax ? kernels_.batched_argmax : kernels_.batched, p, kernels_.element_bytes, stream_);
  }

  void fill(void* dst, const void* one, std::int64_t count) override {
    const std::size_t eb = kernels_.element_bytes;
    const auto ptr = reinterpret_cast<CUdeviceptr>(dst);
    unsigned char bytes[8];
    std::memcpy(bytes, one, eb);
    driver::check(driver::api().cuMemsetD8Async(ptr, 0, count * eb, stream_), "cuMemsetD8Async");
    for (std::size_t j = 0; j < eb; ++j) {
      if (bytes[j] == 0)
        continue;  // byte j of every element: a column one byte wide at a pitch of one element
      driver::check(driver::api().cuMemsetD2D8Async(ptr + j, eb, bytes[j], 1, count, stream_),
                    "cuMemsetD2D8Async");
    }
  }

 private:
  const EinsumKernels& kernels_;
  CUstream stream_;
};

/// The device of the output (the run's): the permutes launch in the current context, the products check every
/// pointer against it.
int device_of(const void* output) {
  int device = 0;
  if (driver::api().cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                          reinterpret_cast<CUdeviceptr>(output)) != CUDA_SUCCESS) {
    throw InvalidArgument("tropical: the einsum output is not device memory");
  }
  return device;
}

/// Waits for `stream` when it goes out of scope (an exception's way out included) if `active`: a workspace the
/// run allocated must not be freed while steps queued on it may still run. Its error is ignored (the run's own
/// error, or the explicit wait before it, reports).
struct WaitOnExit {
  CUstream stream;
  bool active;
  ~WaitOnExit() {
    if (active) driver::api().cuStreamSynchronize(stream);
  }
};

void to_host(void* dst, const void* src, std::size_t bytes) {
  driver::check(driver::api().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
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
  const int device = device_of(output);
  driver::ScopedContext context(device);
  const std::size_t region = argmax_region(program, eb);
  const std::size_t bytes = argmax_bytes(program, eb);
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

void einsum_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                   std::span<const void* const> operands, void* output, void* workspace, CUstream stream) {
  einsum_detail::check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  const int device = device_of(output);
  driver::ScopedContext context(device);
  DeviceBackend backend(kernels, stream);
  const std::size_t bytes = static_cast<std::size_t>(plan.program.workspace_elements) * kernels.element_bytes;
  if (workspace != nullptr || bytes == 0) {
    einsum_detail::run(plan, kernels, backend, operands, output, workspace);
    return;
  }
  DeviceBuffer<std::byte> owned(bytes, device);
  const WaitOnExit wait{stream, true};
  einsum_detail::run(plan, kernels, backend, operands, output, owned.get());
  // The workspace is freed when this returns: wait for the steps that use it.
  driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace tropical::detail
