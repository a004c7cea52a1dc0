// CountingTropical on host memory: the value program run on (values, counts) pairs, each array at the same
// offsets of its own region (operands, workspace, result), every product a counting product of the CPU
// backend, the ones (0, 1); slices merged as tropical.counting_einsum does: the larger value, and where they
// tie the sum of both counts.

#include <cmath>

#include "host.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/error.hpp"

namespace tropical::detail {

namespace {

using einsum_detail::Memory;
using einsum_detail::Where;

template <class T>
CountingMatrix<T> pair_at(const Memory& values, const Memory& counts, const Where& w, std::int64_t ld,
                          std::int64_t stride) {
  return {reinterpret_cast<T*>(values.at(w)), ld, reinterpret_cast<T*>(counts.at(w)), ld, stride, stride};
}

template <class T>
CountingMatrix<const T> as_const(const CountingMatrix<T>& x) {
  return {x.values, x.ld_values, x.counts, x.ld_counts, x.stride_values, x.stride_counts};
}

template <class T>
void run_counting(const EinsumProgram& plan, std::span<const void* const> values,
                  std::span<const void* const> counts, T* out_values, T* out_counts, std::byte* workspace,
                  int threads) {
  using namespace einsum_detail;
  const Program& program = plan.program;
  auto* ws_values = workspace;
  auto* ws_counts = workspace + program.workspace_elements * static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t i = 0; i < program.ones_count; ++i) {  // the one of CountingTropical: (0, 1)
    reinterpret_cast<T*>(ws_values)[i] = T(0);
    reinterpret_cast<T*>(ws_counts)[i] = T(1);
  }
  const EinsumKernels copies{sizeof(T), nullptr, {}, nullptr, {}, {}, nullptr};  // HostBackend's copy reads the size
  HostBackend backend(copies, threads);
  const std::int64_t out = plan.output_size;
  const bool sliced = program.part_offset >= 0;  // one slice: no part
  T* part_values = sliced ? reinterpret_cast<T*>(ws_values) + program.part_offset : nullptr;
  T* part_counts = sliced ? reinterpret_cast<T*>(ws_counts) + program.part_offset : nullptr;
  std::vector<std::int64_t> index(program.slice_extents.size(), 0);
  bool first = true;
  do {
    const Memory mv{values, ws_values, reinterpret_cast<std::byte*>(first ? out_values : part_values),
                    sizeof(T), &index};
    const Memory mc{counts, ws_counts, reinterpret_cast<std::byte*>(first ? out_counts : part_counts),
                    sizeof(T), &index};
    for (const Step& step : program.steps) {
      if (const auto* c = std::get_if<CopyStep>(&step)) {
        backend.copy(*c, mv.at(c->src), mv.at(c->dst));
        backend.copy(*c, mc.at(c->src), mc.at(c->dst));
        continue;
      }
      const auto& p = std::get<ProductStep>(step);
      cpu::gemm_batched_counting<T>(p.ta, p.tb, p.m, p.n, p.k,
                                    as_const(pair_at<T>(mv, mc, p.a, p.lda, p.stride_a)),
                                    as_const(pair_at<T>(mv, mc, p.b, p.ldb, p.stride_b)),
                                    pair_at<T>(mv, mc, p.c, p.ldc, p.stride_c), p.batch, threads);
    }
    if (!first) {
      for (std::int64_t o = 0; o < out; ++o) {
        const T merged = std::fmax(out_values[o], part_values[o]);
        const T total = (out_values[o] == merged ? out_counts[o] : T(0)) +
                        (part_values[o] == merged ? part_counts[o] : T(0));
        out_values[o] = merged;
        out_counts[o] = total;
      }
    }
    first = false;
  } while (next_slice(program, index));
}

}  // namespace

void einsum_counting_host(const EinsumProgram& plan, std::size_t element_bytes,
                          std::span<const void* const> values, std::span<const void* const> counts,
                          void* out_values, void* out_counts, void* workspace, int threads) {
  einsum_detail::check_pointers(plan, values, out_values, workspace == nullptr ? &plan : workspace);
  einsum_detail::check_pointers(plan, counts, out_counts, workspace == nullptr ? &plan : workspace);
  einsum_detail::HostWorkspace owned(
      workspace == nullptr ? 2 * plan.program.workspace_elements * element_bytes : 0);
  auto* ws = static_cast<std::byte*>(workspace != nullptr ? workspace : owned.get());
  if (element_bytes == sizeof(float)) {
    run_counting<float>(plan, values, counts, static_cast<float*>(out_values),
                        static_cast<float*>(out_counts), ws, threads);
  } else {
    run_counting<double>(plan, values, counts, static_cast<double*>(out_values),
                         static_cast<double*>(out_counts), ws, threads);
  }
}

}  // namespace tropical::detail
