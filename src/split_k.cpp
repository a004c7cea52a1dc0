// Split k's plan and launch (src/split_k.hpp).
#include "split_k.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "tropical/catalog.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
namespace {

/// What a part costs beyond its share of the k loop, in k-steps: its first k-tile's load, its partial's store
/// and the merge (H200, lab: f32 8192^3 with 3 split rows ran best at 4 parts, int16 at 4).
constexpr double kPartOverheadSteps = 8;
constexpr std::array<int, 11> kPartCounts = {2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
static_assert(kPartCounts.back() == kMaxSplitParts);
constexpr std::int64_t kTicketAlign = 256;  // templates/gemm_split.cu.j2's kSplitTicketAlign
constexpr std::int64_t kMaxGridRows = 65535;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Blocks of `function` the device runs at once (its SMs times the blocks an SM holds), cached per function.
std::int64_t slots(CUfunction function, int device, const jit::LaunchShape& launch) {
  static std::mutex mutex;
  static std::unordered_map<CUfunction, std::int64_t> known;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(function); it != known.end()) return it->second;
  }
  const auto& api = jit::driver::api();
  int per_sm = 0, sms = 0;
  std::int64_t n = 0;
  if (api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function,
                                                      static_cast<int>(launch.block_x * launch.block_y),
                                                      launch.smem_bytes) == CUDA_SUCCESS &&
      api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) == CUDA_SUCCESS) {
    n = std::int64_t{per_sm} * sms;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  known.emplace(function, n);
  return n;
}

std::atomic<std::uint64_t> g_split_launches{0};
std::atomic<std::uint64_t> g_last_plan{0};  // whole_rows << 8 | parts: one load reads one launch's plan

/// The library's own stream-ordered pool for split workspaces on `device`, which keeps up to kMaxSplitWorkBytes
/// reserved between calls (the device's default pool, whose release threshold is 0 unless its owner set one,
/// may map memory on every call); created once, kept for the process; nullptr where the driver will not make one.
CUmemoryPool workspace_pool(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, CUmemoryPool> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = pools.find(device); it != pools.end()) return it->second;
  const auto& api = jit::driver::api();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool = nullptr;
  if (api.cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS) {
    cuuint64_t keep = kMaxSplitWorkBytes;
    api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  } else {
    pool = nullptr;
  }
  pools.emplace(device, pool);
  return pool;
}

}  // namespace

SplitPlan plan_split(const SplitShape& s) {
  if (s.slots <= 0 || s.tile_rows <= 0 || s.tile_cols <= 0 || s.k_tiles < 2 * kMinPartSteps) return {};
  const double slots = static_cast<double>(s.slots), k_tiles = static_cast<double>(s.k_tiles);
  // In units of one whole tile's time: the unsplit grid ends with its last wave.
  double best = std::ceil(static_cast<double>(s.tile_rows * s.tile_cols) / slots) * 0.99;
  SplitPlan plan;
  for (std::int64_t split_rows = 1; split_rows <= s.tile_rows; ++split_rows) {
    const auto whole = static_cast<double>((s.tile_rows - split_rows) * s.tile_cols);
    const double whole_end = std::ceil(whole / slots);  // the whole tiles end with their last wave
    if (whole_end >= best) continue;
    // Workspaces only grow with the rows split: past the cap at the fewest parts, no plan is left.
    if (split_work_bytes({s.tile_rows - split_rows, kPartCounts.front()}, s) > kMaxSplitWorkBytes) break;
    for (const int parts : kPartCounts) {
      const SplitPlan candidate{s.tile_rows - split_rows, parts};
      if (parts * kMinPartSteps > s.k_tiles || split_rows * parts > kMaxGridRows ||
          split_work_bytes(candidate, s) > kMaxSplitWorkBytes) {
        continue;
      }
      // The parts fill the slots as they free up (the whole tiles started first): the work over the slots,
      // and half a part for the last ones to finish.
      const double part = (k_tiles / parts + kPartOverheadSteps) / k_tiles;
      const double split_work = static_cast<double>(split_rows * s.tile_cols) * parts * part;
      const double end = s.overlap ? std::max(whole_end, (whole + split_work) / slots + part / 2)
                                   : whole_end + split_work / slots + part / 2;
      if (end < best) {
        best = end;
        plan = candidate;
      }
    }
  }
  return plan;
}

