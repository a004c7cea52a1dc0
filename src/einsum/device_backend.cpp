// The device runners' shared parts (device_backend.hpp): the backend's steps, the checks before a run queues
// anything, and the wait that guards a workspace the run allocated.

#include "device_backend.hpp"

#include <cstring>

#include "boxes.hpp"
#include "permute.hpp"
#include "tropical/error.hpp"
#include "tropical/gemm.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::einsum_detail {

namespace driver = jit::driver;
static_assert(kMaxBoxRank == detail::kMaxPermuteRank, "a box is one launch of the permute kernel");

void DeviceBackend::copy(const CopyStep& c, const void* src, void* dst) {
  const auto eb = static_cast<std::int64_t>(kernels_.element_bytes);
  for (const Box& b : split(c)) {
    detail::StridedCopy box{};
    box.rank = b.rank;
    for (int i = 0; i < b.rank; ++i) {
      box.size[i] = b.size[i];
      box.src_stride[i] = b.src_stride[i];
      box.dst_stride[i] = b.dst_stride[i];
    }
    detail::permute(kernels_.element_bytes, static_cast<const std::byte*>(src) + b.src_offset * eb,
                    static_cast<std::byte*>(dst) + b.dst_offset * eb, box, stream_);
  }
}

void DeviceBackend::product(const Product<void>& p) {
  // A product that keeps its argmax (an argmax run's steps) takes the argmax kernel: the plain one would leave
  // the argmax unwritten.
  detail::launch_gemm_batched(p.argmax ? kernels_.batched_argmax : kernels_.batched, p, kernels_.element_bytes,
                              stream_);
}

void DeviceBackend::fill(void* dst, const void* one, std::int64_t count) {
  const std::size_t eb = kernels_.element_bytes;
  const auto ptr = reinterpret_cast<CUdeviceptr>(dst);
  unsigned char bytes[8];
  std::memcpy(bytes, one, eb);
  driver::check(driver::api().cuMemsetD8Async(ptr, 0, count * eb, stream_), "cuMemsetD8Async");
  for (std::size_t j = 0; j < eb; ++j) {
    if (bytes[j] == 0) continue;  // byte j of every element: a column one byte wide at a pitch of one element
    driver::check(driver::api().cuMemsetD2D8Async(ptr + j, eb, bytes[j], 1, count, stream_), "cuMemsetD2D8Async");
  }
}

void RunDevices::add(const void* ptr, std::size_t bytes, const std::string& name) {
  names_.push_back(name);
  detail::Span span;
  span.name = names_.back().c_str();
  span.start = reinterpret_cast<std::uintptr_t>(ptr);
  span.bytes = static_cast<std::int64_t>(bytes);
  check_.add(span);
}

void RunDevices::add_operands(const detail::EinsumProgram& plan, std::span<const void* const> operands,
                              std::size_t element_bytes, const char* what) {
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::size_t elements = 1;
    for (std::int64_t extent : plan.network.shapes[i]) elements *= static_cast<std::size_t>(extent);
    add(operands[i], elements * element_bytes, std::string(what) + " " + std::to_string(i));
  }
}

void refuse_under_capture(CUstream stream, const char* why) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = driver::api().cuStreamIsCapturing(stream, &status);
  if (r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE) return;
  throw InvalidArgument(std::string("tropical: the stream is being captured into a CUDA graph, and this einsum run ") +
                        why + ", which would break the capture; nothing was queued");
}

WaitOnExit::~WaitOnExit() {
  if (active) driver::api().cuStreamSynchronize(stream);
}

}  // namespace tropical::einsum_detail
