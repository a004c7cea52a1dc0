#include "tropical/gemm.hpp"

#include <algorithm>
#include <string>

#include "checks.hpp"
#include "launch.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
void launch_gemm(catalog::KernelId id, std::size_t elem_size, const Problem& p, const void* a, const void* b,
                 void* c, const Scaling& scaling, CUstream stream) {
  // A small product is a batch of one on a small tile: the batched launcher checks and launches it.
  if (const catalog::KernelId small = catalog::pick_product(id, p.m, p.n); small != id) {
    launch_gemm_batched(small, elem_size, p, a, b, c, nullptr, 0, Strides{}, 1, scaling, stream);
    return;
  }
  check_product(p, elem_size);
  if (p.m == 0 || p.n == 0) return;
  check_grid(id, Extent{p.m, p.n, p.k});
  const ProductSpans spans = product_spans(p, Strides{}, 1, elem_size, a, b, c, nullptr, 0);
  DeviceCheck devices;
  add_operands(devices, spans);
  const int device = devices.device(stream);
  // alpha and beta are read only when flags say so; an unused one still needs
  // a value of the element's size for the kernel's parameter list.
  const std::uint64_t unused = 0;
  catalog::GemmArgs args{.a = a, .b = b, .c = c, .m = p.m, .n = p.n, .kk = p.k, .lda = p.lda, .ldb = p.ldb,
                         .ldc = p.ldc, .trans_a = trans_flag(p.ta), .trans_b = trans_flag(p.tb),
                         .alpha = scaling.alpha != nullptr ? scaling.alpha : &unused,
                         .beta = scaling.beta != nullptr ? scaling.beta : &unused, .flags = scaling.flags};
  launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
}

void launch_gemm_argmax(catalog::KernelId id, std::size_t elem_size, const Problem& p, const void* a,
                        const void* b, void* c, std::int32_t* argmax, std::int64_t ldargmax,
                        CUstream stream) {
  if (const catalog::KernelId small = catalog::pick_product(id, p.m, p.n); small != id) {
    launch_gemm_batched(small, elem_size, p, a, b, c, argmax, ldargmax, Strides{}, 1, {nullptr, nullptr, 0},
                        stream);
    return;
  }
  check_product(p, elem_size);
  check_argmax(p, ldargmax);
  if (p.m == 0 || p.n == 0) return;
  check_non_null(argmax, "argmax");
  check_grid(id, Extent{p.m, p.n, p.k});
  const ProductSpans spans = product_spans(p, Strides{}, 1, elem_size, a, b, c, argmax, ldargmax);
  DeviceCheck devices;
  add_operands(devices, spans);
  const int device = devices.device(stream);
  catalog::GemmArgmaxArgs args{.a = a, .b = b, .c = c, .argmax = argmax, .m = p.m, .n = p.n, .kk = p.k,
                               .lda = p.lda, .ldb = p.ldb, .ldc = p.ldc, .ldargmax = ldargmax,
                               .trans_a = trans_flag(p.ta), .trans_b = trans_flag(p.tb)};
  launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
}

