#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "program.hpp"
#include "tropical/einsum.hpp"

namespace tropical::einsum_detail {

/// What a program's steps run on: host memory and the CPU backend, or a device and a stream.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Copies the box of `copy` from src to dst (its Wheres already resolved).
  virtual void copy(const CopyStep& copy, const void* src, void* dst) = 0;
  /// Computes one batched product (checked by the backend's own products).
  virtual void product(const Product<void>& p) = 0;
  /// Writes `count` semiring ones (element_bytes each, from `one` on the host) at dst.
  virtual void fill(void* dst, const void* one, std::int64_t count) = 0;
};

/// Where a slice's Wheres lie: the operands, the workspace (and after it the argmax region), the slice's
/// result, the element size and the slice's index of every sliced label.
struct Memory {
  std::span<const void* const> operands;
  std::byte* workspace;
  std::byte* result;
  std::size_t element_bytes;
  const std::vector<std::int64_t>* index;
  std::int32_t* argmax = nullptr;  ///< the argmax region (argmax mode), else null

  /// The address of w.
  std::byte* at(const Where& w) const;
};

/// Checks the pointers of a run (operand count, nulls); throws InvalidArgument naming the one at fault.
void check_pointers(const detail::EinsumProgram& plan, std::span<const void* const> operands,
                    const void* output, const void* workspace);

/// Runs one slice's steps (with every product's argmax where memory.argmax is set).
void run_slice(const Program& program, Backend& backend, const Memory& memory);

/// output = part (+) output over output_size elements (the merge of a slice after the first).
void merge(const detail::EinsumKernels& kernels, Backend& backend, const void* part, void* output,
           std::int64_t output_size, const void* ones);

/// Steps index to the next slice in lexicographic order (the last sliced label fastest, as
/// itertools.product); false after the last.
bool next_slice(const Program& program, std::vector<std::int64_t>& index);

/// Every step-th slice from `first` (slices count as next_slice steps, from 0): the slices one runner takes.
struct SliceRange {
  std::int64_t first = 0;
  std::int64_t step = 1;
};

/// The share of runner `part` of `parts` (slice s goes to runner s mod parts); throws InvalidArgument unless
/// parts >= 1 and 0 <= part < parts.
SliceRange share(std::int64_t part, std::int64_t parts);

/// The index of every sliced label of slice `slice` (next_slice's order: the last sliced label fastest).
std::vector<std::int64_t> slice_index(const Program& program, std::int64_t slice);

/// Runs the slices of `range` (those below the plan's slice count) on `backend` and merges them into output as
/// run does; output is the semiring zero (`zero`, element_bytes on the host) where the range holds no slice. A
/// lone slice of a sliced plan is merged into the zero too, so that every element of a sliced plan's output has
/// been through a merge, as one run's (AndOr's bytes become 0 or 1). Throws as run does.
void run_slices(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
                std::span<const void* const> operands, void* output, void* workspace, SliceRange range,
                const void* zero);

/// Runs every slice of plan on `backend`: operands and output as the plan's shapes, workspace at least
/// workspace_elements elements. Throws InvalidArgument for a wrong operand count or a null pointer.
void run(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
         std::span<const void* const> operands, void* output, void* workspace);

}  // namespace tropical::einsum_detail
