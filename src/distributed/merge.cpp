#include "merge.hpp"

#include "../einsum/device_backend.hpp"
#include "tropical/counting.hpp"

namespace tropical::distributed_detail {

namespace {

/// count elements in order: a whole row.
einsum_detail::CopyStep whole(std::int64_t count) { return {{}, {}, {count}, {1}, {1}}; }

template <class T>
void merge_counting(const T* values, const T* counts, std::int64_t rows, std::int64_t count, T* out_values,
                    T* out_counts, T* ones_values, T* ones_counts, CUstream stream) {
  const detail::EinsumKernels copies{sizeof(T), nullptr, {}, nullptr, {}, {}, nullptr};  // copy and fill read the size
  einsum_detail::DeviceBackend backend(copies, stream);
  if (rows == 1) {
    backend.copy(whole(count), values, out_values);
    backend.copy(whole(count), counts, out_counts);
    return;
  }
  const T value_one = T(0), count_one = T(1);  // the one of CountingTropical: (0, 1)
  backend.fill(ones_values, &value_one, rows);
  backend.fill(ones_counts, &count_one, rows);
  // (1 x rows) (x) (rows x count): the largest value of each column, the counts of the rows reaching it summed
  // in row order (tropical.distributed.counting_contract's merge in rank order).
  gemm_batched_counting<T>(Trans::kNo, Trans::kNo, 1, count, rows, {ones_values, rows, ones_counts, rows},
                           {values, count, counts, count}, {out_values, count, out_counts, count}, 1, stream);
}

}  // namespace

void merge_rows(const detail::EinsumKernels& kernels, einsum_detail::Backend& backend, const void* gathered,
                std::int64_t rows, std::int64_t count, void* output, void* ones) {
  if (rows == 1) {
    backend.copy(whole(count), gathered, output);
    return;
  }
  backend.fill(ones, kernels.one, rows);
  backend.product(Product<void>{{ones, 1, rows, rows}, {gathered, rows, count, count}, {output, 1, count, count}});
}

void merge_counting_rows(std::size_t element_bytes, const void* values, const void* counts, std::int64_t rows,
                         std::int64_t count, void* out_values, void* out_counts, void* ones_values,
                         void* ones_counts, CUstream stream) {
  if (element_bytes == sizeof(float)) {
    merge_counting<float>(static_cast<const float*>(values), static_cast<const float*>(counts), rows, count,
                          static_cast<float*>(out_values), static_cast<float*>(out_counts),
                          static_cast<float*>(ones_values), static_cast<float*>(ones_counts), stream);
  } else {
    merge_counting<double>(static_cast<const double*>(values), static_cast<const double*>(counts), rows, count,
                           static_cast<double*>(out_values), static_cast<double*>(out_counts),
                           static_cast<double*>(ones_values), static_cast<double*>(ones_counts), stream);
  }
}

}  // namespace tropical::distributed_detail
