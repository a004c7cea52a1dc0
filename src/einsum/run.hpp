#pragma once

#include <cstddef>
#include <span>

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

/// Runs every slice of plan on `backend`: operands and output as the plan's shapes, workspace at least
/// workspace_elements elements. Throws InvalidArgument for a wrong operand count or a null pointer.
void run(const detail::EinsumProgram& plan, const detail::EinsumKernels& kernels, Backend& backend,
         std::span<const void* const> operands, void* output, void* workspace);

}  // namespace tropical::einsum_detail
