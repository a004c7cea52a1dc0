#pragma once

// The library's strided copy on the device (the einsum's permutes): the catalog's permute kernels
// (templates/permute.cu.j2), one per element width, with the axes merged and ordered on the host first.

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tropical/kernel_args.hpp"

namespace tropical::detail {

inline constexpr int kMaxPermuteRank = 8;

/// A strided copy: dst at index (i_0..i_{rank-1}) = src at that index, each side with its own element strides.
/// (The permute kernels' parameter struct, generated from codegen/spec.py: int rank; std::int64_t size[8],
/// src_stride[8], dst_stride[8].)
using StridedCopy = catalog::StridedCopy;
static_assert(sizeof(StridedCopy::size) == kMaxPermuteRank * sizeof(std::int64_t), "one rank limit");

/// Runs the copy on `stream` of the current context's device for elements of `element_bytes` (1, 2, 4 or 8); throws
/// tropical::InvalidArgument on a bad rank/size/stride; dst must not overlap src.
void permute(std::size_t element_bytes, const void* src, void* dst, const StridedCopy& copy, CUstream stream);

/// What permute() launches for a copy: the same copy with size-1 axes dropped, axes contiguous on both sides merged,
/// the source's fastest axis first and, if the destination's fastest is another (tiled), that one second.
struct PermuteLaunch {
  StridedCopy copy;
  bool tiled;
  std::int64_t elements;  // 0: nothing to launch
};

/// The launch of `copy`; throws InvalidArgument on a rank outside [0, kMaxPermuteRank], a negative size or stride,
/// offsets past 64 bits, or destination strides that write one element twice (each destination axis must step
/// past every faster one). Needs no device.
PermuteLaunch permute_launch(const StridedCopy& copy);

/// The blocks of work of the permute kernel of `element_bytes` over `plan` (its tiles, or its runs of plain copy):
/// its grid, or what it loops over where that is more than a grid holds.
std::int64_t permute_blocks(const PermuteLaunch& plan, std::size_t element_bytes);

}  // namespace tropical::detail
