#pragma once

#include <cuda.h>

#include <cstdint>

#include "tropical/cpu/bits.hpp"

/// Bit-packed boolean matrices and their AndOr products on the GPU (the layout, the output forms, host
/// packing and the CPU's products are tropical/cpu/bits.hpp's).
namespace tropical {

/// C = A AND-OR B on device memory (the catalog's AndOrBits kernel: binary tensor cores on sm_80 and newer,
/// its quick tier on CUDA cores; on sm_90 devices, for rows and batch strides of whole 16-byte vectors, the
/// wgmma kernel, compiled as sm_90a on first use), queued on `stream` (nullptr: the device's default stream); the arguments of
/// cpu::bits_gemm, every pointer on one device. Throws InvalidArgument (as cpu::bits_gemm, or operands on
/// different devices or past their allocation), Unavailable (no driver, GPU or NVRTC), CompileError,
/// CudaError.
void bits_gemm(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint32_t* a,
               std::int64_t lda, const std::uint32_t* bt, std::int64_t ldb, void* c, std::int64_t ldc,
               CUstream stream = nullptr);

/// bits_gemm of every product of a batch (cpu::bits_gemm_batched's arguments) on device memory.
void bits_gemm_batched(BitsOutput output, std::int64_t m, std::int64_t n, std::int64_t k,
                       const std::uint32_t* a, std::int64_t lda, std::int64_t stride_a,
                       const std::uint32_t* bt, std::int64_t ldb, std::int64_t stride_b, void* c,
                       std::int64_t ldc, std::int64_t stride_c, std::int64_t batch,
                       CUstream stream = nullptr);

/// cpu::bits_closure on device memory, every step on the GPU: one product a squaring (X X, given X^T) and a
/// packed transpose of the square (the next step's X^T), which counts its pairs; only that count crosses to the
/// host, once a squaring. Queued on `stream` after the work there before it (which may write `words`); returns
/// when the closure is written. Takes three n x bits_ld(n)-word workspaces of device memory. Throws as
/// bits_gemm.
std::int64_t bits_closure(std::int64_t n, std::uint32_t* words, std::int64_t ld, CUstream stream = nullptr);

}  // namespace tropical
