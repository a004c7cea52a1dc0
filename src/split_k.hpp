// Split k: a tuned gemm whose tiles leave the device's last wave partly empty
// (or do not fill one wave) computes its last rows of tiles with k split over
// several blocks each (templates/gemm_split.cu.j2), so that the small parts fill
// the slots the whole tiles leave. The plan is a pure function (tested on the
// CPU); launch_gemm_split() runs it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "launch.hpp"

namespace tropical::detail {

/// A product's tiles and the device's room for them.
struct SplitShape {
  std::int64_t tile_rows = 0, tile_cols = 0;  ///< tiles of C along m and n
  std::int64_t k_tiles = 0;                   ///< steps of the k loop (k / tile_k, rounded up)
  std::int64_t slots = 0;                     ///< blocks the device runs at once
  std::size_t tile_bytes = 0;                 ///< one tile of C's elements
  bool overlap = true;  ///< the split kernel may start as the kernel's last wave does (programmatic launch: sm_90 on)
};

/// Rows of tiles from whole_rows on are split, `parts` blocks a tile; parts 0: not split.
struct SplitPlan {
  std::int64_t whole_rows = 0;
  int parts = 0;
};

/// Most blocks one tile is split over, and fewest k-steps a part takes.
inline constexpr int kMaxSplitParts = 64;
inline constexpr std::int64_t kMinPartSteps = 8;
/// Largest workspace a split takes (stream-ordered, freed after the launch).
inline constexpr std::size_t kMaxSplitWorkBytes = std::size_t{64} << 20;

/// The split that ends the product soonest by a model of the block scheduler (blocks start in grid order on
/// free slots; without overlap, the split grid's only once the kernel has ended), or none where no split gains
/// 1 % on the unsplit grid's waves.
SplitPlan plan_split(const SplitShape& s);

/// Bytes of the plan's workspace: a ticket per split tile (padded to 256 bytes), then each part's tile.
std::size_t split_work_bytes(const SplitPlan& plan, const SplitShape& s);

/// Split launches made in this process (for tests: whether a product was split).
std::uint64_t split_launches();
/// The plan of the last split launch in this process (for tests: which of its two paths it took).
SplitPlan last_split_plan();

/// Launches a tuned gemm `served` (its argument struct `args`) split by its plan: the kernel on the whole rows,
/// then <name>_split on the others as its programmatic dependent, the workspace stream-ordered around them.
/// Returns false, having launched nothing, where the plan does not split, the stream is capturing a graph,
/// <name>_split is not compiled yet (its compile is then queued in the background) or the workspace cannot be
/// had; the caller then launches the product unsplit.
bool launch_gemm_split(catalog::KernelId id, const Served& served, int device, const Extent& e, CUstream stream,
                       catalog::GemmArgs& args, std::size_t elem_size);

}  // namespace tropical::detail
