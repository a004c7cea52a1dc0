#pragma once

// Which slices each rank contracts: python/tropical/distributed.py's rule, slice s to rank s mod size, so that
// the C++ and the Python runs of one plan deal alike.

#include <cstdint>

#include "../einsum/run.hpp"

namespace tropical::distributed_detail {

/// The slices of rank `rank` of `size` (0 <= rank < size): every size-th from rank.
inline einsum_detail::SliceRange deal(int rank, int size) { return {rank, size}; }

/// How many ranks of `size` hold at least one of `slices` slices (the first ones): the rows a merge of every
/// rank's result needs (the others hold the semiring zero).
inline std::int64_t holders(std::int64_t slices, int size) { return slices < size ? slices : size; }

}  // namespace tropical::distributed_detail
