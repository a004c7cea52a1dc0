#include "tropical/gemm.hpp"

#include <algorithm>
#include <string>

#include "checks.hpp"
#include "launch.hpp"
#include "tropical/catalog_tiers.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {
void launch_gemm(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream) {
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
  const Scaling scaling = kernel_scaling(p.scaling);
  const void* a = p.a.data;
  const void* b = p.b.data;
  void* c = p.c.data;
  long long m = p.m(), n = p.n(), k = p.k(), lda = p.a.ld, ldb = p.b.ld, ldc = p.c.ld;
  int ta = trans_flag(p.a.trans), tb = trans_flag(p.b.trans), flags = scaling.flags;
  // alpha and beta are read only when flags say so; an unused one still needs
  // a value of the element's size for the kernel's parameter list.
  const std::uint64_t unused = 0;
  void* alpha = const_cast<void*>(scaling.alpha != nullptr ? scaling.alpha : &unused);
  void* beta = const_cast<void*>(scaling.beta != nullptr ? scaling.beta : &unused);
  void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, alpha, beta, &flags};
  launch(id, device, Extent{p.m(), p.n(), p.k()}, stream, args);
}

void launch_gemm_argmax(catalog::KernelId id, const Product<void>& p, std::size_t elem_size, CUstream stream) {
  if (const catalog::KernelId small = catalog::pick_product(id, p.m(), p.n()); small != id) {
    launch_gemm_batched(small, p, elem_size, stream);
    return;
  }
  // check() in its two halves, the grid the device can launch between them.
  if (!check_shapes(p, elem_size)) return;
  check_grid(id, Extent{p.m(), p.n(), p.k()});
  check_operands(p, elem_size);
  const int device = device_of(spans(p, elem_size), stream);
  const void* a = p.a.data;
  const void* b = p.b.data;
  void* c = p.c.data;
  std::int32_t* argmax = p.argmax->data;
  long long m = p.m(), n = p.n(), k = p.k(), lda = p.a.ld, ldb = p.b.ld, ldc = p.c.ld, ldx = p.argmax->ld;
  int ta = trans_flag(p.a.trans), tb = trans_flag(p.b.trans);
  void* args[] = {&a, &b, &c, &argmax, &m, &n, &k, &lda, &ldb, &ldc, &ldx, &ta, &tb};
  launch(id, device, Extent{p.m(), p.n(), p.k()}, stream, args);
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
  long long m = e.m, n = e.n, k = e.k, ldg = g.grad_c.ld, ldx = g.argmax.ld, ldo = g.operand.ld, ldr = ldgrad;
  int ta = trans_flag(wrt_a ? g.grad.trans : g.operand.trans), tb = trans_flag(wrt_a ? g.operand.trans : g.grad.trans);
  void* args[] = {&grad_c, &argmax, &operand, &grad, &m, &n, &k, &ldg, &ldx, &ldo, &ldr, &ta, &tb};
  if (wrt_a) {
    launch(id, device, e, stream, args);
  } else {
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
  const void* a = p.a.data;
  const void* b = p.b.data;
  void* c = p.c.data;
  std::int32_t* argmax = with_argmax ? p.argmax->data : nullptr;
  const Operand<std::int32_t> x = with_argmax ? *p.argmax : Operand<std::int32_t>{};
  long long m = p.m(), n = p.n(), k = p.k(), lda = p.a.ld, ldb = p.b.ld, ldc = p.c.ld, ldx = x.ld;
  long long sa = p.a.stride, sb = p.b.stride, sc = p.c.stride, sx = x.stride, nb = batch;
  int ta = trans_flag(p.a.trans), tb = trans_flag(p.b.trans), flags = scaling.flags;
  const Extent extent{p.m(), p.n(), p.k(), batch};
  if (with_argmax) {
    void* args[] = {&a, &b, &c, &argmax, &m, &n, &k, &lda, &ldb, &ldc, &ldx, &ta, &tb, &sa, &sb, &sc, &sx, &nb};
    launch(tile, device, extent, stream, args);
  } else {
    const std::uint64_t unused = 0;
    void* alpha = const_cast<void*>(scaling.alpha != nullptr ? scaling.alpha : &unused);
    void* beta = const_cast<void*>(scaling.beta != nullptr ? scaling.beta : &unused);
    void* args[] = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, &sa, &sb, &sc, &nb, alpha, beta, &flags};
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
  long long m = g.m(), n = g.n(), k = g.k(), ldg = g.grad_c.ld, ldx = g.argmax.ld, ldo = g.operand.ld, ldr = g.grad.ld;
  long long sg = g.grad_c.stride, sx = g.argmax.stride, so = g.operand.stride, sr = g.grad.stride, nb = batch;
  int ta = trans_flag(wrt_a ? g.grad.trans : g.operand.trans), tb = trans_flag(wrt_a ? g.operand.trans : g.grad.trans);
  void* args[] = {&grad_c, &argmax, &operand, &grad, &m, &n, &k, &ldg, &ldx, &ldo, &ldr, &ta, &tb, &sg, &sx, &so, &sr, &nb};
  launch_one_tier(id, device, Grid{static_cast<unsigned>(gx), 1, static_cast<unsigned>(batch < kMaxGridZ ? batch : kMaxGridZ)},
         stream, args);
}

}  // namespace tropical::detail
