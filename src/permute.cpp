// The strided copy (src/permute.hpp): the axes merged and ordered on the host, one launch of the catalog's
// permute kernel of the element's width.
#include "permute.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "launch.hpp"
#include "spans.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
namespace {

struct Axis {
  std::int64_t size, src, dst;
};

/// Rejects a stride pattern whose largest offset overflows 64 bits (`side` names it); returns that offset.
std::int64_t last_offset(const Axis* axes, int rank, std::int64_t Axis::*stride, const char* side) {
  std::int64_t last = 0;
  for (int a = 0; a < rank; ++a) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(axes[a].size - 1, axes[a].*stride, &step) || __builtin_add_overflow(last, step, &last)) {
      invalid(std::string("permute: the ") + side + " offsets overflow 64 bits");
    }
  }
  return last;
}

/// Rejects destination strides under which two indices write one element: sorted by stride, each axis must step
/// past the last offset of all the faster ones (axes of size 1 are dropped already).
void check_destination_disjoint(Axis* axes, int rank) {
  // Insertion sort by destination stride: at most kMaxPermuteRank axes.
  for (int a = 1; a < rank; ++a) {
    for (int b = a; b > 0 && axes[b].dst < axes[b - 1].dst; --b) std::swap(axes[b], axes[b - 1]);
  }
  std::int64_t reach = 0;  // the last offset of the axes so far
  for (int a = 0; a < rank; ++a) {
    if (axes[a].dst <= reach) {
      invalid("permute: the destination strides write one element twice (stride " + std::to_string(axes[a].dst) +
              " over an axis of size " + std::to_string(axes[a].size) + " within the reach of the faster axes)");
    }
    reach += (axes[a].size - 1) * axes[a].dst;
  }
}

/// The boxed mode's axes: the copy's, with at most one of them split in two, and which of them form the box.
struct BoxChoice {
  Axis axes[kMaxPermuteRank];
  bool inner[kMaxPermuteRank];
  int rank;
  std::int64_t box;  // elements
};

/// True if the box's own offsets (from its first element) stay below 2^31 on both sides: the kernel holds them
/// as 32-bit integers.
bool box_offsets_fit(const BoxChoice& b) {
  std::int64_t src = 0, dst = 0;
  for (int a = 0; a < b.rank; ++a) {
    if (!b.inner[a]) continue;
    src += (b.axes[a].size - 1) * b.axes[a].src;
    dst += (b.axes[a].size - 1) * b.axes[a].dst;
  }
  return src < (std::int64_t{1} << 31) && dst < (std::int64_t{1} << 31);
}

/// The largest divisor of `size` that is at most `most` (1 if none above 1).
std::int64_t largest_divisor(std::int64_t size, std::int64_t most) {
  for (std::int64_t c = std::min(size, most); c > 1; --c) {
    if (size % c == 0) return c;
  }
  return 1;
}

/// The smallest divisor of `size` that is at least `least` (size itself if none smaller).
std::int64_t smallest_divisor(std::int64_t size, std::int64_t least) {
  for (std::int64_t c = std::max<std::int64_t>(least, 2); c < size; ++c) {
    if (size % c == 0) return c;
  }
  return size;
}

/// The contiguous run a box should cover on each side before it grows otherwise: 32 elements, whole 32-byte
/// sectors for every width (a box of runs of 2 reads a quarter of each sector it touches, the rest of it later).
constexpr std::int64_t kRun = 32;

/// Splits axis `a` into (outer, part), `part` a divisor of its size: the part stepping as the axis did, the outer
/// part, appended, `part` times as far and in the box where the axis is; false (nothing changed) where the rank
/// allows no other axis. A part of the whole size changes nothing.
bool split(BoxChoice& b, int a, std::int64_t part) {
  Axis& x = b.axes[a];
  if (part == x.size) return true;
  if (b.rank == kMaxPermuteRank) return false;
  b.inner[b.rank] = b.inner[a];
  b.axes[b.rank++] = Axis{x.size / part, x.src * part, x.dst * part};
  x.size = part;
  return true;
}

/// Puts `part` elements of axis `next` (a divisor of its size) in the box: the whole axis, or its inner part where
/// the rank allows a split; false where it does not.
bool take(BoxChoice& b, int next, std::int64_t part) {
  if (!split(b, next, part)) return false;
  b.inner[next] = true;
  b.box *= part;
  return true;
}

/// The contiguous run of the side's elements (0: the destination's, 1: the source's) that the box covers: the
/// product of its axes that each step exactly past the ones before, from stride 1.
std::int64_t covered_run(const BoxChoice& b, int side) {
  std::int64_t run = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (int a = 0; a < b.rank; ++a) {
      if (b.inner[a] && (side == 0 ? b.axes[a].dst : b.axes[a].src) == run && b.axes[a].size > 1) {
        run *= b.axes[a].size;
        grew = true;
      }
    }
  }
  return run;
}

