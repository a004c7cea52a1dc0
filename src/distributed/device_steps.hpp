#pragma once

// A distributed run's device steps apart from NCCL, on a stream: one rank's part (run.hpp's run_slices, or
// argmax_part.hpp's argmax_part, on the device backend) and the merge of gathered rows (merge.hpp's merge_rows on
// the device backend). run.cpp and argmax.cpp run them between their checks and their collective; tests run
// every rank's part on one device.

#include <cuda.h>

#include <cstdint>
#include <span>

#include "../einsum/run.hpp"
#include "argmax_part.hpp"

namespace tropical::distributed_detail {

/// Queues run_slices of `range` on stream: output the merged slices of the range, or the semiring zero (`zero`,
/// host memory) where it holds none; workspace of plan.program.workspace_elements elements of the device.
void queue_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, const void* zero,
                std::span<const void* const> operands, void* output, void* workspace, einsum_detail::SliceRange range,
                CUstream stream);

/// Queues merge_rows on stream (ones: `rows` elements of the device).
void queue_merge_rows(const detail::EinsumKernels& kernels, const void* gathered, std::int64_t rows,
                      std::int64_t count, void* output, void* ones, CUstream stream);

/// argmax_part on the device backend, reading the device after waiting for the stream; workspace: argmax_bytes
/// of the plan's program on the device.
ArgmaxPart device_argmax_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                              const void* zero, std::span<const void* const> operands, void* output,
                              void* workspace, einsum_detail::SliceRange range, CUstream stream);

/// Copies `bytes` of the device to the host on stream and waits for the stream (unbounded: for work without a
/// collective, or after wait.hpp's bounded wait).
void device_to_host(void* dst, const void* src, std::size_t bytes, CUstream stream);

}  // namespace tropical::distributed_detail
