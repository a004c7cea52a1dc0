#include "tropical/gemm.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include "checks.hpp"
#include "launch.hpp"
#include "split_k.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
namespace {

/// Checks p and launches `id` with the arguments make_args() fills (a struct of tropical/kernel_args.hpp); a
/// product whose m x n fits a small tile of the batched op runs there as a batch of one instead.
template <class MakeArgs>
void launch_single(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream,
                   MakeArgs make_args) {
  // A small product is a batch of one on a small tile: the batched launcher checks and launches it.
  if (const catalog::KernelId small = catalog::pick_product(id, p.m(), p.n()); small != id) {
    launch_gemm_batched(small, p, elem_size, stream);
    return;
  }
  // check() in its two halves, the grid the device can launch between them.
  if (!check_shapes(p, elem_size)) return;
  check_grid(id, Extent{p.m(), p.n(), p.k()});
  check_operands(p, elem_size);
  const int device = device_of(spans(p, elem_size), stream);
  auto args = make_args();
  const Extent e{p.m(), p.n(), p.k()};
  if constexpr (std::is_same_v<decltype(args), catalog::GemmArgs>) {
    // A plain product may split its k where its tiles leave the device's last wave partly empty.
    check_signature(id, catalog::GemmArgs::kSignature);
    const Served served = serve(id, device, e, stream);
    if (launch_gemm_split(id, served, device, e, stream, args, elem_size)) return;
    jit::driver::ScopedContext context(device);
    auto pointers = args.pointers();
    launch_function(served.kernel->function, served.grid, served.kernel->launch, stream, pointers.data());
  } else {
    launch(id, device, e, stream, args);
  }
}

}  // namespace

void launch_gemm(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream) {
  const Scaling scaling = kernel_scaling(p.scaling);
  // alpha and beta are read only when flags say so; an unused one still needs
  // a value of the element's size for the kernel's parameter list.
  const std::uint64_t unused = 0;
  launch_single(id, p, elem_size, stream, [&] {
    return catalog::GemmArgs{.a = p.a.data, .b = p.b.data, .c = p.c.data, .m = p.m(), .n = p.n(), .kk = p.k(),
                             .lda = p.a.ld, .ldb = p.b.ld, .ldc = p.c.ld, .trans_a = trans_flag(p.a.trans),
                             .trans_b = trans_flag(p.b.trans),
                             .alpha = scaling.alpha != nullptr ? scaling.alpha : &unused,
                             .beta = scaling.beta != nullptr ? scaling.beta : &unused, .flags = scaling.flags,
                             .work = nullptr, .whole_rows = 0, .parts = 0};
  });
}

void launch_gemm_argmax(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream) {
  launch_single(id, p, elem_size, stream, [&] {
    return catalog::GemmArgmaxArgs{.a = p.a.data, .b = p.b.data, .c = p.c.data, .argmax = p.argmax->data,
                                   .m = p.m(), .n = p.n(), .kk = p.k(), .lda = p.a.ld, .ldb = p.b.ld,
                                   .ldc = p.c.ld, .ldargmax = p.argmax->ld, .trans_a = trans_flag(p.a.trans),
                                   .trans_b = trans_flag(p.b.trans)};
  });
}

void launch_backward(catalog::KernelId id, const Gradient<void>& g, std::size_t elem_size, CUstream stream) {
  if (!check_shapes(g, elem_size)) return;
  const bool wrt_a = g.wrt == Wrt::kA;
  const void* grad_c = g.grad_c.data;
  const std::int32_t* argmax = g.argmax.data;
  const void* operand = g.reads_operand ? g.operand.data : nullptr;  // (+) semirings never read it
  void* grad = g.grad.data;
  const std::int64_t ldgrad = g.grad.ld;
  // The memset's pitch and width in bytes (the extent check bounds both).
  std::size_t pitch = 0, width = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(ldgrad), elem_size, &pitch) ||
      __builtin_mul_overflow(static_cast<std::size_t>(g.grad.stored_cols()), elem_size, &width)) {
    invalid("the gradient's pitch overflows 64 bits");
  }
  const Extent e{g.m(), g.n(), g.k()};
  const bool reads_c = e.m > 0 && e.n > 0;
  // backward_a: blocks of 16 x 16 over dC, columns first (one block per tile of
  // C, as a product); backward_b: rows first, strips of 16 columns in grid y
  // (looped past 65535 by the kernel), so its atomics stay in L2.
  const auto& launch_info = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  Grid grid{};
  if (reads_c && wrt_a) {
    check_grid(id, e);
  } else if (reads_c) {
    const std::int64_t gx = (e.m - 1) / launch_info.tile_m + 1, strips = (e.n - 1) / launch_info.tile_n + 1;
    if (gx > 0x7fffffff) invalid("m = " + std::to_string(e.m) + " is too large for one launch");
    grid = Grid{static_cast<unsigned>(gx), static_cast<unsigned>(std::min<std::int64_t>(strips, kMaxGridY)), 1};
  }
  check_operands(g, elem_size);  // check()'s second half, after the device's limits
  const int device = device_of(spans(g, elem_size), stream);
  const auto& api = jit::driver::api();
  {
    // The kernel scatters with atomics, so the gradient starts from zero.
    jit::driver::ScopedContext context(device);
    jit::driver::check(api.cuMemsetD2D8Async(reinterpret_cast<CUdeviceptr>(grad), pitch, 0, width,
                                             static_cast<std::size_t>(g.grad.stored_rows()), stream),
                       "cuMemsetD2D8Async");
  }
  if (!reads_c) return;
  // backward_a and backward_b take one list (the operand not differentiated, the gradient): one fill for either.
  const auto fill = [&]<class Args>() {
    return Args{.grad_c = grad_c, .argmax = argmax, .operand = operand, .grad = grad, .m = e.m, .n = e.n,
                .kk = e.k, .ldgc = g.grad_c.ld, .ldargmax = g.argmax.ld, .ld_operand = g.operand.ld,
                .ld_grad = ldgrad, .trans_a = trans_flag(wrt_a ? g.grad.trans : g.operand.trans),
                .trans_b = trans_flag(wrt_a ? g.operand.trans : g.grad.trans)};
  };
  if (wrt_a) {
    auto args = fill.template operator()<catalog::BackwardAArgs>();
    launch(id, device, e, stream, args);
  } else {
    auto args = fill.template operator()<catalog::BackwardBArgs>();
    launch_one_tier(id, device, grid, stream, args);
  }
}

