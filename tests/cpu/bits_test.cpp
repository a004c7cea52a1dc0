// tropical::cpu's packed boolean products against the byte-wise AndOr reference,
// bit for bit (odd sizes, every output form, batches, padding), pack/unpack round
// trips, and the closure against a breadth-first search from every vertex.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <random>
#include <tuple>
#include <vector>

#include "tropical/bits.hpp"
#include "tropical/error.hpp"
#include "tropical/reference.hpp"

namespace tropical::cpu_test {
namespace {

using Bytes = std::vector<std::uint8_t>;
using Words = std::vector<std::uint32_t>;

Bytes random_bytes(std::mt19937_64& rng, std::int64_t count, double density) {
  std::bernoulli_distribution bit(density);
  std::uniform_int_distribution<int> value(1, 255);
  Bytes out(static_cast<std::size_t>(count));
  for (auto& b : out) b = bit(rng) ? static_cast<std::uint8_t>(value(rng)) : 0;  // any non-zero byte is true
  return out;
}

/// rows x k bytes packed with leading dimension ld, the padding filled with ones (never read).
Words pack(const Bytes& a, std::int64_t rows, std::int64_t k, std::int64_t ld) {
  Words w(static_cast<std::size_t>(rows * ld + 1), 0u);
  pack_bits(rows, k, a.data(), k > 0 ? k : 1, w.data(), ld);
  for (std::int64_t i = 0; i < rows; ++i) {
    if (k % 32 != 0) w[i * ld + k / 32] |= ~((1u << (k % 32)) - 1u);
    for (std::int64_t j = bits_words(k); j < ld; ++j) w[i * ld + j] = ~0u;
  }
  return w;
}

/// B (k x n) as B^T bytes (n x k).
Bytes transposed(const Bytes& b, std::int64_t k, std::int64_t n) {
  Bytes t(b.size());
  for (std::int64_t p = 0; p < k; ++p) {
    for (std::int64_t j = 0; j < n; ++j) t[j * k + p] = b[p * n + j];
  }
  return t;
}

TEST(Bits, pack_and_unpack_round_trip_with_zero_padding) {
  std::mt19937_64 rng(1);
  for (const auto& [rows, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {3, 31}, {5, 32}, {7, 33}, {2, 255}, {4, 256}, {3, 257}, {9, 1000}}) {
    const Bytes a = random_bytes(rng, rows * k, 0.5);
    for (const std::int64_t ld : {bits_words(k), bits_ld(k), bits_ld(k) + 3}) {
      Words w(static_cast<std::size_t>(rows * ld), 0xdeadbeefu);
      pack_bits(rows, k, a.data(), k, w.data(), ld);
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < k; ++j) {
          ASSERT_EQ((w[i * ld + j / 32] >> (j % 32)) & 1u, a[i * k + j] != 0 ? 1u : 0u) << i << ", " << j;
        }
        for (std::int64_t j = k; j < std::min(ld, bits_ld(k)) * 32; ++j) {
          ASSERT_EQ((w[i * ld + j / 32] >> (j % 32)) & 1u, 0u) << "padding bit " << j;
        }
      }
      Bytes back(static_cast<std::size_t>(rows * (k + 2)), 7);
      unpack_bits(rows, k, w.data(), ld, back.data(), k + 2);
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < k; ++j) ASSERT_EQ(back[i * (k + 2) + j], a[i * k + j] != 0 ? 1 : 0);
        ASSERT_EQ(back[i * (k + 2) + k], 7) << "unpack wrote past k";
      }
    }
  }
}

TEST(Bits, transpose_turns_rows_into_columns) {
  std::mt19937_64 rng(2);
  const std::int64_t rows = 37, cols = 70;
  const Bytes a = random_bytes(rng, rows * cols, 0.3);
  const Words w = pack(a, rows, cols, bits_ld(cols));
  Words t(static_cast<std::size_t>(cols * bits_ld(rows)));
  transpose_bits(rows, cols, w.data(), bits_ld(cols), t.data(), bits_ld(rows));
  Bytes back(static_cast<std::size_t>(cols * rows));
  unpack_bits(cols, rows, t.data(), bits_ld(rows), back.data(), rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) ASSERT_EQ(back[j * rows + i], a[i * cols + j] != 0 ? 1 : 0);
  }
}