std::uint64_t split_launches() { return g_split_launches.load(std::memory_order_relaxed); }

SplitPlan last_split_plan() {
  const std::uint64_t packed = g_last_plan.load(std::memory_order_relaxed);
  return {static_cast<std::int64_t>(packed >> 8), static_cast<int>(packed & 0xff)};
}

std::size_t split_work_bytes(const SplitPlan& plan, const SplitShape& s) {
  const std::int64_t split_tiles = (s.tile_rows - plan.whole_rows) * s.tile_cols;
  const std::int64_t tickets = ceil_div(split_tiles * 4, kTicketAlign) * kTicketAlign;
  return static_cast<std::size_t>(tickets) +
         static_cast<std::size_t>(split_tiles) * static_cast<std::size_t>(plan.parts) * s.tile_bytes;
}

bool launch_gemm_split(catalog::KernelId id, const Served& served, int device, const Extent& e, CUstream stream,
                       catalog::GemmArgs& args, std::size_t elem_size) {
  const jit::Resolved& kernel = *served.kernel;
  const auto& info = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  if (kernel.tier != jit::Tier::kTuned || info.tile_k == 0 || e.k <= 0) return false;
  const auto& api = jit::driver::api();
  jit::driver::ScopedContext context(device);
  const SplitShape shape{served.grid.y, served.grid.x, ceil_div(e.k, info.tile_k),
                         slots(kernel.function, device, kernel.launch),
                         std::size_t{kernel.launch.tile_m} * kernel.launch.tile_n * elem_size,
                         jit::driver::device_arch(device) >= 90};
  const SplitPlan plan = plan_split(shape);
  if (plan.parts == 0) return false;
  // A graph being captured gets the plain launch: no stream-ordered allocation in the user's graph.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    return false;
  }
  // The split kernel, if compiled: else the product runs unsplit while it compiles in the background.
  catalog::KernelId split_id{};
  if (!catalog::split_kernel(id, &split_id)) return false;
  const jit::Resolved* split = registry().kernel_if_ready(static_cast<std::uint32_t>(split_id), device);
  if (split == nullptr) return false;
  CUdeviceptr work = 0;
  const std::size_t bytes = split_work_bytes(plan, shape);
  const CUmemoryPool pool = workspace_pool(device);
  if ((pool != nullptr ? api.cuMemAllocFromPoolAsync(&work, bytes, pool, stream)
                       : api.cuMemAllocAsync(&work, bytes, stream)) != CUDA_SUCCESS) {
    return false;
  }
  try {
    const std::int64_t split_tiles = (shape.tile_rows - plan.whole_rows) * shape.tile_cols;
    jit::driver::check(api.cuMemsetD32Async(work, 0, static_cast<std::size_t>(split_tiles), stream),
                       "cuMemsetD32Async");
    args.work = reinterpret_cast<void*>(work);
    args.whole_rows = plan.whole_rows;
    args.parts = plan.parts;
    auto pointers = args.pointers();
    if (plan.whole_rows > 0) {
      launch_function(kernel.function, Grid{served.grid.x, static_cast<unsigned>(plan.whole_rows), 1},
                      kernel.launch, stream, pointers.data());
    }
    // The split rows may start as the whole rows' last blocks start (programmatic stream serialization,
    // sm_90 on): they write other tiles of C and read nothing the kernel writes; the split grid's last block
    // waits for the kernel (griddepcontrol.wait), so the grid ends only after it, and what follows on the
    // stream comes after both.
    launch_function(split->function,
                    Grid{served.grid.x, static_cast<unsigned>((shape.tile_rows - plan.whole_rows) * plan.parts), 1},
                    split->launch, stream, pointers.data(), plan.whole_rows > 0 && shape.overlap);
    jit::driver::check(api.cuMemFreeAsync(work, stream), "cuMemFreeAsync");
    static_assert(kMaxSplitParts < 256, "parts fit the packed plan's low byte");
    g_last_plan.store(static_cast<std::uint64_t>(plan.whole_rows) << 8 | static_cast<std::uint64_t>(plan.parts),
                      std::memory_order_relaxed);
    g_split_launches.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    api.cuMemFreeAsync(work, stream);
    throw;
  }
  return true;
}

}  // namespace tropical::detail
