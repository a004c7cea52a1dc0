#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tropical/catalog.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/problem.hpp"
#include "tropical/reference.hpp"
#include "tropical/semiring.hpp"

/// Tensor-network contraction (einsum) over a semiring: a plan made once from the terms and shapes (the
/// contraction order, the sliced labels, the workspace size), run many times on host or device pointers.
///
/// Conventions:
/// - A network is one term of integer labels per operand and the output's labels; operands are dense
///   row-major arrays (axis i of operand j has label inputs[j][i]). The result is, for every index of the
///   output's labels, the semiring sum over every other label's indices of the semiring product of the
///   operands' elements: numpy.einsum's meaning with (+, *) replaced by the semiring's. A label repeated in
///   one term takes the diagonal; a label in one operand only and not in the output is summed inside it.
/// - The order is a binary contraction tree: greedy (opt_einsum's "greedy", as tropical.einsum_path), or a
///   path in opt_einsum's format (tuples of positions in the list of remaining operands; each step removes
///   them and appends its result). Under a memory limit (elements), labels are sliced until every
///   intermediate fits; the slices run one after another and are merged with the semiring's addition.
/// - Results are those of the Python executor (tropical.einsum) bit for bit, but for the sign of a zero (a
///   reduction inside one operand is a product by the semiring one: -0 + 0 is +0); ties and NaN follow
///   tropical::reference (a NaN never wins a reduction).
/// - A plan is immutable and may be run from several threads at once, each with its own workspace.
namespace tropical {

/// How to plan: a contraction path (opt_einsum's format; empty: the greedy order) and the most elements an
/// intermediate may have (0: no limit).
struct EinsumOptions {
  std::vector<std::vector<int>> path;
  std::int64_t memory_limit = 0;
};

/// What the planner found: log2 of the multiply-adds (all slices together) and of the largest tensor made,
/// the largest intermediate's element count, the sliced labels and the slice count, and the order as an
/// opt_einsum-format path of pairs.
struct EinsumInfo {
  double log2_time = 0.0;
  double log2_space = 0.0;
  std::int64_t largest_intermediate = 0;
  std::vector<int> sliced;
  std::int64_t slices = 1;
  std::vector<std::vector<int>> path;
};

namespace detail {

struct EinsumProgram;

/// A semiring and element type with its element type erased: what an einsum run calls.
struct EinsumKernels {
  std::size_t element_bytes;
  const void* one;                                            ///< the semiring one (element_bytes bytes)
  tropical::Scaling<void> accumulate;                         ///< C = P (+) C
  void (*host_product)(const Product<void>& p, int threads);  ///< cpu::product of the pair
  catalog::KernelId batched;                                  ///< the pair's gemm_batched kernel
  catalog::KernelId batched_argmax;                           ///< and its gemm_batched_argmax kernel
  bool (*better)(const void* a, const void* b);               ///< a strictly beats b (reference::better)
};

template <class T>
using Pointee = std::conditional_t<std::is_const_v<T>, const void, void>;

template <class T, class V>
Operand<T> typed(const Operand<V>& x) {
  return {static_cast<T*>(x.data), x.rows, x.cols, x.ld, x.trans, x.stride};
}

template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_host_product(const Product<void>& p, int threads) {
  const tropical::Scaling<void>& s = p.scaling;
  cpu::product<S, T>({typed<const T>(p.a), typed<const T>(p.b), typed<T>(p.c), p.argmax,
                      tropical::Scaling<T>{static_cast<const T*>(s.alpha), static_cast<const T*>(s.beta),
                                           s.apply_alpha, s.read_c, s.apply_beta},
                      p.batch},
                     threads);
}

template <Semiring S, Element T>
requires kSupported<S, T>
bool einsum_better(const void* a, const void* b) {
  return reference::better<S, T>(*static_cast<const T*>(a), *static_cast<const T*>(b));
}

/// The erased kernels of S over T.
template <Semiring S, Element T>
requires kSupported<S, T>
const EinsumKernels& einsum_kernels() {
  static const T one = reference::one<S, T>();
  static const tropical::Scaling<T> acc = reference::scaling<S, T>(one, one);
  static const EinsumKernels kernels{
      sizeof(T),
      &one,
      tropical::Scaling<void>{acc.alpha, acc.beta, acc.apply_alpha, acc.read_c, acc.apply_beta},
      &einsum_host_product<S, T>,
      kernel_id<S, T, Op::kGemmBatched>(),
      kernel_id<S, T, Op::kGemmBatchedArgmax>(),
      &einsum_better<S, T>};
  return kernels;
}

/// Runs plan on host memory (see einsum_host).
void einsum_host(const EinsumProgram& plan, const EinsumKernels& kernels,
                 std::span<const void* const> operands, void* output, void* workspace, int threads);
/// Runs plan on host memory with the assignment of every reduced label (see einsum_argmax_host).
void einsum_argmax_host(const EinsumProgram& plan, const EinsumKernels& kernels,
                        std::span<const void* const> operands, void* output, std::int64_t* assignment,
                        void* workspace, int threads);
/// Runs plan over CountingTropical on host memory (see einsum_counting_host).
void einsum_counting_host(const EinsumProgram& plan, std::size_t element_bytes,
                          std::span<const void* const> values, std::span<const void* const> counts,
                          void* out_values, void* out_counts, void* workspace, int threads);
/// Queues plan over CountingTropical on a stream (see einsum_counting).
void einsum_counting_device(const EinsumProgram& plan, std::size_t element_bytes,
                            std::span<const void* const> values, std::span<const void* const> counts,
                            void* out_values, void* out_counts, void* workspace, CUstream stream);
/// Runs plan on device memory with the assignment traced back on the host (see einsum_argmax).
void einsum_argmax_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                          std::span<const void* const> operands, void* output, std::int64_t* assignment,
                          void* workspace, CUstream stream);
/// Runs one share of plan's slices on host memory (see einsum_part_host); zero: the semiring zero.
void einsum_part_host(const EinsumProgram& plan, const EinsumKernels& kernels, const void* zero,
                      std::span<const void* const> operands, void* output, std::int64_t part, std::int64_t parts,
                      void* workspace, int threads);
/// Queues one share of plan's slices on a stream (see einsum_part); zero: the semiring zero.
void einsum_part_device(const EinsumProgram& plan, const EinsumKernels& kernels, const void* zero,
                        std::span<const void* const> operands, void* output, std::int64_t part,
                        std::int64_t parts, void* workspace, CUstream stream);
/// Queues plan on a stream (see einsum).
void einsum_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                   std::span<const void* const> operands, void* output, void* workspace, CUstream stream);

}  // namespace detail