/// Checks one product of every output form against the byte-wise reference (and counts against their
/// definition).
void expect_products_equal_reference(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                                     double density, std::mt19937_64& rng, int threads) {
  const Bytes a = random_bytes(rng, batch * m * k, density), b = random_bytes(rng, batch * k * n, density);
  const std::int64_t lda = bits_ld(k) + 1,
                     ldb = std::max<std::int64_t>(1, bits_words(k) + (k % 3 == 0 ? 0 : 2));
  Words pa, pb;
  for (std::int64_t p = 0; p < batch; ++p) {
    const Bytes ap(a.begin() + p * m * k, a.begin() + (p + 1) * m * k);
    const Bytes bp(b.begin() + p * k * n, b.begin() + (p + 1) * k * n);
    const Words wa = pack(ap, m, k, lda), wb = pack(transposed(bp, k, n), n, k, ldb);
    pa.insert(pa.end(), wa.begin(), wa.begin() + m * lda);
    pb.insert(pb.end(), wb.begin(), wb.begin() + n * ldb);
  }
  pa.push_back(0);
  pb.push_back(0);
  const std::int64_t ldbits = bits_words(n) + 1, ldbytes = n + 3, ldcounts = n + 1;
  Words bits(static_cast<std::size_t>(batch * m * ldbits + 1), 0xffffffffu);
  Bytes bytes(static_cast<std::size_t>(batch * m * ldbytes + 1), 9);
  std::vector<std::int32_t> counts(static_cast<std::size_t>(batch * m * ldcounts + 1), -5);
  cpu::bits_gemm_batched(BitsOutput::kBits, m, n, k, pa.data(), lda, m * lda, pb.data(), ldb, n * ldb,
                         bits.data(), ldbits, m * ldbits, batch, threads);
  cpu::bits_gemm_batched(BitsOutput::kBytes, m, n, k, pa.data(), lda, m * lda, pb.data(), ldb, n * ldb,
                         bytes.data(), ldbytes, m * ldbytes, batch, threads);
  cpu::bits_gemm_batched(BitsOutput::kCounts, m, n, k, pa.data(), lda, m * lda, pb.data(), ldb, n * ldb,
                         counts.data(), ldcounts, m * ldcounts, batch, threads);
  for (std::int64_t p = 0; p < batch; ++p) {
    Bytes ref(static_cast<std::size_t>(m * n + 1));
    reference::gemm<AndOr, std::uint8_t>(Trans::kNo, Trans::kNo, m, n, k, a.data() + p * m * k, k > 0 ? k : 1,
                                         b.data() + p * k * n, n > 0 ? n : 1, ref.data(), n > 0 ? n : 1);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const std::uint32_t want = ref[i * n + j];
        std::int32_t count = 0;
        for (std::int64_t q = 0; q < k; ++q)
          count += a[(p * m + i) * k + q] != 0 && b[(p * k + q) * n + j] != 0;
        const std::int64_t ci = p * m + i;
        ASSERT_EQ((bits[ci * ldbits + j / 32] >> (j % 32)) & 1u, want)
            << m << "x" << n << "x" << k << " " << i << "," << j;
        ASSERT_EQ(bytes[ci * ldbytes + j], want) << m << "x" << n << "x" << k << " " << i << "," << j;
        ASSERT_EQ(counts[ci * ldcounts + j], count) << m << "x" << n << "x" << k << " " << i << "," << j;
      }
      if (n % 32 != 0) {
        ASSERT_EQ(bits[(p * m + i) * ldbits + n / 32] >> (n % 32), 0u) << "padding bits of C";
      }
      ASSERT_EQ(bits[(p * m + i) * ldbits + ldbits - 1], 0xffffffffu) << "a word past C's row was written";
      ASSERT_EQ(bytes[(p * m + i) * ldbytes + n], 9);
      ASSERT_EQ(counts[(p * m + i) * ldcounts + n], -5);
    }
  }
}

TEST(Bits, products_equal_the_byte_reference_on_odd_sizes) {
  std::mt19937_64 rng(3);
  int index = 0;
  for (const auto& [m, n, k] :
       std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{{1, 1, 1},
                                                                         {3, 5, 31},
                                                                         {5, 3, 33},
                                                                         {7, 9, 64},
                                                                         {13, 33, 255},
                                                                         {33, 13, 257},
                                                                         {70, 65, 300},
                                                                         {67, 290, 513},
                                                                         {5, 6, 0},
                                                                         {0, 4, 5},
                                                                         {130, 270, 1000}}) {
    for (const double density : {0.02, 0.5}) {
      expect_products_equal_reference(m, n, k, 1, density, rng, index++ % 2 == 0 ? 0 : 2);
    }
  }
}

TEST(Bits, batched_products_equal_the_byte_reference) {
  std::mt19937_64 rng(4);
  expect_products_equal_reference(5, 7, 45, 4, 0.2, rng, 0);
  expect_products_equal_reference(33, 17, 260, 3, 0.05, rng, 2);
  expect_products_equal_reference(3, 3, 3, 0, 0.5, rng, 0);
}