void launch_backward(catalog::KernelId id, std::size_t elem_size, const Problem& p,
                     const void* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                     std::int64_t ldargmax, bool reads_operand, const void* operand,
                     std::int64_t ld_operand, void* grad, std::int64_t ldgrad, CUstream stream) {
  const BackwardShape s = check_backward(id, elem_size, p, ldgc, ldargmax, reads_operand, ld_operand, ldgrad);
  if (!reads_operand) operand = nullptr;  // (+) semirings never read it
  if (s.grad.rows == 0 || s.grad.cols == 0) return;
  // The memset's pitch and width in bytes (the extent check bounds both).
  std::size_t pitch = 0, width = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(ldgrad), elem_size, &pitch) ||
      __builtin_mul_overflow(static_cast<std::size_t>(s.grad.cols), elem_size, &width)) {
    invalid("the gradient's pitch overflows 64 bits");
  }
  const bool reads_c = p.m > 0 && p.n > 0;
  // backward_a: blocks of 16 x 16 over dC, columns first (one block per tile of
  // C, as a product); backward_b: rows first, strips of 16 columns in grid y
  // (looped past 65535 by the kernel), so its atomics stay in L2.
  const auto& launch_info = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  Grid grid{};
  if (reads_c && s.wrt_a) {
    check_grid(id, Extent{p.m, p.n, p.k});
  } else if (reads_c) {
    const std::int64_t gx = (p.m - 1) / launch_info.tile_m + 1, strips = (p.n - 1) / launch_info.tile_n + 1;
    if (gx > 0x7fffffff) invalid("m = " + std::to_string(p.m) + " is too large for one launch");
    grid = Grid{static_cast<unsigned>(gx), static_cast<unsigned>(std::min<std::int64_t>(strips, kMaxGridY)), 1};
  }
  const int device = backward_device(s, reads_c, grad_c, argmax, reads_operand, operand, grad, stream);
  const auto& api = jit::driver::api();
  {
    // The kernel scatters with atomics, so the gradient starts from zero.
    jit::driver::ScopedContext context(device);
    jit::driver::check(api.cuMemsetD2D8Async(reinterpret_cast<CUdeviceptr>(grad), pitch, 0, width,
                                             static_cast<std::size_t>(s.grad.rows), stream),
                       "cuMemsetD2D8Async");
  }
  if (!reads_c) return;
  // backward_a and backward_b take one list (the operand not differentiated, the gradient): one fill for either.
  const auto fill = [&]<class Args>() {
    return Args{.grad_c = grad_c, .argmax = argmax, .operand = operand, .grad = grad, .m = p.m, .n = p.n,
                .kk = p.k, .ldgc = ldgc, .ldargmax = ldargmax, .ld_operand = ld_operand, .ld_grad = ldgrad,
                .trans_a = trans_flag(p.ta), .trans_b = trans_flag(p.tb)};
  };
  if (s.wrt_a) {
    auto args = fill.template operator()<catalog::BackwardAArgs>();
    launch(id, device, Extent{p.m, p.n, p.k}, stream, args);
  } else {
    auto args = fill.template operator()<catalog::BackwardBArgs>();
    launch_one_tier(id, device, grid, stream, args);
  }
}

void launch_gemm_batched(catalog::KernelId id, std::size_t elem_size, const Problem& p, const void* a,
                         const void* b, void* c, std::int32_t* argmax, std::int64_t ldargmax,
                         const Strides& strides, std::int64_t batch, const Scaling& scaling, CUstream stream) {
  const bool with_argmax = catalog::kInfo[static_cast<std::size_t>(id)].op == Op::kGemmBatchedArgmax;
  const Extents e = check_product(p, elem_size);
  const std::int64_t argmax_extent = with_argmax ? check_argmax(p, ldargmax) : 0;
  if (batch < 0) invalid("negative batch " + std::to_string(batch));
  check_batch("stride_a", strides.a, p.k > 0 ? e.a : 0, batch, elem_size, false);
  check_batch("stride_b", strides.b, p.k > 0 ? e.b : 0, batch, elem_size, false);
  check_batch("stride_c", strides.c, e.c, batch, elem_size, true);
  if (with_argmax) check_batch("stride_argmax", strides.argmax, argmax_extent, batch, sizeof(std::int32_t), true);
  if (p.m == 0 || p.n == 0 || batch == 0) return;
  if (with_argmax) check_non_null(argmax, "argmax");
  const catalog::KernelId tile = catalog::pick_tile(id, p.m, p.n);
  check_grid(tile, Extent{p.m, p.n, p.k, batch});
  const ProductSpans spans =
      product_spans(p, strides, batch, elem_size, a, b, c, with_argmax ? argmax : nullptr, ldargmax);
  DeviceCheck devices;
  add_operands(devices, spans);
  const int device = devices.device(stream);
  const int ta = trans_flag(p.ta), tb = trans_flag(p.tb);
  const Extent extent{p.m, p.n, p.k, batch};
  if (with_argmax) {
    catalog::GemmBatchedArgmaxArgs args{.a = a, .b = b, .c = c, .argmax = argmax, .m = p.m, .n = p.n, .kk = p.k,
                                        .lda = p.lda, .ldb = p.ldb, .ldc = p.ldc, .ldargmax = ldargmax,
                                        .trans_a = ta, .trans_b = tb, .stride_a = strides.a, .stride_b = strides.b,
                                        .stride_c = strides.c, .stride_argmax = strides.argmax, .batch = batch};
    launch(tile, device, extent, stream, args);
  } else {
    const std::uint64_t unused = 0;
    catalog::GemmBatchedArgs args{.a = a, .b = b, .c = c, .m = p.m, .n = p.n, .kk = p.k, .lda = p.lda,
                                  .ldb = p.ldb, .ldc = p.ldc, .trans_a = ta, .trans_b = tb, .stride_a = strides.a,
                                  .stride_b = strides.b, .stride_c = strides.c, .batch = batch,
                                  .alpha = scaling.alpha != nullptr ? scaling.alpha : &unused,
                                  .beta = scaling.beta != nullptr ? scaling.beta : &unused, .flags = scaling.flags};
    launch(tile, device, extent, stream, args);
  }
}

