#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tropical/counting.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"
#include "tropical/semiring.hpp"

/// NCCL's communicator handle, declared as nccl.h declares it (the same typedef, so both headers may be included
/// in either order); tropical never includes nccl.h nor links libnccl.
typedef struct ncclComm* ncclComm_t;

/// One einsum plan's slices spread over the ranks of an NCCL communicator that the program already holds.
///
/// Conventions:
/// - Every rank calls the same function with the same plan (the same network, order and slices) and operands of
///   the same values on its own device (the communicator's); every rank's output receives the whole result, the
///   bits of one process's tropical::einsum, einsum_argmax or einsum_counting (counts: while they are integers
///   below 2^24 for float, 2^53 for double, where a sum is exact in any order).
/// - Slice s goes to rank s mod size (distributed_slices), as python/tropical/distributed.py deals them, each
///   rank contracting its slices in index order and merging them with the semiring's addition; a rank without
///   slices contributes the semiring zero. Then one collective: an all-reduce with ncclMax or ncclMin over f32,
///   f64, i32, i64 and AndOr's u8; over int16 (no NCCL type) and CountingTropical an all-gather of every rank's
///   output and one merge on the device (a product by a row of semiring ones); for argmax an all-gather of every
///   rank's values, winning slices and assignment, merged on the host (ties: the smallest slice index).
/// - NCCL is opened at run time on first use: $TROPICAL_NCCL_LIBRARY if set, else libnccl.so.2 through the
///   dynamic loader's path; Unavailable (naming the library and the missing symbol) where it cannot be. The
///   communicator is one of the run's device, blocking (NCCL's default) or non-blocking (ncclConfig_t::blocking =
///   0, whose calls answer ncclInProgress: the run waits for them, bounded as below).
/// - A run allocates its workspace on the run's device and waits for the stream before returning (the workspace
///   is freed then), so it is refused under stream capture.
/// - Every wait for work that includes a collective is bounded (DistributedOptions::timeout_s): a peer that never
///   joins (it threw, it crashed) or NCCL's asynchronous error aborts the communicator (ncclCommAbort, which
///   frees it: never pass it to NCCL again, not even to destroy it) and throws NcclTimeout or NcclError instead
///   of hanging the program; after any NcclError from a run, treat the communicator as aborted. That holds for
///   everything of a non-blocking communicator's; a blocking communicator's calls may themselves block before they
///   return (NCCL 2.22 and later connect the ranks on their first collective unless NCCL_RUNTIME_CONNECT=0, and
///   that waits for every peer), where no limit of the library's reaches: with peers that may never join, use a
///   non-blocking communicator.
namespace tropical {

/// An NCCL call failed (code Errc::kCuda, TROPICAL_ERROR_CUDA at the C ABI): the call, its ncclResult_t and
/// NCCL's text for it.
class NcclError : public Error {
 public:
  /// "tropical: <call> failed with ncclResult_t <result> (<text>)" followed by `after`.
  NcclError(std::string call, int result, const std::string& text, const std::string& after = {});
  const std::string& call() const noexcept { return call_; }
  /// The ncclResult_t the call returned.
  int result() const noexcept { return result_; }

 protected:
  /// A subclass's message, given whole.
  NcclError(const std::string& what, std::string call, int result);

 private:
  std::string call_;
  int result_;
};

/// A distributed run's wait for its collective `call()` passed its limit of seconds() (a rank that never joined:
/// it threw, crashed or ran another plan); the communicator was aborted (ncclCommAbort) and cannot be used again.
/// result() is ncclSuccess (0): no NCCL call failed.
class NcclTimeout : public NcclError {
 public:
  NcclTimeout(std::string call, double seconds);
  double seconds() const noexcept { return seconds_; }

