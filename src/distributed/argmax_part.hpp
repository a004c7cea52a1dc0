#pragma once

// The argmax of a distributed run, apart from NCCL: one rank's part (its slices run with every product's argmax
// and traced back, as einsum_argmax_host's slice loop, also keeping the winning slice of every element) on any
// backend, and the merge of every rank's gathered part on the host (python/tropical/distributed.py's
// contract_argmax: the best value wins, and among equal values the smallest slice index).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "../einsum/run.hpp"

namespace tropical::distributed_detail {

/// One rank's argmax result on the host: per output element its value (element_bytes each), the slice it came
/// from (the plan's slice count where the rank holds none) and its assignment (rows of the reduced labels).
struct ArgmaxPart {
  std::vector<std::byte> values;
  std::vector<std::int64_t> won;
  std::vector<std::int64_t> assignment;

  /// Bytes of the packed form (gathered as one array): values padded to 8 bytes, won, assignment.
  static std::size_t packed_bytes(const detail::EinsumProgram& plan, std::size_t element_bytes);
  void pack(const detail::EinsumProgram& plan, std::size_t element_bytes, std::byte* out) const;
  static ArgmaxPart unpack(const detail::EinsumProgram& plan, std::size_t element_bytes, const std::byte* in);
};

/// Copies `bytes` from memory the backend wrote (after its queued work) to the host.
using ToHost = std::function<void(void* dst, const void* src, std::size_t bytes)>;

/// Runs the slices of `range` with their argmax on backend into output (merged as run_slices merges them, the
/// semiring zero `zero` where the range holds none) and returns the rank's part. workspace: argmax_bytes of the
/// plan's program.
ArgmaxPart argmax_part(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                       einsum_detail::Backend& backend, const ToHost& to_host, std::span<const void* const> operands,
                       void* output, void* workspace, einsum_detail::SliceRange range, const void* zero);

/// The parts of ranks 0 .. count-1 merged: at each element the best value and, among equal values, the part
/// whose slice is smallest; its value, slice and assignment.
ArgmaxPart merge_argmax(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels,
                        std::span<const ArgmaxPart> parts);

}  // namespace tropical::distributed_detail
