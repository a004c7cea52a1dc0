#pragma once

#include <cstdint>
#include <vector>

#include "program.hpp"

namespace tropical::einsum_detail {

/// One launch's part of a strided copy: at most kMaxBoxRank axes (rank >= 1), starting at element offsets of
/// the copy's source and destination.
inline constexpr int kMaxBoxRank = 32;  // the permute kernel's (src/permute.hpp; checked in device_backend.cpp)

struct Box {
  std::int64_t src_offset = 0, dst_offset = 0;
  int rank = 1;
  std::int64_t size[kMaxBoxRank] = {1}, src_stride[kMaxBoxRank] = {1}, dst_stride[kMaxBoxRank] = {1};
};

/// The copy as boxes of at most max_rank axes (<= kMaxBoxRank): itself when it has that few (rank 0: one
/// element as a box of one), else one box per index of its leading axes (rare once coalesced: a device launch
/// each).
std::vector<Box> split(const CopyStep& copy, int max_rank = kMaxBoxRank);

}  // namespace tropical::einsum_detail