void launch_gemm_batched(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream) {
  const bool with_argmax = catalog::kInfo[static_cast<std::size_t>(id)].op == Op::kGemmBatchedArgmax;
  const catalog::KernelId tile = catalog::pick_tile(id, p.m(), p.n());
  if (!check_shapes(p, elem_size)) return;
  const std::int64_t batch = p.batch;
  check_grid(tile, Extent{p.m(), p.n(), p.k(), batch});
  check_operands(p, elem_size);
  const int device = device_of(spans(p, elem_size), stream);
  const Scaling scaling = kernel_scaling(p.scaling);
  const int ta = trans_flag(p.a.trans), tb = trans_flag(p.b.trans);
  const Extent extent{p.m(), p.n(), p.k(), batch};
  if (with_argmax) {
    catalog::GemmBatchedArgmaxArgs args{.a = p.a.data, .b = p.b.data, .c = p.c.data, .argmax = p.argmax->data,
                                        .m = p.m(), .n = p.n(), .kk = p.k(), .lda = p.a.ld, .ldb = p.b.ld,
                                        .ldc = p.c.ld, .ldargmax = p.argmax->ld, .trans_a = ta, .trans_b = tb,
                                        .stride_a = p.a.stride, .stride_b = p.b.stride, .stride_c = p.c.stride,
                                        .stride_argmax = p.argmax->stride, .batch = batch};
    launch(tile, device, extent, stream, args);
  } else {
    const std::uint64_t unused = 0;
    catalog::GemmBatchedArgs args{.a = p.a.data, .b = p.b.data, .c = p.c.data, .m = p.m(), .n = p.n(), .kk = p.k(),
                                  .lda = p.a.ld, .ldb = p.b.ld, .ldc = p.c.ld, .trans_a = ta, .trans_b = tb,
                                  .stride_a = p.a.stride, .stride_b = p.b.stride, .stride_c = p.c.stride,
                                  .batch = batch, .alpha = scaling.alpha != nullptr ? scaling.alpha : &unused,
                                  .beta = scaling.beta != nullptr ? scaling.beta : &unused, .flags = scaling.flags};
    launch(tile, device, extent, stream, args);
  }
}

void launch_backward_batched(catalog::KernelId id, const Gradient<void>& g, std::size_t elem_size,
                             CUstream stream) {
  if (!check_shapes(g, elem_size)) return;
  const bool wrt_a = g.wrt == Wrt::kA;
  const std::int64_t batch = g.batch;
  const void* grad_c = g.grad_c.data;
  const std::int32_t* argmax = g.argmax.data;
  const void* operand = g.reads_operand ? g.operand.data : nullptr;
  void* grad = g.grad.data;
  // One thread per row of op(dA) (m) or column of op(dB) (n); z walks the batch; the kernel zeroes the
  // gradient itself. Checked before the driver.
  const auto& launch_info = catalog::kInfo[static_cast<std::size_t>(id)].launch;
  const std::int64_t owners = wrt_a ? g.m() : g.n();
  const std::int64_t gx = (owners - 1) / launch_info.block_x + 1;
  if (gx > 0x7fffffff) invalid("too many rows or columns for one launch");
  check_operands(g, elem_size);  // check()'s second half, after the device's limits
  const int device = device_of(spans(g, elem_size), stream);
  const Grid grid{static_cast<unsigned>(gx), 1, static_cast<unsigned>(batch < kMaxGridZ ? batch : kMaxGridZ)};
  // As launch_backward: one fill for either pass.
  const auto launch_pass = [&]<class Args>() {
    Args args{.grad_c = grad_c, .argmax = argmax, .operand = operand, .grad = grad, .m = g.m(), .n = g.n(),
              .kk = g.k(), .ldgc = g.grad_c.ld, .ldargmax = g.argmax.ld, .ld_operand = g.operand.ld,
              .ld_grad = g.grad.ld, .trans_a = trans_flag(wrt_a ? g.grad.trans : g.operand.trans),
              .trans_b = trans_flag(wrt_a ? g.operand.trans : g.grad.trans), .stride_gc = g.grad_c.stride,
              .stride_argmax = g.argmax.stride, .stride_operand = g.operand.stride, .stride_grad = g.grad.stride,
              .batch = batch};
    launch_one_tier(id, device, grid, stream, args);
  };
  if (wrt_a) {
    launch_pass.template operator()<catalog::BackwardABatchedArgs>();
  } else {
    launch_pass.template operator()<catalog::BackwardBBatchedArgs>();
  }
}

}  // namespace tropical::detail