TEST(Bits, a_shared_operand_has_stride_zero) {
  std::mt19937_64 rng(5);
  const std::int64_t m = 9, n = 11, k = 70, batch = 3, ld = bits_ld(k);
  const Words a = pack(random_bytes(rng, m * k, 0.3), m, k, ld);
  Words b;
  for (std::int64_t p = 0; p < batch; ++p) {
    const Words w = pack(random_bytes(rng, n * k, 0.3), n, k, ld);
    b.insert(b.end(), w.begin(), w.begin() + n * ld);
  }
  std::vector<std::int32_t> batched(static_cast<std::size_t>(batch * m * n)),
      single(static_cast<std::size_t>(m * n));
  cpu::bits_gemm_batched(BitsOutput::kCounts, m, n, k, a.data(), ld, 0, b.data(), ld, n * ld, batched.data(),
                         n, m * n, batch);
  for (std::int64_t p = 0; p < batch; ++p) {
    cpu::bits_gemm(BitsOutput::kCounts, m, n, k, a.data(), ld, b.data() + p * n * ld, ld, single.data(), n);
    for (std::int64_t e = 0; e < m * n; ++e) ASSERT_EQ(batched[p * m * n + e], single[e]);
  }
}

TEST(Bits, bad_arguments_are_refused_before_writing) {
  Words a(64, 0), b(64, 0), c(64, 7);
  EXPECT_THROW(cpu::bits_gemm(BitsOutput::kBits, 2, 2, 40, a.data(), 1, b.data(), 2, c.data(), 1),
               InvalidArgument);
  EXPECT_THROW(cpu::bits_gemm(BitsOutput::kBits, -1, 2, 4, a.data(), 1, b.data(), 1, c.data(), 1),
               InvalidArgument);
  EXPECT_THROW(cpu::bits_gemm(BitsOutput::kBytes, 2, 8, 4, a.data(), 1, b.data(), 1, c.data(), 4),
               InvalidArgument);
  EXPECT_THROW(cpu::bits_gemm(static_cast<BitsOutput>(7), 2, 2, 4, a.data(), 1, b.data(), 1, c.data(), 2),
               InvalidArgument);
  EXPECT_THROW(cpu::bits_gemm(BitsOutput::kCounts, 2, 2, 4, nullptr, 1, b.data(), 1, c.data(), 2),
               InvalidArgument);
  EXPECT_THROW(
      cpu::bits_gemm_batched(BitsOutput::kCounts, 2, 2, 4, a.data(), 1, 2, b.data(), 1, 2, c.data(), 2, 3, 2),
      InvalidArgument);  // C's products would overlap
  EXPECT_THROW(pack_bits(2, 40, reinterpret_cast<const std::uint8_t*>(a.data()), 40, c.data(), 1),
               InvalidArgument);
  for (const std::uint32_t w : c) ASSERT_EQ(w, 7u);
}

/// Reachability by a breadth-first search from every vertex (each reaches itself).
Bytes bfs_closure(std::int64_t n, const std::vector<std::vector<std::int64_t>>& out) {
  Bytes reach(static_cast<std::size_t>(n * n), 0);
  for (std::int64_t s = 0; s < n; ++s) {
    std::deque<std::int64_t> queue{s};
    reach[s * n + s] = 1;
    while (!queue.empty()) {
      const std::int64_t v = queue.front();
      queue.pop_front();
      for (const std::int64_t w : out[v]) {
        if (!reach[s * n + w]) {
          reach[s * n + w] = 1;
          queue.push_back(w);
        }
      }
    }
  }
  return reach;
}

TEST(Bits, closure_equals_breadth_first_search_from_every_vertex) {
  std::mt19937_64 rng(6);
  for (const auto& [n, degree] : std::vector<std::pair<std::int64_t, double>>{
           {1, 0.0}, {5, 1.0}, {33, 0.8}, {100, 1.0}, {257, 1.5}, {700, 1.0}, {2000, 1.2}, {2000, 4.0}}) {
    std::bernoulli_distribution edge(degree / static_cast<double>(n));
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(n));
    Bytes adjacency(static_cast<std::size_t>(n * n), 0);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if (edge(rng)) {
          adjacency[i * n + j] = 1;
          out[i].push_back(j);
        }
      }
    }
    const std::int64_t ld = bits_ld(n);
    Words w(static_cast<std::size_t>(n * ld));
    pack_bits(n, n, adjacency.data(), n, w.data(), ld);
    const std::int64_t iterations = cpu::bits_closure(n, w.data(), ld);
    Bytes got(static_cast<std::size_t>(n * n));
    unpack_bits(n, n, w.data(), ld, got.data(), n);
    const Bytes want = bfs_closure(n, out);
    ASSERT_EQ(got, want) << "n = " << n << ", out-degree " << degree;
    // Squaring doubles the path lengths covered: at most ceil(log2(n)) + 1 products.
    EXPECT_GE(iterations, 1);
    EXPECT_LE(iterations, 2 + static_cast<std::int64_t>(std::log2(static_cast<double>(n))));
  }
}

}  // namespace
}  // namespace tropical::cpu_test