 private:
  double seconds_;
};

/// How a distributed run waits for its collective.
struct DistributedOptions {
  /// The longest one wait for the stream's work (this rank's slices, the collective, the merge) may take, in
  /// seconds; 0: $TROPICAL_NCCL_TIMEOUT_S where set, else 600. Past it, or on NCCL's asynchronous error, the
  /// communicator is aborted (ncclCommAbort: unusable afterwards) and the run throws.
  double timeout_s = 0;
};

/// The slices (0 to plan.info().slices - 1) that rank `rank` of `size` ranks contracts, in index order: those
/// equal to rank modulo size. Throws InvalidArgument unless 0 <= rank < size.
std::vector<std::int64_t> distributed_slices(const EinsumPlan& plan, int rank, int size);

/// The index of every sliced label (plan.info().sliced's order) in slice `slice`: slices count in lexicographic
/// order, the last sliced label fastest (itertools.product's order). Throws InvalidArgument for a slice out of
/// range.
std::vector<std::int64_t> slice_index(const EinsumPlan& plan, std::int64_t slice);

namespace detail {

/// The element types of a distributed run, as the collective sees them.
enum class DistributedElement : std::uint8_t { kF32, kF64, kI32, kI64, kU8, kI16 };

template <class T>
constexpr DistributedElement distributed_element() {
  if constexpr (std::is_same_v<T, float>) return DistributedElement::kF32;
  else if constexpr (std::is_same_v<T, double>) return DistributedElement::kF64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DistributedElement::kI32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DistributedElement::kI64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DistributedElement::kU8;
  else {
    static_assert(std::is_same_v<T, std::int16_t>, "a distributed einsum runs over the catalog's element types");
    return DistributedElement::kI16;
  }
}

/// What a distributed run of S over T needs besides the einsum's kernels: the semiring's addition, the element
/// type and the semiring zero (host memory).
struct DistributedKernels {
  AddKind add;
  DistributedElement element;
  const void* zero;
};

template <Semiring S, Element T>
requires kSupported<S, T>
const DistributedKernels& distributed_kernels() {
  static const T zero = reference::zero<S, T>();
  static const DistributedKernels kernels{S::kAdd, distributed_element<T>(), &zero};
  return kernels;
}

/// Runs plan over the communicator's ranks (see einsum_distributed).
void einsum_distributed(const EinsumProgram& plan, const EinsumKernels& kernels, const DistributedKernels& more,
                        std::span<const void* const> operands, void* output, ncclComm_t comm, CUstream stream,
                        const DistributedOptions& options);
/// Runs plan with its argmax over the communicator's ranks (see einsum_distributed_argmax).
void einsum_distributed_argmax(const EinsumProgram& plan, const EinsumKernels& kernels,
                               const DistributedKernels& more, std::span<const void* const> operands, void* output,
                               std::int64_t* assignment, ncclComm_t comm, CUstream stream,
                               const DistributedOptions& options);
/// Runs plan over CountingTropical over the communicator's ranks (see einsum_distributed_counting).
void einsum_distributed_counting(const EinsumProgram& plan, std::size_t element_bytes,
                                 std::span<const void* const> values, std::span<const void* const> counts,
                                 void* out_values, void* out_counts, ncclComm_t comm, CUstream stream,
                                 const DistributedOptions& options);

}  // namespace detail

/// tropical::einsum of plan over S, computed by every rank of `comm` together (this header's conventions):
/// operands and output device memory of the communicator's device, checked (einsum's checks, and the
/// communicator's device) before anything is queued; returns with the output written on every rank. Throws
/// InvalidArgument (a null communicator or pointer, a pointer off the device, capture, a bad timeout),
/// Unavailable (no NCCL), NcclError, NcclTimeout, and what tropical::einsum throws.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_distributed(const EinsumPlan& plan, std::span<const T* const> operands, T* output, ncclComm_t comm,
                        CUstream stream = nullptr, const DistributedOptions& options = {}) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_distributed(plan.program(), detail::einsum_kernels<S, T>(), detail::distributed_kernels<S, T>(),
                             erased, output, comm, stream, options);
}

/// tropical::einsum_argmax of plan, computed by every rank of `comm` together (this header's conventions): each
/// rank's slices run with their argmax and traced back on the host, every rank's values, winning slice and
/// assignment all-gathered and merged on the host (the best value, and among equal values the smallest slice
/// index: one process's tie rule); output (device) and assignment (host: reduced_labels().size() rows of
/// output_size() int64) written on every rank when it returns. Throws as einsum_distributed does.
template <Semiring S, Element T>
requires kSupported<S, T>
void einsum_distributed_argmax(const EinsumPlan& plan, std::span<const T* const> operands, T* output,
                               std::int64_t* assignment, ncclComm_t comm, CUstream stream = nullptr,
                               const DistributedOptions& options = {}) {
  std::vector<const void*> erased(operands.begin(), operands.end());
  detail::einsum_distributed_argmax(plan.program(), detail::einsum_kernels<S, T>(),
                                    detail::distributed_kernels<S, T>(), erased, output, assignment, comm, stream,
                                    options);
}

/// tropical::einsum_counting of plan, computed by every rank of `comm` together (this header's conventions):
/// values and counts of every rank's slices all-gathered and merged on the device, counts of the best value
/// summed in rank order. Throws as einsum_distributed does.
template <CountingElement T>
void einsum_distributed_counting(const EinsumPlan& plan, std::span<const T* const> values,
                                 std::span<const T* const> counts, T* out_values, T* out_counts, ncclComm_t comm,
                                 CUstream stream = nullptr, const DistributedOptions& options = {}) {
  std::vector<const void*> v(values.begin(), values.end()), c(counts.begin(), counts.end());
  detail::einsum_distributed_counting(plan.program(), sizeof(T), v, c, out_values, out_counts, comm, stream,
                                      options);
}

}  // namespace tropical
