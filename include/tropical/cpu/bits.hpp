#pragma once

#include <cstdint>

/// Bit-packed boolean matrices and their AndOr products.
///
/// Layout (one for host and device, C++, C and Python): a matrix of `rows` x `k`
/// booleans is stored row by row, each row as 32-bit words; element (i, j) is bit
/// `j % 32` (bit 0 the least significant) of word `i * ld + j / 32`. `ld`, the
/// leading dimension, counts words and is at least bits_words(k); bits_ld(k) rounds
/// that up to a multiple of 8 words (256 bits), the layout the GPU's tensor-core
/// tiles read fastest and the one pack_bits's callers should allocate. Bits of a
/// row at positions >= k (the padding) are never read: a product masks them.
///
/// The product: C(i, j) = OR over k of A(i, k) AND B(k, j), with A (m x k) packed
/// by rows and B given as B^T (n x k) packed by rows, i.e. B packed by columns, so
/// that both operands walk k along their words. C comes out in one of three forms
/// (BitsOutput): packed bits (m x n in the layout above; the bits of C's last word
/// of a row beyond n are written as 0, words past it are not touched), bytes
/// (std::uint8_t 0 or 1, ldc in bytes) or witness counts (std::int32_t, the number
/// of k with A(i, k) AND B(k, j): the paths of length 2 through k; k < 2^31).
namespace tropical {

/// 32-bit words that hold k bits.
constexpr std::int64_t bits_words(std::int64_t k) { return (k + 31) / 32; }

/// The recommended leading dimension of rows of k bits: bits_words(k) rounded up to 8 words (256 bits), at
/// least 8 (a leading dimension is never 0, even for k = 0).
constexpr std::int64_t bits_ld(std::int64_t k) { return k <= 0 ? 8 : (bits_words(k) + 7) / 8 * 8; }

/// The form of a packed product's C.
enum class BitsOutput : int {
  kBits = 0,    ///< packed bits, ldc in 32-bit words
  kBytes = 1,   ///< std::uint8_t 0/1, ldc in bytes
  kCounts = 2,  ///< std::int32_t witness counts, ldc in elements
};

/// Packs rows x k bytes (a, lda >= k bytes; any non-zero byte is true) into words
/// (ldw >= bits_words(k)); the padding bits of each row's last word and the words
/// after it up to bits_ld(k) (when ldw allows) are written as 0. Host memory.
/// Throws InvalidArgument on a negative size, a small leading dimension or a null pointer.
void pack_bits(std::int64_t rows, std::int64_t k, const std::uint8_t* a, std::int64_t lda,
               std::uint32_t* words, std::int64_t ldw);

/// Unpacks rows x k bits (words, ldw) into bytes 0/1 (a, lda >= k). Host memory. Throws as pack_bits.
void unpack_bits(std::int64_t rows, std::int64_t k, const std::uint32_t* words, std::int64_t ldw,
                 std::uint8_t* a, std::int64_t lda);

/// Writes the transpose of a packed rows x cols bit matrix (in, ldin) as cols x rows (out, ldout >=
/// bits_words(rows)), padding bits 0: turns B packed by rows into B^T packed by rows. Host memory.
void transpose_bits(std::int64_t rows, std::int64_t cols, const std::uint32_t* in, std::int64_t ldin,
                    std::uint32_t* out, std::int64_t ldout);

}  // namespace tropical

/// The packed products on host memory (the CPU backend: 64-bit words, popcount through
/// Highway's vectors on the instruction set tropical::cpu::isa() names, threads of the pool).
namespace tropical::cpu {

/// C (m x n, ldc in units of `output`) = A (m x k, lda words) AND-OR B, B given as bt = B^T
/// (n x k, ldb words); every result bit for bit the byte-wise AndOr product's. threads = 0:
/// num_threads(). Throws InvalidArgument (negative size, small ld, null pointer of a
/// non-empty operand, counts with k >= 2^31, an unknown output) before writing anything.
void bits_gemm(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint32_t* a,
               std::int64_t lda, const std::uint32_t* bt, std::int64_t ldb, void* c, std::int64_t ldc,
               int threads = 0);

/// bits_gemm of every product of a batch: operand p starts p * its stride (words, or C's
/// elements) after its base; stride_a or stride_b may be 0 (one operand for every product).
void bits_gemm_batched(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k,
                       const std::uint32_t* a, std::int64_t lda, std::int64_t stride_a,
                       const std::uint32_t* bt, std::int64_t ldb, std::int64_t stride_b, void* c,
                       std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, int threads = 0);

/// Replaces the packed n x n adjacency matrix (words, ld) by its reflexive-transitive closure
/// (bit (i, j) set iff j is reachable from i by a path of length >= 0) by repeated squaring
/// of (I OR A) until a square equals its operand; returns the number of squarings (products)
/// it took, the last of them the one that changed nothing (0 for n = 0). Throws as bits_gemm.
std::int64_t bits_closure(std::int64_t n, std::uint32_t* words, std::int64_t ld, int threads = 0);

}  // namespace tropical::cpu
