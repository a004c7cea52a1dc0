// The CPU backend's packed boolean products (tropical/bits.hpp): each operand's
// rows repacked as 64-bit words (the padding bits masked, rows a whole number of
// vectors, zero rows up to a whole tile), then blocks of C as tasks of the pool,
// each a walk of 4 x 4 register tiles (bits_kernel.cpp) over the whole of k.
// Transitive closure by repeated squaring on top.

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "../bits_checks.hpp"
#include "bits_kernel.hpp"
#include "pool.hpp"
#include "tropical/cpu/bits.hpp"

namespace tropical::cpu {
namespace {

using detail::kBitsRowPad;
using detail::kBitsTile;

// Blocks of C per task: 64 rows of A (16 tiles) by 256 rows of B^T, so that a
// task's B rows stay in L2 while its A tiles pass, and a task owns whole words of
// a packed C row (256 is a multiple of 32).
constexpr std::int64_t kTaskRows = 64;
constexpr std::int64_t kTaskCols = 256;
// Rows packed per task of the pool.
constexpr std::int64_t kPackRows = 256;

struct AlignedDelete {
  void operator()(std::uint64_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

/// Rows of k bits as 64-bit words, `words` per row (a multiple of kBitsRowPad), 64-byte aligned.
struct Panel {
  std::int64_t rows = 0, words = 0;
  std::unique_ptr<std::uint64_t[], AlignedDelete> data;

  Panel(std::int64_t real_rows, std::int64_t k) {
    rows = (real_rows + kBitsTile - 1) / kBitsTile * kBitsTile;
    words =
        std::max<std::int64_t>(kBitsRowPad, ((k + 63) / 64 + kBitsRowPad - 1) / kBitsRowPad * kBitsRowPad);
    const std::size_t n = static_cast<std::size_t>(rows * words);
    data.reset(
        static_cast<std::uint64_t*>(::operator new[](n * sizeof(std::uint64_t), std::align_val_t{64})));
  }
  std::uint64_t* row(std::int64_t i) const { return data.get() + i * words; }
};

/// Fills panel rows [first, last) from rows of 32-bit words (src, ld) holding k bits; rows >= real are 0.
void pack_rows(const Panel& panel, std::int64_t first, std::int64_t last, std::int64_t real, std::int64_t k,
               const std::uint32_t* src, std::int64_t ld) {
  const std::int64_t used = bits_words(k);
  const std::uint32_t tail = k % 32 == 0 ? ~0u : (1u << (k % 32)) - 1u;
  for (std::int64_t i = first; i < last; ++i) {
    std::uint64_t* out = panel.row(i);
    std::memset(out, 0, static_cast<std::size_t>(panel.words) * sizeof(std::uint64_t));
    if (i >= real) continue;
    const std::uint32_t* in = src + i * ld;
    for (std::int64_t w = 0; w < used; ++w) {
      const std::uint64_t word = w == used - 1 ? in[w] & tail : in[w];
      out[w / 2] |= word << (32 * (w % 2));
    }
  }
}

Panel pack(std::int64_t rows, std::int64_t k, const std::uint32_t* src, std::int64_t ld, int threads) {
  Panel panel(rows, k);
  const std::int64_t tasks = (panel.rows + kPackRows - 1) / kPackRows;
  detail::parallel_for(tasks, tasks > 1 ? threads : 1, [&](std::int64_t t) {
    pack_rows(panel, t * kPackRows, std::min(panel.rows, (t + 1) * kPackRows), rows, k, src, ld);
  });
  return panel;
}

/// One product on packed panels: C rows [i0, i1) x columns [j0, j1) of a task.
void product_block(BitsOutput output, const Panel& a, const Panel& b, std::int64_t m, std::int64_t n, void* c,
                   std::int64_t ldc, std::int64_t i0, std::int64_t j0, detail::BitsTileFn tile) {
  const std::int64_t i1 = std::min(m, i0 + kTaskRows), j1 = std::min(n, j0 + kTaskCols);
  if (output == BitsOutput::kBits) {
    auto* words = static_cast<std::uint32_t*>(c);
    for (std::int64_t i = i0; i < i1; ++i) {
      std::fill(words + i * ldc + j0 / 32, words + i * ldc + bits_words(j1), 0u);
    }
  }
  const bool count = output == BitsOutput::kCounts;
  std::int64_t out[kBitsTile * kBitsTile];
  for (std::int64_t i = i0; i < i1; i += kBitsTile) {
    for (std::int64_t j = j0; j < j1; j += kBitsTile) {
      tile(a.row(i), b.row(j), a.words, a.words, count, out);
      for (std::int64_t r = 0; r < kBitsTile && i + r < i1; ++r) {
        for (std::int64_t s = 0; s < kBitsTile && j + s < j1; ++s) {
          const std::int64_t v = out[r * kBitsTile + s];
          const std::int64_t row = i + r, col = j + s;
          switch (output) {
            case BitsOutput::kBits:
              static_cast<std::uint32_t*>(c)[row * ldc + col / 32] |= static_cast<std::uint32_t>(v)
                                                                      << (col % 32);
              break;
            case BitsOutput::kBytes:
              static_cast<std::uint8_t*>(c)[row * ldc + col] = static_cast<std::uint8_t>(v);
              break;
            case BitsOutput::kCounts:
              static_cast<std::int32_t*>(c)[row * ldc + col] = static_cast<std::int32_t>(v);
              break;
          }
        }
      }
    }
  }
}

void product(BitsOutput output, std::int64_t m, std::int64_t n, const Panel& a, const Panel& b, void* c,
             std::int64_t ldc, int threads) {
  const detail::BitsTileFn tile = detail::bits_tile();
  const std::int64_t mb = (m + kTaskRows - 1) / kTaskRows, nb = (n + kTaskCols - 1) / kTaskCols;
  // Products of fewer than 64^3 boolean operations in 64-bit words stay on the calling thread.
  const bool small = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(a.words) < 4096.0;
  detail::parallel_for(mb * nb, small ? 1 : threads, [&](std::int64_t t) {
    product_block(output, a, b, m, n, c, ldc, (t / nb) * kTaskRows, (t % nb) * kTaskCols, tile);
  });
}

}  // namespace

void bits_gemm(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint32_t* a,
               std::int64_t lda, const std::uint32_t* bt, std::int64_t ldb, void* c, std::int64_t ldc,
               int threads) {
  bits_gemm_batched(output, m, n, k, a, lda, 0, bt, ldb, 0, c, ldc, 0, 1, threads);
}

void bits_gemm_batched(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k,
                       const std::uint32_t* a, std::int64_t lda, std::int64_t stride_a,
                       const std::uint32_t* bt, std::int64_t ldb, std::int64_t stride_b, void* c,
                       std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, int threads) {
  if (!tropical::detail::check_bits_product(output, m, n, k, a, lda, stride_a, bt, ldb, stride_b, c, ldc,
                                            stride_c, batch)) {
    return;
  }
  const int nt = detail::threads_for(threads);
  const std::int64_t bytes = tropical::detail::bits_output_bytes(output);
  std::unique_ptr<Panel> pa, pb;
  for (std::int64_t p = 0; p < batch; ++p) {
    // An operand shared by every product (stride 0) is packed once.
    if (!pa || stride_a != 0) pa = std::make_unique<Panel>(pack(m, k, a + p * stride_a, lda, nt));
    if (!pb || stride_b != 0) pb = std::make_unique<Panel>(pack(n, k, bt + p * stride_b, ldb, nt));
    product(output, m, n, *pa, *pb, static_cast<char*>(c) + p * stride_c * bytes, ldc, nt);
  }
}

std::int64_t bits_closure(std::int64_t n, std::uint32_t* words, std::int64_t ld, int threads) {
  tropical::detail::check_size("n", n);
  tropical::detail::check_ld("ld", ld, bits_words(n));
  tropical::detail::check_extent("words", n, ld, bits_words(n));
  tropical::detail::check_pointer("words", words, n == 0);
  if (n == 0) return 0;
  const std::int64_t w = bits_words(n), lx = bits_ld(n);
  const std::uint32_t tail = n % 32 == 0 ? ~0u : (1u << (n % 32)) - 1u;
  std::vector<std::uint32_t> x(static_cast<std::size_t>(n * lx), 0u), xt(x.size()), y(x.size());
  for (std::int64_t i = 0; i < n; ++i) {
    std::copy(words + i * ld, words + i * ld + w, x.begin() + i * lx);
    x[i * lx + w - 1] &= tail;
    x[i * lx + i / 32] |= 1u << (i % 32);
  }
  std::int64_t iterations = 0;
  for (;;) {
    // (X X) needs X's columns as rows: B^T = X^T. Reachability only grows, so a
    // square equal to its operand is the closure.
    transpose_bits(n, n, x.data(), lx, xt.data(), lx);
    bits_gemm(BitsOutput::kBits, n, n, n, x.data(), lx, xt.data(), lx, y.data(), lx, threads);
    ++iterations;
    bool same = true;
    for (std::int64_t i = 0; i < n && same; ++i) {
      same = std::equal(y.begin() + i * lx, y.begin() + i * lx + w, x.begin() + i * lx);
    }
    if (same) break;
    x.swap(y);
  }
  for (std::int64_t i = 0; i < n; ++i) std::copy(x.begin() + i * lx, x.begin() + i * lx + w, words + i * ld);
  return iterations;
}

}  // namespace tropical::cpu
