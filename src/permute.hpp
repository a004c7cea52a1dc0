#pragma once

// The library's strided copy on the device (the einsum's permutes): the catalog's permute kernels
// (templates/permute.cu.j2), one per element width, with the axes merged and ordered on the host first.

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tropical/kernel_args.hpp"

namespace tropical::detail {

inline constexpr int kMaxPermuteRank = 32;

/// A strided copy: dst at index (i_0..i_{rank-1}) = src at that index, each side with its own element strides.
/// (The permute kernels' parameter struct, generated from codegen/spec.py: int rank, inner; std::int64_t size[32],
/// src_stride[32], dst_stride[32]; `inner` is the launch's, ignored on input.)
using StridedCopy = catalog::StridedCopy;
static_assert(sizeof(StridedCopy::size) == kMaxPermuteRank * sizeof(std::int64_t), "one rank limit");

/// Runs the copy on `stream` of the current context's device for elements of `element_bytes` (1, 2, 4 or 8); throws
/// tropical::InvalidArgument on a bad rank/size/stride; dst must not overlap src (not checked).
void permute(std::size_t element_bytes, const void* src, void* dst, const StridedCopy& copy, CUstream stream);

/// How the permute kernel walks a copy (its `mode` argument).
enum class PermuteMode : int { kPlain = 0, kTiled = 1, kBoxed = 2 };

/// What permute() launches for a copy: the same copy with size-1 axes dropped and axes contiguous on both sides
/// merged, then (tiled) the source's fastest axis first, the destination's second, where they differ and both are
/// at least PermuteGeometry::kMinTiledAxis long; else (plain) the destination's fastest first, the source's second,
/// where the destination's fastest is a run of at least kMinPlainRun elements of the source too; else (boxed)
/// axes 0..inner-1 a box of whole short axes (the destination's and the source's fastest taken in turn, the first
/// that does not fit split; listed fastest first on the destination), the others after them.
struct PermuteLaunch {
  StridedCopy copy;
  PermuteMode mode;
  std::int64_t elements;  // 0: nothing to launch
};

/// The launch of `copy`; throws InvalidArgument on a rank outside [0, kMaxPermuteRank], a negative size or stride,
/// offsets past 64 bits, or destination strides that write one element twice (each destination axis must step
/// past every faster one). Needs no device.
PermuteLaunch permute_launch(const StridedCopy& copy);

/// The blocks of work of the permute kernel of `element_bytes` over `plan` (its tiles, runs of plain copy or
/// boxes): its grid, or what it loops over where that is more than a grid holds.
std::int64_t permute_blocks(const PermuteLaunch& plan, std::size_t element_bytes);

}  // namespace tropical::detail
