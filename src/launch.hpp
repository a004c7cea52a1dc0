// The launch of a catalog kernel, shared by the launchers (gemm.cpp,
// gemm_counting.cpp): grids of one block per tile of C, the tier the registry
// serves, one cuLaunchKernel on the caller's stream (a split gemm, two: src/split_k.hpp).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "tropical/catalog.hpp"
#include "tropical/kernel_args.hpp"
#include "tropical/semiring.hpp"
#include "tropical/jit/tiers.hpp"

namespace tropical::detail {

inline constexpr std::int64_t kMaxGridY = 65535;
inline constexpr std::int64_t kMaxGridZ = 65535;

/// A launch's grid: blocks along n, m and the batch.
struct Grid {
  unsigned x, y, z;
};

/// What one launch computes: the output's rows and columns, the depth of its
/// products (for the first-use cost model) and the batch.
struct Extent {
  std::int64_t m, n, k, batch = 1;
};

/// The grid of one block per tile of C (launch's tile) over e; rejects a grid the device cannot launch.
Grid grid_for(const jit::LaunchShape& launch, const Extent& e);

/// Launches kernel `id` (whichever tier the registry serves this call) on `device`.
void launch(catalog::KernelId id, int device, const Extent& e, CUstream stream, void** args);

/// The kernel a call of `id` over e gets (the tier the first-use rules serve) and its grid of one block per
/// tile; checked as launch() checks. launch() is serve() then launch_function().
struct Served {
  const jit::Resolved* kernel;
  Grid grid;
};
Served serve(catalog::KernelId id, int device, const Extent& e, CUstream stream);

/// cuLaunchKernel of `function` on `grid` in blocks of `launch`'s shape; a function taking more than the 48 KB
/// any function may take unasked is allowed its bytes first. `dependent`: launched as the programmatic
/// dependent of the stream's previous kernel (it may start as that one's blocks trigger; sm_90 on). The
/// device's context must be current.
void launch_function(CUfunction function, Grid grid, const jit::LaunchShape& launch, CUstream stream, void** args,
                     bool dependent = false);

/// Launches kernel `id`, which has one tier, on `grid` (a kernel whose grid is
/// not one block per output tile).
void launch_one_tier(catalog::KernelId id, int device, Grid grid, CUstream stream, void** args);

/// Throws std::logic_error naming kernel `id`, launched with another kernel's argument list (a bug of the library's).
[[noreturn]] void signature_mismatch(catalog::KernelId id);

/// Throws std::logic_error (a bug of the library's) unless kernel `id` takes the parameter list `signature`:
/// an argument struct filled for another kernel would launch it on garbage. Inline: it runs on every launch.
inline void check_signature(catalog::KernelId id, catalog::Signature signature) {
  if (catalog::kSignatureOf[static_cast<std::size_t>(id)] != signature) [[unlikely]] signature_mismatch(id);
}

/// launch() with the arguments of a struct of tropical/kernel_args.hpp, checked against kernel `id`'s list.
template <class Args>
void launch(catalog::KernelId id, int device, const Extent& e, CUstream stream, Args& args) {
  check_signature(id, Args::kSignature);
  auto pointers = args.pointers();
  launch(id, device, e, stream, pointers.data());
}

/// launch_one_tier() with the arguments of a struct of tropical/kernel_args.hpp, checked as launch()'s.
template <class Args>
void launch_one_tier(catalog::KernelId id, int device, Grid grid, CUstream stream, Args& args) {
  check_signature(id, Args::kSignature);
  auto pointers = args.pointers();
  launch_one_tier(id, device, grid, stream, pointers.data());
}

/// Launches device op O (codegen/spec.py, DEVICE_OPS) over elements T, of semiring S where the op has them, on
/// `grid` with the arguments of its struct of tropical/kernel_args.hpp: the typed launcher of every device op.
template <Op O, class T, class S = void, class Args>
void launch_device_op(int device, Grid grid, CUstream stream, Args& args) {
  launch_one_tier(catalog::device_kernel<O, T, S>(), device, grid, stream, args);
}

/// Rejects a product whose grid the device cannot launch (m too large for one
/// launch, ...) before any driver call, on the tuned kernel's tiles as launch() does.
void check_grid(catalog::KernelId id, const Extent& e);

/// The number of SMs of `device`: the driver's answer, kept for devices 0-63 once it gave one; 1 if it will not say.
int multiprocessors(int device);

/// The kernels' transpose flag.
inline int trans_flag(Trans t) { return t == Trans::kYes ? 1 : 0; }

}  // namespace tropical::detail
