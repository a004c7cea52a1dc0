#pragma once

// The packed AndOr product on Hopper's wgmma (templates/bits_wgmma.cu.j2), which bits_gemm takes instead of the
// catalog's mma.sync kernel where it applies: an sm_90 device, A's and B's rows and batch strides whole 16-byte
// vectors, and the kernel compiled (as sm_90a; where it is not, the mma.sync kernel serves, never an error).

#include <cuda.h>

#include <cstdint>

#include "launch.hpp"
#include "tropical/kernel_args.hpp"

namespace tropical::detail {

/// Whether the wgmma kernel's arguments allow it (before any driver call): 16-byte aligned a and bt, lda, ldb,
/// stride_a and stride_b multiples of 4 words, a nonempty product whose tiles fit one grid dimension.
bool bits_wgmma_fits(const catalog::BitsArgs& args);

/// Whether `device` runs the wgmma kernel: an sm_90 device whose compile of the kernel (sm_90a) and its load have
/// not failed, unless TROPICAL_TIERED=quick (every call on the quick tier). The first call on a device compiles the kernel (or reads it from the cache); a failure is logged
/// by the registry and remembered: the device then keeps the mma.sync kernel. Never throws for the compile.
bool bits_wgmma_ready(int device);

/// The grid of one launch of the kernel: a block per 128 x 256 tile of C along x (kGroup block rows at a time:
/// the kernel maps them), `batch` products (at most 65535) along z.
Grid bits_wgmma_grid(std::int64_t m, std::int64_t n, std::int64_t batch);

/// Queues the product of `args` (checked by the caller, bits_wgmma_fits) on `stream` of `device` with the wgmma
/// kernel, in launches of at most 65535 products of the batch. Throws CudaError.
void bits_wgmma_launch(int device, const catalog::BitsArgs& args, CUstream stream);

}  // namespace tropical::detail
