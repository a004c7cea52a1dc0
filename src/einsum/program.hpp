#pragma once

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "network.hpp"
#include "tree.hpp"
#include "tropical/einsum.hpp"

namespace tropical::einsum_detail {

/// Where a step reads or writes: an operand (at an element offset plus, per sliced label it holds, the
/// slice's index times its stride), the workspace, the result of a slice (the output for the first slice, a
/// part of the workspace merged into it for the others), or the workspace's semiring ones.
enum class Space : std::uint8_t { kOperand, kWorkspace, kResult, kOnes };

struct Where {
  Space space = Space::kWorkspace;
  int operand = 0;
  std::int64_t offset = 0;                          ///< elements
  std::vector<std::pair<int, std::int64_t>> fixed;  ///< (sliced label's ordinal, its stride) of an operand
};

/// dst[i] = src[i] over a box of `size` (any rank, coalesced; rank 0: one element), strides in elements.
struct CopyStep {
  Where src, dst;
  std::vector<std::int64_t> size, src_stride, dst_stride;
};

/// One batched product C[p] = op(A[p]) (x) op(B[p]) (gemm_batched's arguments).
struct ProductStep {
  Where a, b, c;
  Trans ta = Trans::kNo, tb = Trans::kNo;
  std::int64_t m = 1, n = 1, k = 1, lda = 1, ldb = 1, ldc = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0, batch = 1;
  std::int64_t argmax =
      -1;  ///< in argmax mode, where its argmax goes (int32 elements into the argmax region)
};

using Step = std::variant<CopyStep, ProductStep>;

/// A reduction the argmax traceback reads: the labels of its result (the argmax's row-major layout), the
/// labels it reduced (the winning k unravelled over them, row-major) and where its argmax is.
struct TraceNode {
  std::vector<int> labels, contracted;
  std::int64_t argmax = 0;
};

/// The steps of one slice, made from a network, its tree and its sliced labels
/// (python/tropical/_einsum_exec.py's classification, made once): each operand's diagonals and sliced labels
/// as a strided view, its private labels reduced by a product with a column of ones, every pairwise
/// contraction as one batched product of views (row- or column-major) or of copies, the root copied into the
/// output's order unless the last product already writes it so. Workspace offsets come from a first-fit arena
/// over the steps' lifetimes.
struct Program {
  std::vector<Step> steps;
  std::vector<int> sliced;                  ///< the sliced labels, in label order (their ordinals)
  std::vector<std::int64_t> slice_extents;  ///< per sliced label
  std::int64_t workspace_elements = 0;
  std::int64_t ones_count = 0;    ///< ones at workspace offset 0
  std::int64_t part_offset = -1;  ///< where slices after the first put their result (-1: one slice)
  std::vector<TraceNode> trace;   ///< every reduction, each after the one whose result holds it
  std::int64_t argmax_count = 0;  ///< int32 elements of the argmax region (after the workspace)
};

/// The program of `tree` over `net` with the labels of `sliced` sliced.
Program compile(const Network& net, const Problem& problem, const Tree& tree, const Mask& sliced);

/// Where the argmax region starts (bytes from the workspace's start): after the workspace, 256-byte aligned.
inline std::size_t argmax_region(const Program& program, std::size_t element_bytes) {
  return (static_cast<std::size_t>(program.workspace_elements) * element_bytes + 255) / 256 * 256;
}

/// The bytes an argmax run's workspace needs: the workspace, then every step's argmax (int32) from argmax_region.
inline std::size_t argmax_bytes(const Program& program, std::size_t element_bytes) {
  return argmax_region(program, element_bytes) + static_cast<std::size_t>(program.argmax_count) * sizeof(std::int32_t);
}

/// Where a CountingTropical run's merge region starts (bytes from the workspace's start): after the values' and
/// the counts' workspaces (workspace_elements each), 256-byte aligned.
inline std::size_t counting_merge_region(const Program& program, std::size_t element_bytes) {
  return (2 * static_cast<std::size_t>(program.workspace_elements) * element_bytes + 255) / 256 * 256;
}

/// Elements of one array's merge region in a device CountingTropical run of a sliced program (0 for one slice):
/// a row of two ones, then the output so far and the slice's part, a 2 x output_size matrix that one counting
/// product by the row merges (the larger value, the counts of equal ones summed).
inline std::int64_t counting_merge_elements(const Program& program, std::int64_t output_size) {
  return program.part_offset >= 0 ? 2 + 2 * output_size : 0;
}

/// Bytes from one array's merge region to the next (the counts' after the values'), 256-byte aligned.
inline std::size_t counting_merge_pitch(const Program& program, std::int64_t output_size, std::size_t element_bytes) {
  return (static_cast<std::size_t>(counting_merge_elements(program, output_size)) * element_bytes + 255) / 256 * 256;
}

/// The bytes a CountingTropical run's workspace needs: values and counts (workspace_elements each), then for a
/// sliced program the merge regions of both from counting_merge_region.
inline std::size_t counting_bytes(const Program& program, std::int64_t output_size, std::size_t element_bytes) {
  const std::size_t pitch = counting_merge_pitch(program, output_size, element_bytes);
  if (pitch == 0) return 2 * static_cast<std::size_t>(program.workspace_elements) * element_bytes;
  return counting_merge_region(program, element_bytes) + 2 * pitch;
}

/// The box with size-1 axes dropped and neighbouring axes merged where both strides allow.
void coalesce(CopyStep& copy);

}  // namespace tropical::einsum_detail

namespace tropical::detail {

/// A plan: the checked network, what the planner found, and the program that runs it.
struct EinsumProgram {
  einsum_detail::Network network;
  EinsumInfo info;
  std::vector<std::int64_t> output_shape;
  std::int64_t output_size = 1;
  einsum_detail::Program program;
};

}  // namespace tropical::detail