/// A planned einsum: the network, its contraction order, its sliced labels and its program of strided copies
/// and batched products. Cheap to copy (the program is shared); immutable.
class EinsumPlan {
 public:
  /// Plans inputs -> output over operands of the given shapes; throws InvalidArgument naming the label or
  /// operand at fault (a term whose length is not its operand's rank, a label whose sizes disagree, a label
  /// of dimension 0, an output label in no operand or twice in the output, a path that does not cover the
  /// operands, a memory limit below the output's size or that only slicing an output label could meet, a
  /// tensor past 2^62 elements).
  EinsumPlan(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output,
             const std::vector<std::vector<std::int64_t>>& shapes, const EinsumOptions& options = {});
  /// Plans a numpy-notation equation ("ij,jk->ik"; without "->", numpy's implicit output: the labels seen
  /// once, in alphabetical order); letters are the labels (info().sliced holds their character codes).
  EinsumPlan(std::string_view equation, const std::vector<std::vector<std::int64_t>>& shapes,
             const EinsumOptions& options = {});

  /// The planner's findings.
  const EinsumInfo& info() const;
  /// The number of operands.
  std::size_t operand_count() const;
  /// The output's shape (empty: a scalar).
  const std::vector<std::int64_t>& output_shape() const;
  /// The output's element count (1 for a scalar).
  std::int64_t output_size() const;
  /// Bytes of workspace a run over elements of element_bytes bytes needs (at most one allocation's worth).
  std::size_t workspace_bytes(std::size_t element_bytes) const;
  /// The labels not in the output (in order of first appearance in the terms): the rows of an assignment.
  std::vector<int> reduced_labels() const;
  /// Bytes of workspace an argmax run over elements of element_bytes bytes needs (every step's argmax kept).
  std::size_t argmax_workspace_bytes(std::size_t element_bytes) const;
  /// Bytes of workspace a CountingTropical run (host or device) over elements of element_bytes bytes needs:
  /// values and counts, and for a sliced plan the device run's region where slices are merged.
  std::size_t counting_workspace_bytes(std::size_t element_bytes) const;
  /// The program (for the library's runners).
  const detail::EinsumProgram& program() const { return *program_; }

 private:
  std::shared_ptr<const detail::EinsumProgram> program_;
};

/// Contracts the network of plan over S on host arrays: operands[i] (plan's shapes, row-major) into output
/// (output_shape(), row-major, overwritten), on the CPU backend with up to `threads` threads (0: its
/// default). workspace: at least workspace_bytes(sizeof(T)) bytes aligned for T, or null (allocated per
/// call). Throws InvalidArgument for a wrong operand count or a null pointer.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_host(const EinsumPlan& plan, std::span<const T* const> operands, T* output,
                 void* workspace = nullptr, int threads = 0) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_host(plan.program(), detail::einsum_kernels<S, T>(), erased, output, workspace, threads);
}

/// einsum_host, and in assignment (reduced_labels().size() rows of output_size() int64 each) the index of
/// every reduced label that wins at each output element: traced back from the root through every step's
/// argmax (python/tropical/_einsum_trace.py), ties to the smallest index of each step's contracted labels
/// (and to the first slice), any index where nothing beat the semiring zero. workspace: at least
/// argmax_workspace_bytes(sizeof(T)) bytes aligned for T, or null.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_argmax_host(const EinsumPlan& plan, std::span<const T* const> operands, T* output,
                        std::int64_t* assignment, void* workspace = nullptr, int threads = 0) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_argmax_host(plan.program(), detail::einsum_kernels<S, T>(), erased, output, assignment,
                             workspace, threads);
}

