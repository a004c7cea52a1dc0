// The packed AndOr launcher (include/tropical/bits.hpp) and the closure on the GPU: every argument checked
// before any driver call but the device check, then the wgmma kernel where it applies (src/bits_wgmma.hpp: sm_90
// devices, 16-byte rows), else one launch of whichever tier of the catalog's AndOrBits kernel the registry
// serves; the closure's squarings and transposes (src/bits_closure.hpp) all on the device.

#include "bits_checks.hpp"
#include "bits_closure.hpp"
#include "bits_transpose.hpp"
#include "bits_wgmma.hpp"
#include "checks.hpp"
#include "launch.hpp"
#include "tropical/bits.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

constexpr catalog::KernelId kBitsKernel = catalog::KernelId::kGemmBitsB32;

/// Waits for `stream` on the way out (an error's included): the closure's workspaces must outlive the work
/// queued on them. Its own error is ignored (the closure's, or its explicit wait, reports).
struct WaitOnExit {
  CUstream stream;
  ~WaitOnExit() { jit::driver::api().cuStreamSynchronize(stream); }
};

/// The bytes of `batch` matrices of `rows` x `cols` elements of elem_size bytes, rows ld apart.
detail::Span bits_span(const char* name, const void* ptr, std::int64_t rows, std::int64_t cols,
                       std::int64_t ld, std::int64_t stride, std::int64_t batch, std::size_t elem_size) {
  return detail::span(name, ptr, detail::Stored{rows, cols}, ld, stride, batch, elem_size);
}

}  // namespace

void bits_gemm_batched(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k,
                       const std::uint32_t* a, std::int64_t lda, std::int64_t stride_a,
                       const std::uint32_t* bt, std::int64_t ldb, std::int64_t stride_b, void* c,
                       std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, CUstream stream) {
  if (!detail::check_bits_product(output, m, n, k, a, lda, stride_a, bt, ldb, stride_b, c, ldc, stride_c,
                                  batch)) {
    return;
  }
  const std::size_t c_bytes = static_cast<std::size_t>(detail::bits_output_bytes(output));
  const std::int64_t words = bits_words(k);
  const detail::Span sa = bits_span("a", a, m, words, lda, stride_a, words > 0 ? batch : 0, 4);
  const detail::Span sb = bits_span("bt", bt, n, words, ldb, stride_b, words > 0 ? batch : 0, 4);
  const detail::Span sc =
      bits_span("c", c, m, detail::bits_output_cols(output, n), ldc, stride_c, batch, c_bytes);
  if (detail::overlap(sc, sa) || detail::overlap(sc, sb)) {
    throw InvalidArgument("tropical: bits_gemm's c shares memory with an input");
  }
  const detail::Extent extent{m, n, k, batch};
  detail::check_grid(kBitsKernel, extent);
  detail::DeviceCheck devices;
  devices.add(sa);
  devices.add(sb);
  devices.add(sc);
  const int device = devices.device(stream);
  catalog::BitsArgs args{.a = a, .bt = bt, .c = c, .m = m, .n = n, .kk = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                         .output = static_cast<int>(output), .stride_a = stride_a, .stride_b = stride_b,
                         .stride_c = stride_c, .batch = batch};
  if (detail::bits_wgmma_fits(args) && detail::bits_wgmma_ready(device)) {
    detail::bits_wgmma_launch(device, args, stream);
    return;
  }
  detail::launch(kBitsKernel, device, extent, stream, args);
}

void bits_gemm(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint32_t* a,
               std::int64_t lda, const std::uint32_t* bt, std::int64_t ldb, void* c, std::int64_t ldc,
               CUstream stream) {
  bits_gemm_batched(output, m, n, k, a, lda, 0, bt, ldb, 0, c, ldc, 0, 1, stream);
}

std::int64_t bits_closure(std::int64_t n, std::uint32_t* words, std::int64_t ld, CUstream stream) {
  detail::check_size("n", n);
  detail::check_ld("ld", ld, bits_words(n));
  detail::check_extent("words", n, ld, bits_words(n));
  detail::check_pointer("words", words, n == 0);
  if (n == 0) return 0;
  detail::DeviceCheck devices;
  devices.add(bits_span("words", words, n, bits_words(n), ld, 0, 1, 4));
  const int device = devices.device(stream);
  const std::int64_t lx = bits_ld(n);
  const auto size = static_cast<std::size_t>(n * lx);
  // Every step on the device: the matrix never crosses to the host, only one count a squaring does.
  const DeviceBuffer<std::uint32_t> x(size, device), xt(size, device), y(size, device);
  const DeviceBuffer<unsigned long long> counter(1, device);
  const WaitOnExit wait{stream};
  jit::driver::ScopedContext context(device);
  const auto& api = jit::driver::api();
  const auto counter_ptr = reinterpret_cast<CUdeviceptr>(counter.get());
  const auto transpose = [&](const std::uint32_t* src, std::int64_t lds, std::uint32_t* dst, std::int64_t ldd,
                             bool identity, bool counted) -> std::int64_t {
    if (!counted) {
      detail::bits_transpose(device, n, n, src, lds, dst, ldd, identity, nullptr, stream);
      return 0;
    }
    jit::driver::check(api.cuMemsetD8Async(counter_ptr, 0, sizeof(unsigned long long), stream), "cuMemsetD8Async");
    detail::bits_transpose(device, n, n, src, lds, dst, ldd, identity, counter.get(), stream);
    // The one wait of a squaring: the caller's stream only, not the whole device.
    jit::driver::check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
    unsigned long long pairs = 0;
    jit::driver::check(api.cuMemcpyDtoH(&pairs, counter_ptr, sizeof pairs), "cuMemcpyDtoH");
    return static_cast<std::int64_t>(pairs);
  };
  const auto square = [&](const std::uint32_t* a, const std::uint32_t* at, std::uint32_t* c) {
    bits_gemm(BitsOutput::kBits, n, n, n, a, lx, at, lx, c, lx, stream);
  };
  const std::int64_t iterations =
      detail::closure_by_squaring(words, ld, x.get(), xt.get(), y.get(), lx, transpose, square);
  jit::driver::check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
  return iterations;
}

}  // namespace tropical