/// The side's fastest axis not in the box (ties: the larger), or -1.
int fastest_outside(const BoxChoice& b, int side) {
  int next = -1;
  for (int a = 0; a < b.rank; ++a) {
    if (b.inner[a]) continue;
    const std::int64_t stride = side == 0 ? b.axes[a].dst : b.axes[a].src;
    const std::int64_t best = next < 0 ? 0 : side == 0 ? b.axes[next].dst : b.axes[next].src;
    if (next < 0 || stride < best || (stride == best && b.axes[a].size > b.axes[next].size)) next = a;
  }
  return next;
}

/// The box of at most `limit` elements over `axes` (`rank` of them). First, in turn, the destination's and the
/// source's fastest axes while they extend that side's contiguous run and it is shorter than kRun (an axis
/// longer than the run needs split, the smallest divisor that reaches it taken), so that the box reads and
/// writes whole sectors on both sides; then, in turn, each side's fastest axes not yet in it, whole while they
/// fit, the first that does not fit split (the largest divisor that fits taken), which fills that side's share.
BoxChoice choose_box(const Axis* axes, int rank, std::int64_t limit) {
  BoxChoice b{};
  std::copy(axes, axes + rank, b.axes);
  b.rank = rank;
  b.box = 1;
  bool open[2] = {true, true};  // the destination's side, the source's
  while (open[0] || open[1]) {
    for (int side = 0; side < 2; ++side) {
      if (!open[side]) continue;
      const std::int64_t run = covered_run(b, side);
      const int next = fastest_outside(b, side);
      const Axis x = next < 0 ? Axis{} : b.axes[next];
      if (next < 0 || run >= kRun || (side == 0 ? x.dst : x.src) != run) {
        open[side] = false;
        continue;
      }
      std::int64_t part = smallest_divisor(x.size, (kRun + run - 1) / run);
      if (b.box * part > limit) {
        part = largest_divisor(x.size, limit / b.box);
        open[0] = open[1] = false;  // the box is as full as this axis lets it be
      }
      if (part < 2 || !take(b, next, part)) open[side] = false;
    }
  }
  open[0] = open[1] = true;
  while (open[0] || open[1]) {
    for (int side = 0; side < 2; ++side) {
      if (!open[side]) continue;
      const int next = fastest_outside(b, side);
      if (next < 0) {
        open[side] = false;
        continue;
      }
      if (b.box * b.axes[next].size <= limit) {
        take(b, next, b.axes[next].size);
        continue;
      }
      open[side] = false;
      const std::int64_t part = largest_divisor(b.axes[next].size, limit / b.box);
      if (part >= 2) take(b, next, part);
    }
  }
  return b;
}

/// How many elements of each side's run (the destination's, the source's) consecutive threads take first: with
/// 16 of the destination's, then 2 of the source's, a warp stores two 64-byte pieces and loads 16 pairs (the
/// destination's order alone loaded 32 scattered elements a warp: the n = 200 einsum's copies 5 % slower, eight
/// shuffled axes 1.7 against 2.8 TB/s in tools' lab).
constexpr std::int64_t kLaneRun[2] = {16, 2};

/// The box's axes (b.inner, in place: an axis longer than a lane run needs is split where the rank allows) in the
/// kernel's order of its threads, into `order`: the destination's run up to kLaneRun[0] elements, the source's up
/// to kLaneRun[1], then the others fastest first on the destination. Returns how many (the launch's inner).
int lane_order(BoxChoice& b, Axis* order) {
  bool taken[kMaxPermuteRank] = {};
  int n = 0;
  for (int side = 0; side < 2; ++side) {
    std::int64_t run = 1, lanes = 1;  // the side's run walked so far; the part of it the lanes took
    while (lanes < kLaneRun[side]) {
      int next = -1;
      for (int a = 0; a < b.rank && next < 0; ++a) {
        if (b.inner[a] && b.axes[a].size > 1 && (side == 0 ? b.axes[a].dst : b.axes[a].src) == run) next = a;
      }
      if (next < 0) break;
      if (!taken[next]) {
        const std::int64_t need = (kLaneRun[side] + lanes - 1) / lanes;
        split(b, next, smallest_divisor(b.axes[next].size, need));  // at the rank limit: the whole axis
        taken[next] = true;
        order[n++] = b.axes[next];
      }
      lanes *= b.axes[next].size;
      run *= b.axes[next].size;
    }
  }
  const int first = n;
  for (int a = 0; a < b.rank; ++a) {
    if (b.inner[a] && !taken[a]) order[n++] = b.axes[a];
  }
  std::sort(order + first, order + n, [](const Axis& x, const Axis& y) { return x.dst < y.dst; });
  return n;
}

}  // namespace

