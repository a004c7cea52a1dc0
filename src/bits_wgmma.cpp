// The wgmma AndOr launcher (src/bits_wgmma.hpp): whether the kernel applies, per device whether it is ready, and
// its launches (one block per 128 x 256 tile of C along grid x, the products of the batch along z).
#include "bits_wgmma.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "tropical/error.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/jit/tiers.hpp"

namespace tropical::detail {
namespace {

using G = catalog::BitsWgmmaGeometry;
constexpr catalog::KernelId kWgmmaKernel = catalog::KernelId::kBitsWgmmaB32;
// The arch whose arch-specific features (sm_90a) the kernel needs: no other runs wgmma.
constexpr int kWgmmaArch = 90;

/// Per device: 0 not asked yet, 1 the kernel is ready, 2 it is not (another arch, or its compile or load failed).
constexpr int kRemembered = jit::Registry::kMaxDevices;
std::array<std::atomic<int>, kRemembered> g_ready{};

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

bool ask(int device) {
  // TROPICAL_TIERED=quick: the quick tier serves every call (for testing and measuring it), nothing else.
  if (jit::tier_mode_from_env() == jit::TierMode::kQuickOnly) return false;
  if (jit::driver::device_arch(device) != kWgmmaArch) return false;
  // The ring's shared memory (193 KB): every sm_90 device has 227 KB a block, but a launch that asked for more
  // than the device grants would fail where the mma.sync kernel runs.
  const auto& api = jit::driver::api();
  CUdevice handle = 0;
  int shared = 0;
  if (api.cuDeviceGet(&handle, device) != CUDA_SUCCESS ||
      api.cuDeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, handle) != CUDA_SUCCESS ||
      shared < G::kSmemBytes) {
    return false;
  }
  try {
    // The registry compiles (sm_90a: the kernel's feature_arch) or reads the cache, and loads it; a failure
    // there (an NVRTC or driver without sm_90a, ...) leaves the mma.sync kernel to serve.
    (void)registry().function(static_cast<std::uint32_t>(kWgmmaKernel), device);
    return true;
  } catch (const CompileError&) {
    return false;
  } catch (const Unavailable&) {
    return false;
  } catch (const CudaError&) {
    return false;
  }
}

}  // namespace

bool bits_wgmma_fits(const catalog::BitsArgs& args) {
  if (args.m <= 0 || args.n <= 0 || args.kk <= 0 || args.batch <= 0) return false;
  if (((args.lda | args.ldb | args.stride_a | args.stride_b) & 3) != 0) return false;
  if (!aligned16(args.a) || !aligned16(args.bt)) return false;
  const std::int64_t tiles_m = (args.m - 1) / G::kTileM + 1, tiles_n = (args.n - 1) / G::kTileN + 1;
  return tiles_n <= 0x7fffffff / tiles_m;
}

bool bits_wgmma_ready(int device) {
  if (device < 0 || device >= kRemembered) return ask(device);
  std::atomic<int>& slot = g_ready[static_cast<std::size_t>(device)];
  int state = slot.load(std::memory_order_acquire);
  if (state == 0) {
    state = ask(device) ? 1 : 2;
    slot.store(state, std::memory_order_release);
  }
  return state == 1;
}

Grid bits_wgmma_grid(std::int64_t m, std::int64_t n, std::int64_t batch) {
  const std::int64_t tiles = ((m - 1) / G::kTileM + 1) * ((n - 1) / G::kTileN + 1);
  return Grid{static_cast<unsigned>(tiles), 1, static_cast<unsigned>(std::min<std::int64_t>(batch, kMaxGridZ))};
}

void bits_wgmma_launch(int device, const catalog::BitsArgs& args, CUstream stream) {
  constexpr std::int64_t kPerLaunch = kMaxGridZ;
  const std::size_t c_bytes = args.output == 1 ? 1 : 4;
  for (std::int64_t first = 0; first < args.batch; first += kPerLaunch) {
    const std::int64_t count = std::min<std::int64_t>(kPerLaunch, args.batch - first);
    catalog::BitsWgmmaArgs part{
        .a = args.a + first * args.stride_a, .bt = args.bt + first * args.stride_b,
        .c = static_cast<char*>(args.c) + static_cast<std::size_t>(first * args.stride_c) * c_bytes,
        .m = args.m, .n = args.n, .kk = args.kk, .lda = args.lda, .ldb = args.ldb, .ldc = args.ldc,
        .output = args.output, .stride_a = args.stride_a, .stride_b = args.stride_b, .stride_c = args.stride_c,
        .batch = count};
    launch_device_op<Op::kBitsWgmma, std::uint32_t>(device, bits_wgmma_grid(args.m, args.n, count), stream, part);
  }
}

}  // namespace tropical::detail
