// CountingTropical on device memory: counting.cpp's run queued on a stream. The value program runs on (values,
// counts) pairs, each array at the same offsets of its own region; copies by the permute kernel (one launch for
// both inside the workspace, else values then counts), products by gemm_batched_counting, the ones (0, 1) by
// fills. A slice after the first writes its part next to a copy of the output so far, and one counting product
// of a row of two ones by that 2 x output matrix merges them into the output on the device (the larger value,
// the counts of equal values summed: tropical.counting_einsum's merge), so that a run with a workspace is stream
// operations a CUDA graph captures.

#include <memory>

#include "device_backend.hpp"
#include "device_counting.hpp"
#include "tropical/counting.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace {

namespace driver = jit::driver;
using namespace einsum_detail;

template <class T>
CountingMatrix<const T> pair_at(const Memory& values, const Memory& counts, const Where& w, std::int64_t ld,
                                std::int64_t stride) {
  return {reinterpret_cast<const T*>(values.at(w)), ld, reinterpret_cast<const T*>(counts.at(w)), ld, stride,
          stride};
}

/// True if w lies in the workspace, where the counts lie workspace_elements after the values.
bool in_workspace(const Where& w) { return w.space == Space::kWorkspace || w.space == Space::kOnes; }

/// A copy inside the workspace for the values and the counts at once: an outer axis of two, workspace_elements
/// apart on both sides (one launch instead of two).
CopyStep both(const CopyStep& c, std::int64_t workspace_elements) {
  CopyStep out = c;
  out.size.insert(out.size.begin(), 2);
  out.src_stride.insert(out.src_stride.begin(), workspace_elements);
  out.dst_stride.insert(out.dst_stride.begin(), workspace_elements);
  return out;
}

/// One array's merge region: the row of two ones, then the output so far and the slice's part.
template <class T>
struct MergeRegion {
  T* ones;
  T* so_far() const { return ones + 2; }
};

template <class T>
void queue_counting(const EinsumProgram& plan, std::span<const void* const> values,
                    std::span<const void* const> counts, T* out_values, T* out_counts, std::byte* workspace,
                    CUstream stream, SliceRange range) {
  const Program& program = plan.program;
  const std::size_t eb = sizeof(T);
  std::byte* ws_values = workspace;
  std::byte* ws_counts = workspace + program.workspace_elements * static_cast<std::int64_t>(eb);
  const EinsumKernels copies{eb, nullptr, {}, nullptr, {}, {}, nullptr};  // DeviceBackend's copy and fill read the size
  DeviceBackend backend(copies, stream);
  const T value_one = T(0), count_one = T(1);  // the one of CountingTropical: (0, 1)
  if (program.ones_count > 0) {
    backend.fill(ws_values, &value_one, program.ones_count);
    backend.fill(ws_counts, &count_one, program.ones_count);
  }
  const std::int64_t out = plan.output_size;
  const bool sliced = program.part_offset >= 0;  // one slice: no merge
  MergeRegion<T> mv{nullptr}, mc{nullptr};
  if (sliced) {
    std::byte* region = workspace + counting_merge_region(program, eb);
    mv.ones = reinterpret_cast<T*>(region);
    mc.ones = reinterpret_cast<T*>(region + counting_merge_pitch(program, out, eb));
    backend.fill(mv.ones, &value_one, 2);
    backend.fill(mc.ones, &count_one, 2);
  }
  const CopyStep whole{{}, {}, {out}, {1}, {1}};  // the output's elements, in order
  bool first = true;
  for (std::int64_t slice = range.first; slice < plan.info.slices; slice += range.step) {
    const std::vector<std::int64_t> index = slice_index(program, slice);
    // The first slice writes the output; a later one the part row of the merge matrix.
    const Memory memory_v{values, ws_values,
                          reinterpret_cast<std::byte*>(first ? out_values : mv.so_far() + out), eb, &index};
    const Memory memory_c{counts, ws_counts,
                          reinterpret_cast<std::byte*>(first ? out_counts : mc.so_far() + out), eb, &index};
    for (const Step& step : program.steps) {
      if (const auto* c = std::get_if<CopyStep>(&step)) {
        if (in_workspace(c->src) && in_workspace(c->dst)) {
          backend.copy(both(*c, program.workspace_elements), memory_v.at(c->src), memory_v.at(c->dst));
          continue;
        }
        backend.copy(*c, memory_v.at(c->src), memory_v.at(c->dst));
        backend.copy(*c, memory_c.at(c->src), memory_c.at(c->dst));
        continue;
      }
      const auto& p = std::get<ProductStep>(step);
      const CountingMatrix<const T> a = pair_at<T>(memory_v, memory_c, p.a, p.lda, p.stride_a);
      const CountingMatrix<const T> b = pair_at<T>(memory_v, memory_c, p.b, p.ldb, p.stride_b);
      const CountingMatrix<T> c{reinterpret_cast<T*>(memory_v.at(p.c)), p.ldc,
                                reinterpret_cast<T*>(memory_c.at(p.c)), p.ldc, p.stride_c, p.stride_c};
      gemm_batched_counting<T>(p.ta, p.tb, p.m, p.n, p.k, a, b, c, p.batch, stream);
    }
    if (!first) {
      backend.copy(whole, out_values, mv.so_far());
      backend.copy(whole, out_counts, mc.so_far());
      // (1 x 2) (x) (2 x out): the larger of the two values, the counts of those equal to it summed.
      gemm_batched_counting<T>(Trans::kNo, Trans::kNo, 1, out, 2, {mv.ones, 2, mc.ones, 2},
                               {mv.so_far(), out, mc.so_far(), out}, {out_values, out, out_counts, out}, 1,
                               stream);
    }
    first = false;
  }
}

}  // namespace