/// The contraction of plan over CountingTropical (tropical/counting.hpp; reference.hpp states its semantics)
/// on host arrays: operand i is values[i] with counts[i] (both of its shape), the output out_values with
/// out_counts; the largest value of every output element and how many configurations reach it (counts
/// multiplied along a configuration, summed over the optimal ones), as tropical.counting_einsum. workspace:
/// at least counting_workspace_bytes(sizeof(T)) bytes aligned for T, or null.
template <CountingElement T>
void einsum_counting_host(const EinsumPlan& plan, std::span<const T* const> values,
                          std::span<const T* const> counts, T* out_values, T* out_counts,
                          void* workspace = nullptr, int threads = 0) {
  std::vector<const void*> v(values.begin(), values.end()), c(counts.begin(), counts.end());
  detail::einsum_counting_host(plan.program(), sizeof(T), v, c, out_values, out_counts, workspace, threads);
}

/// einsum_counting_host on device arrays, queued on `stream` (einsum's conventions): the same bits. Slices
/// after the first are merged on the device. workspace: at least counting_workspace_bytes(sizeof(T)) bytes of
/// device memory (then only stream operations a CUDA graph can capture are queued), or null (allocated, and the
/// stream waited for; refused under stream capture). Throws as tropical::gemm_batched_counting does.
template <CountingElement T>
void einsum_counting(const EinsumPlan& plan, std::span<const T* const> values, std::span<const T* const> counts,
                     T* out_values, T* out_counts, void* workspace = nullptr, CUstream stream = nullptr) {
  std::vector<const void*> v(values.begin(), values.end()), c(counts.begin(), counts.end());
  detail::einsum_counting_device(plan.program(), sizeof(T), v, c, out_values, out_counts, workspace, stream);
}

/// Queues the contraction of plan over S on device arrays on `stream` (gemm.hpp's conventions: every
/// pointer memory of one device, work queued and not waited for; every operand, the output and a given
/// workspace are checked to lie inside allocations of the stream's device before anything is queued).
/// workspace: at least workspace_bytes(sizeof(T)) bytes of device memory (then only stream operations a CUDA
/// graph can capture are queued), or null (then one allocation is made and freed after the stream's work,
/// which waits for it: InvalidArgument while the stream is being captured). Throws as tropical::gemm_batched
/// does.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum(const EinsumPlan& plan, std::span<const T* const> operands, T* output, void* workspace = nullptr,
            CUstream stream = nullptr) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_device(plan.program(), detail::einsum_kernels<S, T>(), erased, output, workspace, stream);
}

/// einsum_host of runner `part`'s share of plan's slices among `parts` runners (slice s to runner s mod parts):
/// its slices merged into output with the semiring's addition, the semiring zero where it holds none, so that
/// the parts merged (an all-reduce with the semiring's addition: max or min) are einsum_host's output. What a
/// program spreading one contraction over processes runs before its own collective (tropical.distributed).
/// Throws InvalidArgument unless parts >= 1 and 0 <= part < parts.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_part_host(const EinsumPlan& plan, std::span<const T* const> operands, T* output, std::int64_t part,
                      std::int64_t parts, void* workspace = nullptr, int threads = 0) {
  static const T zero = reference::zero<S, T>();
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_part_host(plan.program(), detail::einsum_kernels<S, T>(), &zero, erased, output, part, parts,
                           workspace, threads);
}

/// einsum_part_host on device arrays, queued on `stream` as einsum queues (its workspace and capture rules).
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_part(const EinsumPlan& plan, std::span<const T* const> operands, T* output, std::int64_t part,
                 std::int64_t parts, void* workspace = nullptr, CUstream stream = nullptr) {
  static const T zero = reference::zero<S, T>();
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_part_device(plan.program(), detail::einsum_kernels<S, T>(), &zero, erased, output, part, parts,
                             workspace, stream);
}

/// einsum on device arrays with einsum_argmax_host's assignment (host memory), traced back on the host from
/// every step's argmax kept on the device (a scalar output reads one element of each, a larger one copies
/// them all); waits for the stream and returns with the output and the assignment written, so it throws
/// InvalidArgument, queuing nothing, while the stream is being captured into a CUDA graph. workspace: at
/// least argmax_workspace_bytes(sizeof(T)) bytes of device memory, or null (allocated per call).
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_argmax(const EinsumPlan& plan, std::span<const T* const> operands, T* output,
                   std::int64_t* assignment, void* workspace = nullptr, CUstream stream = nullptr) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_argmax_device(plan.program(), detail::einsum_kernels<S, T>(), erased, output, assignment,
                               workspace, stream);
}

}  // namespace tropical
