#include "device_steps.hpp"

#include "../einsum/device_backend.hpp"
#include "merge.hpp"

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

}  // namespace tropical::distributed_detail