void launch_backward_batched(catalog::KernelId id, std::size_t elem_size, const Problem& p,
                             const void* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                             std::int64_t ldargmax, bool reads_operand, const void* operand,
                             std::int64_t ld_operand, void* grad, std::int64_t ldgrad, const Strides& strides,
                             std::int64_t batch, CUstream stream) {
  const BackwardShape s = check_backward(id, elem_size, p, ldgc, ldargmax, reads_operand, ld_operand, ldgrad);
  if (!reads_operand) operand = nullptr;
  if (batch < 0) invalid("negative batch " + std::to_string(batch));
  // Strides: a = dC, b = the operand read by MaxMul, c = the gradient.
  check_batch("stride_gc", strides.a, s.gc_extent, batch, elem_size, false);
  check_batch("stride_argmax", strides.argmax, s.argmax_extent, batch, sizeof(std::int32_t), false);
  if (reads_operand) check_batch(s.wrt_a ? "stride_b" : "stride_a", strides.b, s.other_extent, batch, elem_size, false);
  // Each thread owns a row (column) of one gradient: gradients must not overlap.
  check_batch(s.wrt_a ? "stride_ga" : "stride_gb", strides.c, s.grad_extent, batch, elem_size, true);
  if (s.grad.rows == 0 || s.grad.cols == 0 || batch == 0) return;
  // The kernel zeroes the gradient itself; dC is read only if it has elements.
  const bool reads_c = p.m > 0 && p.n > 0;
  // One thread per row of op(dA) (m) or column of op(dB) (n); z walks the batch. Checked before the driver.
  const auto& launch_info = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  const std::int64_t owners = s.wrt_a ? p.m : p.n;
  const std::int64_t gx = (owners - 1) / launch_info.block_x + 1;
  if (gx > 0x7fffffff) invalid("too many rows or columns for one launch");
  const int device =
      backward_device(s, reads_c, grad_c, argmax, reads_operand, operand, grad, stream, strides, batch);
  const Grid grid{static_cast<unsigned>(gx), 1, static_cast<unsigned>(batch < kMaxGridZ ? batch : kMaxGridZ)};
  // As launch_backward: one fill for either pass.
  const auto launch_pass = [&]<class Args>() {
    Args args{.grad_c = grad_c, .argmax = argmax, .operand = operand, .grad = grad, .m = p.m, .n = p.n, .kk = p.k,
              .ldgc = ldgc, .ldargmax = ldargmax, .ld_operand = ld_operand, .ld_grad = ldgrad,
              .trans_a = trans_flag(p.ta), .trans_b = trans_flag(p.tb), .stride_gc = strides.a,
              .stride_argmax = strides.argmax, .stride_operand = strides.b, .stride_grad = strides.c, .batch = batch};
    launch_one_tier(id, device, grid, stream, args);
  };
  if (s.wrt_a) {
    launch_pass.template operator()<catalog::BackwardABatchedArgs>();
  } else {
    launch_pass.template operator()<catalog::BackwardBBatchedArgs>();
  }
}

}  // namespace tropical::detail
