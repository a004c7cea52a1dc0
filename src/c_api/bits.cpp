// The C ABI's bit-packed booleans: packing, products and closure on host memory
// (tropical::cpu) and on device memory (tropical::, on a stream), every call
// through guarded() so that no exception crosses the boundary.

#include <cuda.h>

#include "status.hpp"
#include "tropical/bits.hpp"
#include "tropical/tropical.h"

using tropical::c_api::guarded;

namespace {

tropical::BitsOutput to_output(tropical_bits_output output) {
  return static_cast<tropical::BitsOutput>(output);
}

}  // namespace

extern "C" {

int64_t tropical_bits_ld(int64_t k) { return tropical::bits_ld(k); }

tropical_status tropical_cpu_pack_bits(int64_t rows, int64_t k, const uint8_t* a, int64_t lda,
                                       uint32_t* words, int64_t ldw) {
  return guarded([&] { tropical::pack_bits(rows, k, a, lda, words, ldw); });
}

tropical_status tropical_cpu_unpack_bits(int64_t rows, int64_t k, const uint32_t* words, int64_t ldw,
                                         uint8_t* a, int64_t lda) {
  return guarded([&] { tropical::unpack_bits(rows, k, words, ldw, a, lda); });
}

tropical_status tropical_cpu_transpose_bits(int64_t rows, int64_t cols, const uint32_t* in, int64_t ldin,
                                            uint32_t* out, int64_t ldout) {
  return guarded([&] { tropical::transpose_bits(rows, cols, in, ldin, out, ldout); });
}

tropical_status tropical_cpu_bits_gemm(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                       const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb,
                                       void* c, int64_t ldc) {
  return guarded([&] { tropical::cpu::bits_gemm(to_output(output), m, n, k, a, lda, bt, ldb, c, ldc); });
}

tropical_status tropical_cpu_bits_gemm_batched(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                               const uint32_t* a, int64_t lda, int64_t stride_a,
                                               const uint32_t* bt, int64_t ldb, int64_t stride_b, void* c,
                                               int64_t ldc, int64_t stride_c, int64_t batch) {
  return guarded([&] {
    tropical::cpu::bits_gemm_batched(to_output(output), m, n, k, a, lda, stride_a, bt, ldb, stride_b, c, ldc,
                                     stride_c, batch);
  });
}

tropical_status tropical_cpu_bits_closure(int64_t n, uint32_t* words, int64_t ld, int64_t* iterations) {
  return guarded([&] {
    const int64_t done = tropical::cpu::bits_closure(n, words, ld);
    if (iterations != nullptr) *iterations = done;
  });
}

tropical_status tropical_bits_gemm(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                   const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb, void* c,
                                   int64_t ldc, void* stream) {
  return guarded([&] {
    tropical::bits_gemm(to_output(output), m, n, k, a, lda, bt, ldb, c, ldc, static_cast<CUstream>(stream));
  });
}

tropical_status tropical_bits_gemm_batched(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                           const uint32_t* a, int64_t lda, int64_t stride_a,
                                           const uint32_t* bt, int64_t ldb, int64_t stride_b, void* c,
                                           int64_t ldc, int64_t stride_c, int64_t batch, void* stream) {
  return guarded([&] {
    tropical::bits_gemm_batched(to_output(output), m, n, k, a, lda, stride_a, bt, ldb, stride_b, c, ldc,
                                stride_c, batch, static_cast<CUstream>(stream));
  });
}

tropical_status tropical_bits_closure(int64_t n, uint32_t* words, int64_t ld, int64_t* iterations,
                                      void* stream) {
  return guarded([&] {
    const int64_t done = tropical::bits_closure(n, words, ld, static_cast<CUstream>(stream));
    if (iterations != nullptr) *iterations = done;
  });
}

}  // extern "C"
