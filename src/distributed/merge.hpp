#pragma once

// Merging every rank's gathered result on the device, for what an all-reduce cannot carry: int16 values (NCCL
// has no 16-bit integer) and CountingTropical's (value, count) pairs (NCCL has no user reductions).

#include <cuda.h>

#include <cstdint>

#include "../einsum/run.hpp"

namespace tropical::distributed_detail {

/// output = the semiring sum of rows 0 .. rows-1 of `gathered` (rows x count elements, row-major) on backend:
/// row 0 copied where rows is 1, else one product of a row of `rows` semiring ones (written at `ones`) by the
/// rows, exact for integers.
void merge_rows(const detail::EinsumKernels& kernels, einsum_detail::Backend& backend, const void* gathered,
                std::int64_t rows, std::int64_t count, void* output, void* ones);

/// The CountingTropical (values, counts) of rows 0 .. rows-1 of gathered values and counts (rows x count each,
/// row-major; element_bytes: float or double) merged into out_values and out_counts on stream: row 0 copied
/// where rows is 1, else one counting product of a row of `rows` ones (0, 1) (written at ones_values and
/// ones_counts) by the rows, the best value with the counts of the rows reaching it summed in row order.
void merge_counting_rows(std::size_t element_bytes, const void* values, const void* counts, std::int64_t rows,
                         std::int64_t count, void* out_values, void* out_counts, void* ones_values,
                         void* ones_counts, CUstream stream);

}  // namespace tropical::distributed_detail
