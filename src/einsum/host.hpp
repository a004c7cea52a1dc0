#pragma once

#include <cstddef>
#include <memory>

#include "run.hpp"

namespace tropical::einsum_detail {

/// Steps on host memory: strided copies by loops, products on the CPU backend with up to `threads` threads.
class HostBackend final : public Backend {
 public:
  HostBackend(const detail::EinsumKernels& kernels, int threads) : kernels_(kernels), threads_(threads) {}
  void copy(const CopyStep& copy, const void* src, void* dst) override;
  void product(const Product<void>& p) override { kernels_.host_product(p, threads_); }
  void fill(void* dst, const void* one, std::int64_t count) override;

 private:
  const detail::EinsumKernels& kernels_;
  int threads_;
};

/// A host workspace of `bytes` (none for 0), aligned for any element.
class HostWorkspace {
 public:
  explicit HostWorkspace(std::size_t bytes)
      : data_(bytes > 0
                  ? new std::max_align_t[(bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t)]
                  : nullptr) {}
  void* get() const { return data_.get(); }

 private:
  std::unique_ptr<std::max_align_t[]> data_;
};

}  // namespace tropical::einsum_detail
