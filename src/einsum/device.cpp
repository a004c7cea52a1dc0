// The device runner: strided copies by the library's permute kernel, products by gemm_batched's kernels, the
// ones by byte memsets (stream operations a CUDA graph can capture: no host-to-device copy).

#include <cstring>

#include "boxes.hpp"
#include "permute.hpp"
#include "run.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/gemm.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace {

namespace driver = jit::driver;

class DeviceBackend final : public einsum_detail::Backend {
 public:
  DeviceBackend(const EinsumKernels& kernels, CUstream stream) : kernels_(kernels), stream_(stream) {}

  void copy(const einsum_detail::CopyStep& c, const void* src, void* dst) override {
    const auto eb = static_cast<std::int64_t>(kernels_.element_bytes);
    for (const einsum_detail::Box& b : einsum_detail::split(c)) {
      StridedCopy box{};
      box.rank = b.rank;
      for (int i = 0; i < b.rank; ++i) {
        box.size[i] = b.size[i];
        box.src_stride[i] = b.src_stride[i];
        box.dst_stride[i] = b.dst_stride[i];
      }
      permute(kernels_.element_bytes, static_cast<const std::byte*>(src) + b.src_offset * eb,
              static_cast<std::byte*>(dst) + b.dst_offset * eb, box, stream_);
    }
  }

  void product(const Product<void>& p) override {
    launch_gemm_batched(kernels_.batched, p, kernels_.element_bytes, stream_);
  }

  void fill(void* dst, const void* one, std::int64_t count) override {
    const std::size_t eb = kernels_.element_bytes;
    const auto ptr = reinterpret_cast<CUdeviceptr>(dst);
    unsigned char bytes[8];
    std::memcpy(bytes, one, eb);
    driver::check(driver::api().cuMemsetD8Async(ptr, 0, count * eb, stream_), "cuMemsetD8Async");
    for (std::size_t j = 0; j < eb; ++j) {
      if (bytes[j] == 0)
        continue;  // byte j of every element: a column one byte wide at a pitch of one element
      driver::check(driver::api().cuMemsetD2D8Async(ptr + j, eb, bytes[j], 1, count, stream_),
                    "cuMemsetD2D8Async");
    }
  }

 private:
  const EinsumKernels& kernels_;
  CUstream stream_;
};

}  // namespace

void einsum_device(const EinsumProgram& plan, const EinsumKernels& kernels,
                   std::span<const void* const> operands, void* output, void* workspace, CUstream stream) {
  einsum_detail::check_pointers(plan, operands, output, workspace == nullptr ? &plan : workspace);
  // The device of the output: the permutes launch in the current context (its primary one), the products
  // check every pointer against it.
  int device = 0;
  if (driver::api().cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                          reinterpret_cast<CUdeviceptr>(output)) != CUDA_SUCCESS) {
    throw InvalidArgument("tropical: the einsum output is not device memory");
  }
  driver::ScopedContext context(device);
  DeviceBackend backend(kernels, stream);
  const std::size_t bytes = static_cast<std::size_t>(plan.program.workspace_elements) * kernels.element_bytes;
  if (workspace != nullptr || bytes == 0) {
    einsum_detail::run(plan, kernels, backend, operands, output, workspace);
    return;
  }
  DeviceBuffer<std::byte> owned(bytes, device);
  einsum_detail::run(plan, kernels, backend, operands, output, owned.get());
  // The workspace is freed when this returns: wait for the steps that use it.
  driver::check(driver::api().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace tropical::detail
