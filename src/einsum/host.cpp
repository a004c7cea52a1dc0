// The host runner: strided copies by loops, products on the CPU backend.

#include "host.hpp"

#include <cstring>

namespace tropical::einsum_detail {

namespace {

template <std::size_t Bytes>
void copy_box(const CopyStep& c, const std::byte* src, std::byte* dst, std::size_t axis) {
  if (axis == c.size.size()) {
    std::memcpy(dst, src, Bytes);
    return;
  }
  const std::int64_t n = c.size[axis];
  const std::int64_t ss = c.src_stride[axis] * static_cast<std::int64_t>(Bytes);
  const std::int64_t ds = c.dst_stride[axis] * static_cast<std::int64_t>(Bytes);
  if (axis + 1 == c.size.size()) {
    for (std::int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, Bytes);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) copy_box<Bytes>(c, src + i * ss, dst + i * ds, axis + 1);
}

}  // namespace

void HostBackend::copy(const CopyStep& c, const void* src, void* dst) {
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  switch (kernels_.element_bytes) {
    case 1:
      copy_box<1>(c, s, d, 0);
      break;
    case 2:
      copy_box<2>(c, s, d, 0);
      break;
    case 4:
      copy_box<4>(c, s, d, 0);
      break;
    default:
      copy_box<8>(c, s, d, 0);
      break;
  }
}

void HostBackend::fill(void* dst, const void* one, std::int64_t count) {
  auto* d = static_cast<std::byte*>(dst);
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(d + i * kernels_.element_bytes, one, kernels_.element_bytes);
}

}  // namespace tropical::einsum_detail

namespace tropical::detail {

void einsum_host(const EinsumProgram& plan, const EinsumKernels& kernels,
                 std::span<const void* const> operands, void* output, void* workspace, int threads) {
  einsum_detail::HostWorkspace owned(
      workspace == nullptr ? plan.program.workspace_elements * kernels.element_bytes : 0);
  einsum_detail::HostBackend backend(kernels, threads);
  einsum_detail::run(plan, kernels, backend, operands, output,
                     workspace != nullptr ? workspace : owned.get());
}

void einsum_part_host(const EinsumProgram& plan, const EinsumKernels& kernels, const void* zero,
                      std::span<const void* const> operands, void* output, std::int64_t part, std::int64_t parts,
                      void* workspace, int threads) {
  const einsum_detail::SliceRange range = einsum_detail::share(part, parts);
  einsum_detail::HostWorkspace owned(
      workspace == nullptr ? plan.program.workspace_elements * kernels.element_bytes : 0);
  einsum_detail::HostBackend backend(kernels, threads);
  einsum_detail::run_slices(plan, kernels, backend, operands, output, workspace != nullptr ? workspace : owned.get(),
                            range, zero);
}

}  // namespace tropical::detail