PermuteLaunch permute_launch(const StridedCopy& copy) {
  if (copy.rank < 0 || copy.rank > kMaxPermuteRank) {
    invalid("permute: rank " + std::to_string(copy.rank) + " is outside [0, " + std::to_string(kMaxPermuteRank) + "]");
  }
  Axis axes[kMaxPermuteRank] = {};
  int rank = 0;
  std::int64_t elements = 1;
  for (int a = 0; a < copy.rank; ++a) {
    const Axis x{copy.size[a], copy.src_stride[a], copy.dst_stride[a]};
    if (x.size < 0 || x.src < 0 || x.dst < 0) {
      invalid("permute: axis " + std::to_string(a) + " has a negative size or stride (size " + std::to_string(x.size) +
              ", strides " + std::to_string(x.src) + " and " + std::to_string(x.dst) + ")");
    }
    if (__builtin_mul_overflow(elements, x.size, &elements)) invalid("permute: the element count overflows 64 bits");
    if (x.size != 1) axes[rank++] = x;
  }
  PermuteLaunch out{};
  out.elements = elements;
  if (elements == 0) return out;
  last_offset(axes, rank, &Axis::src, "source");
  last_offset(axes, rank, &Axis::dst, "destination");
  check_destination_disjoint(axes, rank);
  // Slowest destination axis first (as sorted, reversed); an axis merges into the next faster one where it steps
  // exactly past it on both sides.
  std::reverse(axes, axes + rank);
  int merged = 0;
  for (int a = 0; a < rank; ++a) {
    if (merged > 0) {
      Axis& outer = axes[merged - 1];
      const Axis& inner = axes[a];
      if (outer.src == inner.src * inner.size && outer.dst == inner.dst * inner.size) {
        outer = Axis{outer.size * inner.size, inner.src, inner.dst};
        continue;
      }
    }
    axes[merged++] = axes[a];
  }
  rank = merged;
  if (rank == 0) axes[rank++] = Axis{1, 1, 1};  // one element
  // Axis 0: the source's fastest (ties: the larger); the destination's fastest is the last, as sorted.
  int fast_src = 0;
  for (int a = 1; a < rank; ++a) {
    if (axes[a].src < axes[fast_src].src || (axes[a].src == axes[fast_src].src && axes[a].size > axes[fast_src].size)) {
      fast_src = a;
    }
  }
  const int fast_dst = rank - 1;
  // Tiles where the two fastest axes differ and both fill a good part of a tile; else a plain copy along the
  // destination's fastest (coalesced writes; with the source's fastest next, so that the blocks reading the rest
  // of the source's runs follow close behind).
  using G = catalog::PermuteGeometry;
  const bool tiled = fast_src != fast_dst && std::min(axes[fast_src].size, axes[fast_dst].size) >= G::kMinTiledAxis;
  Axis order[kMaxPermuteRank] = {};
  int n = 0;
  // Plain copies runs of the destination's fastest axis: good where that axis is a long run of the source too
  // (whole sectors read and written, several loads in flight a thread). Else a box, unless none fills a quarter.
  using B = catalog::PermuteBoxedGeometry;
  constexpr std::int64_t kBox = B::kBoxPerThread * B::kBlockX * B::kBlockY;
  static_assert(B::kBlockY == 1, "templates/permute_boxed.cu.j2 indexes its threads by x alone: a box of more "
                                 "than kBoxPerThread x kBlockX elements would go partly uncopied");
  const bool plain_runs = rank == 1 || (axes[fast_dst].src == 1 && axes[fast_dst].size >= G::kMinPlainRun);
  BoxChoice box{};
  if (!tiled && !plain_runs) box = choose_box(axes, rank, kBox);
  if (box.box >= std::min(kBox / 4, elements) && box.box > 1 && box_offsets_fit(box)) {
    // Boxed: the box's axes in the threads' order (lane_order), then the others fastest first on the destination.
    out.mode = PermuteMode::kBoxed;
    n = lane_order(box, order);
    out.copy.inner = n;
    const int first = n;
    for (int a = 0; a < box.rank; ++a) {
      if (!box.inner[a]) order[n++] = box.axes[a];
    }
    std::sort(order + first, order + n, [](const Axis& x, const Axis& y) { return x.dst < y.dst; });
  } else {
    // Tiles where the two fastest axes differ and both fill a good part of a tile; else a plain copy along the
    // destination's fastest (coalesced writes; with the source's fastest next, so that the blocks reading the rest
    // of the source's runs follow close behind).
    out.mode = tiled ? PermuteMode::kTiled : PermuteMode::kPlain;
    const int first = tiled ? fast_src : fast_dst, second = tiled ? fast_dst : fast_src;
    // The kernel's order: those two, then the others fastest first on the destination, so that consecutive blocks
    // write near each other.
    order[n++] = axes[first];
    if (second != first) order[n++] = axes[second];
    for (int a = rank - 1; a >= 0; --a) {
      if (a != first && a != second) order[n++] = axes[a];
    }
  }
  out.copy.rank = n;
  for (int a = 0; a < kMaxPermuteRank; ++a) {
    const Axis x = a < n ? order[a] : Axis{1, 0, 0};
    out.copy.size[a] = x.size;
    out.copy.src_stride[a] = x.src;
    out.copy.dst_stride[a] = x.dst;
  }
  return out;
}

