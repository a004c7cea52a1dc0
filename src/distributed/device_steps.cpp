#include "device_steps.hpp"

#include "../einsum/device_backend.hpp"
#include "merge.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::distributed_detail {

void queue_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, const void* zero,
                std::span<const void* const> operands, void* output, void* workspace, einsum_detail::SliceRange range,
                CUstream stream) {
  einsum_detail::DeviceBackend backend(kernels, stream);
  einsum_detail::run_slices(plan, kernels, backend, operands, output, workspace, range, zero);
}

void queue_merge_rows(const detail::EinsumKernels& kernels, const void* gathered, std::int64_t rows,
                      std::int64_t count, void* output, void* ones, CUstream stream) {
  einsum_detail::DeviceBackend backend(kernels, stream);
  merge_rows(kernels, backend, gathered, rows, count, output, ones);
}

ArgmaxPart device_argmax_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                              const void* zero, std::span<const void* const> operands, void* output,
                              void* workspace, einsum_detail::SliceRange range, CUstream stream) {
  einsum_detail::DeviceBackend backend(kernels, stream);
  const ToHost to_host = [stream](void* dst, const void* src, std::size_t bytes) {
    device_to_host(dst, src, bytes, stream);
  };
  return argmax_part(plan, kernels, backend, to_host, operands, output, workspace, range, zero);
}

void device_to_host(void* dst, const void* src, std::size_t bytes, CUstream stream) {
  namespace driver = jit::driver;
  // On the stream, not the legacy stream cuMemcpyDtoH uses, which would wait for every blocking stream of the
  // context (the caller's too).
  driver::check(driver::api().cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream),
                "cuMemcpyDtoHAsync");
  driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace tropical::distributed_detail
