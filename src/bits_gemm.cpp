// The packed AndOr launcher (include/tropical/bits.hpp) and the closure on the GPU: every argument checked
// before any driver call but the device check, then one launch of whichever tier of the catalog's AndOrBits
// kernel the registry serves.

#include <algorithm>
#include <vector>

#include "bits_checks.hpp"
#include "checks.hpp"
#include "launch.hpp"
#include "tropical/bits.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

constexpr catalog::KernelId kBitsKernel = catalog::KernelId::kGemmBitsB32;

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
  const std::int64_t extent = detail::check_extent("words", n, ld, bits_words(n));
  detail::check_pointer("words", words, n == 0);
  if (n == 0) return 0;
  detail::DeviceCheck devices;
  devices.add(bits_span("words", words, n, bits_words(n), ld, 0, 1, 4));
  const int device = devices.device(stream);
  const std::int64_t w = bits_words(n), lx = bits_ld(n);
  const std::uint32_t tail = n % 32 == 0 ? ~0u : (1u << (n % 32)) - 1u;
  // X = I or A on the host, and its transpose (cheap while X is as sparse as the graph).
  std::vector<std::uint32_t> user(static_cast<std::size_t>(extent));
  detail::copy_to_host(user.data(), reinterpret_cast<CUdeviceptr>(words), user.size() * 4, device);
  const std::size_t size = static_cast<std::size_t>(n * lx);
  std::vector<std::uint32_t> x(size, 0u), xt(size);
  for (std::int64_t i = 0; i < n; ++i) {
    std::copy(user.begin() + i * ld, user.begin() + i * ld + w, x.begin() + i * lx);
    x[i * lx + w - 1] &= tail;
    x[i * lx + i / 32] |= 1u << (i % 32);
  }
  transpose_bits(n, n, x.data(), lx, xt.data(), lx);
  std::int64_t reached = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < w; ++j) reached += __builtin_popcount(x[i * lx + j]);
  }
  DeviceBuffer<std::uint32_t> dx(x, device), dxt(xt, device), dy(size, device), dyt(size, device);
  // Reachability only grows (X holds I), so a square with as many pairs as its operand is the closure. The
  // pairs of a square are counted on the GPU, as its product with a column of ones (witness counts: each
  // row's pairs), so that only n counts cross to the host each step.
  const DeviceBuffer<std::uint32_t> ones(std::vector<std::uint32_t>(static_cast<std::size_t>(lx), ~0u),
                                         device);
  DeviceBuffer<std::int32_t> rows(static_cast<std::size_t>(n), device);
  const auto pairs = [&](const std::uint32_t* p) {
    bits_gemm(BitsOutput::kCounts, n, 1, n, p, lx, ones.get(), lx, rows.get(), 1, stream);
    std::int64_t total = 0;
    for (const std::int32_t r : rows.download(static_cast<std::size_t>(n))) total += r;
    return total;
  };
  std::uint32_t *px = dx.get(), *pxt = dxt.get(), *py = dy.get(), *pyt = dyt.get();
  std::int64_t iterations = 0;
  for (;;) {
    // Y = X X needs X's columns as rows (X^T); Y^T = X^T X^T, whose B^T is X: the pair stays square-able.
    bits_gemm(BitsOutput::kBits, n, n, n, px, lx, pxt, lx, py, lx, stream);
    ++iterations;
    const std::int64_t now = pairs(py);
    if (now == reached) break;
    reached = now;
    bits_gemm(BitsOutput::kBits, n, n, n, pxt, lx, px, lx, pyt, lx, stream);
    std::swap(px, py);
    std::swap(pxt, pyt);
  }
  detail::copy_to_host(x.data(), reinterpret_cast<CUdeviceptr>(px), size * 4, device);
  for (std::int64_t i = 0; i < n; ++i)
    std::copy(x.begin() + i * lx, x.begin() + i * lx + w, user.begin() + i * ld);
  detail::copy_to_device(reinterpret_cast<CUdeviceptr>(words), user.data(), user.size() * 4, device);
  return iterations;
}

}  // namespace tropical