void queue_counting_slices(const EinsumProgram& plan, std::size_t element_bytes, std::span<const void* const> values,
                           std::span<const void* const> counts, void* out_values, void* out_counts,
                           std::byte* workspace, einsum_detail::SliceRange range, CUstream stream) {
  if (element_bytes == sizeof(float)) {
    queue_counting<float>(plan, values, counts, static_cast<float*>(out_values), static_cast<float*>(out_counts),
                          workspace, stream, range);
  } else {
    queue_counting<double>(plan, values, counts, static_cast<double*>(out_values),
                           static_cast<double*>(out_counts), workspace, stream, range);
  }
}

void einsum_counting_device(const EinsumProgram& plan, std::size_t element_bytes,
                            std::span<const void* const> values, std::span<const void* const> counts,
                            void* out_values, void* out_counts, void* workspace, CUstream stream) {
  check_pointers(plan, values, out_values, workspace == nullptr ? &plan : workspace);
  check_pointers(plan, counts, out_counts, workspace == nullptr ? &plan : workspace);
  if (element_bytes != sizeof(float) && element_bytes != sizeof(double)) {
    throw InvalidArgument("tropical: counting einsum elements are float or double, not " +
                          std::to_string(element_bytes) + " bytes");
  }
  const std::size_t bytes = counting_bytes(plan.program, plan.output_size, element_bytes);
  const std::size_t out_bytes = static_cast<std::size_t>(plan.output_size) * element_bytes;
  RunDevices devices;
  devices.add_operands(plan, values, element_bytes, "einsum values of operand");
  devices.add_operands(plan, counts, element_bytes, "einsum counts of operand");
  devices.add(out_values, out_bytes, "the einsum out_values");
  devices.add(out_counts, out_bytes, "the einsum out_counts");
  if (workspace != nullptr) devices.add(workspace, bytes, "the einsum workspace");
  const int device = devices.device(stream);
  driver::ScopedContext context(device);
  std::unique_ptr<DeviceBuffer<std::byte>> owned;
  if (workspace == nullptr && bytes > 0) {
    refuse_under_capture(stream, "has no workspace: pass one of counting_workspace_bytes() (a run allocates its "
                                 "own and waits for the stream to free it)");
    owned = std::make_unique<DeviceBuffer<std::byte>>(bytes, device);
  }
  const WaitOnExit wait{stream, owned != nullptr};
  auto* ws = static_cast<std::byte*>(workspace != nullptr ? workspace : owned != nullptr ? owned->get() : nullptr);
  queue_counting_slices(plan, element_bytes, values, counts, out_values, out_counts, ws, {}, stream);
  // A workspace of the run's own is freed when this returns: wait for the steps that use it.
  if (owned != nullptr) driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace tropical::detail