std::int64_t permute_blocks(const PermuteLaunch& plan, std::size_t element_bytes) {
  using G = catalog::PermuteGeometry;
  // The template's kPlain: plain_bytes, at most 8 elements a thread.
  const std::int64_t plain =
      std::min<std::int64_t>(G::kPlainBytes / static_cast<std::int64_t>(element_bytes), 8 * G::kBlockX * G::kBlockY);
  const StridedCopy& c = plan.copy;
  const std::int64_t n0 = c.size[0], n1 = c.rank > 1 ? c.size[1] : 1;
  std::int64_t blocks = 1;
  if (plan.mode == PermuteMode::kBoxed) {
    for (int a = c.inner; a < c.rank; ++a) blocks *= c.size[a];
    return blocks;
  }
  if (plan.mode == PermuteMode::kTiled) {
    blocks = ((n0 + G::kTileN - 1) / G::kTileN) * ((n1 + G::kTileM - 1) / G::kTileM);
  } else {
    const std::int64_t w = std::min(n0, plain), rows = plain / w;
    blocks = ((n0 + w - 1) / w) * ((n1 + rows - 1) / rows);
  }
  for (int a = 2; a < c.rank; ++a) blocks *= c.size[a];  // at most the element count: no overflow
  return blocks;
}

namespace {

/// Launches device op O's kernel of the element width `element_bytes` (1, 2, 4 or 8: one kernel a width).
template <Op O, class Args>
void launch_width(std::size_t element_bytes, CUdevice device, const Grid& grid, CUstream stream, Args& args) {
  switch (element_bytes) {
    case 1: launch_device_op<O, std::uint8_t>(device, grid, stream, args); break;
    case 2: launch_device_op<O, std::int16_t>(device, grid, stream, args); break;
    case 4: launch_device_op<O, std::int32_t>(device, grid, stream, args); break;
    default: launch_device_op<O, std::int64_t>(device, grid, stream, args); break;
  }
}

}  // namespace

void permute(std::size_t element_bytes, const void* src, void* dst, const StridedCopy& copy, CUstream stream) {
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 && element_bytes != 8) {
    invalid("permute: element_bytes = " + std::to_string(element_bytes) + " is not 1, 2, 4 or 8");
  }
  const PermuteLaunch plan = permute_launch(copy);
  if (plan.elements == 0) return;
  if (src == nullptr || dst == nullptr) invalid("permute: null src or dst");
  const auto& api = jit::driver::api();
  CUdevice device = 0;
  if (api.cuCtxGetDevice(&device) != CUDA_SUCCESS) invalid("permute: no current CUDA context");
  // Boxed: at most kBoxBlocksPerSm blocks an SM, each locating its threads' elements of the box once for the run
  // of boxes it copies. Else one tile (or run) a block; past 2^31 - 1 blocks the kernel loops.
  const bool boxed = plan.mode == PermuteMode::kBoxed;
  std::int64_t cap = 0x7fffffff;
  if (boxed) cap = std::int64_t{multiprocessors(device)} * catalog::PermuteBoxedGeometry::kBoxBlocksPerSm;
  const Grid grid{static_cast<unsigned>(std::min(permute_blocks(plan, element_bytes), cap)), 1, 1};
  if (boxed) {
    catalog::PermuteBoxedArgs args{.src = src, .dst = dst, .copy = plan.copy};
    launch_width<Op::kPermuteBoxed>(element_bytes, device, grid, stream, args);
    return;
  }
  catalog::PermuteArgs args{.src = src, .dst = dst, .copy = plan.copy, .mode = static_cast<int>(plan.mode)};
  launch_width<Op::kPermute>(element_bytes, device, grid, stream, args);
}

}  // namespace tropical::detail
