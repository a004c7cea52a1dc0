#pragma once

// The device CountingTropical run's slice loop (device_counting.cpp), for runners that take a part of the slices.

#include <cuda.h>

#include <cstddef>
#include <span>

#include "run.hpp"

namespace tropical::detail {

/// Queues the slices of `range` of plan over CountingTropical (element_bytes: float or double) on `stream`, the
/// first writing out_values and out_counts and each later one merged into them on the device; pointers already
/// checked, workspace of counting_bytes. Queues only the workspace's ones for a range past the last slice.
void queue_counting_slices(const EinsumProgram& plan, std::size_t element_bytes, std::span<const void* const> values,
                           std::span<const void* const> counts, void* out_values, void* out_counts,
                           std::byte* workspace, einsum_detail::SliceRange range, CUstream stream);

}  // namespace tropical::detail
