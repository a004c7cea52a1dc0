#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "tropical/jit/kernel_source.hpp"
#include "tropical/jit/nvrtc.hpp"

namespace tropical::jit {

class DeviceLoader;

/// Which fragment of a kernel a loaded function came from (DESIGN.md, "Tiers").
enum class Tier : std::uint8_t {
  kTuned,  ///< register-tiled, double-buffered; compiles in ~1 s
  kQuick,  ///< simple tile; compiles in ~0.1 s, serves until the tuned one is loaded
};

/// The NVRTC effort for a tier's fragments: kLight for the quick tier, kFull for the tuned one.
constexpr Effort effort_of(Tier tier) noexcept { return tier == Tier::kQuick ? Effort::kLight : Effort::kFull; }

/// How the host launches one tier of a kernel: block shape and the tile of the output one block computes.
struct LaunchShape {
  unsigned block_x = 0, block_y = 0, tile_m = 0, tile_n = 0, smem_bytes = 0;
};

/// A loaded kernel as a registry publishes it; immutable once published.
struct Resolved {
  CUfunction function = nullptr;  ///< the function in its module, on its device
  LaunchShape launch;             ///< how to launch it
  Tier tier = Tier::kTuned;       ///< which fragment it came from
};

/// The facts of the first-use cost model of one kernel (zeros: the kernel has one tier).
struct TierCost {
  double quick_macs_per_ns = 0;  ///< expected rate of the quick kernel (1 T MAC/s = 1000)
  double tuned_compile_ms = 0;   ///< expected NVRTC compile of the tuned fragment
};

/// A catalog's second tier, all indexed by kernel id: quick[i] is kernel i's
/// quick fragment (empty source: one tier), and the launch shapes and cost
/// model of both tiers. Spans empty: no quick tier at all.
struct TierTable {
  Catalog quick;
  std::span<const LaunchShape> tuned_launch;
  std::span<const LaunchShape> quick_launch;
  std::span<const TierCost> cost;
};

/// What one call of a kernel allows: the quick kernel is taken only if
/// allow_quick, the stream is not capturing a graph, and the quick kernel would
/// finish `macs` multiply-adds before the tuned compile has finished.
struct Request {
  double macs = 0;           ///< size of the call's work (0: negligible)
  CUstream stream = nullptr;  ///< the stream the call launches on
  bool allow_quick = true;    ///< false: the tuned kernel only (waits for it)
};

/// How first use treats kernels that have a quick tier.
enum class TierMode : std::uint8_t {
  kTiered,     ///< the quick kernel serves until the tuned one is loaded (the default)
  kTunedOnly,  ///< first use compiles the tuned kernel, as with one tier (TROPICAL_TIERED=0)
  kQuickOnly,  ///< the quick kernel serves every call that allows it, graph capture and the
               ///< cost model ignored, and the tuned one is compiled only for calls that
               ///< allow nothing else (TROPICAL_TIERED=quick; for testing and measuring)
};

/// PTX of one kernel's fragment, made at build time for the virtual
/// architecture compute_<arch> with that fragment's compile options
/// (codegen/ptx.py), shipped in the library. The driver's JIT turns it into a
/// CUBIN for any device of that arch or newer without loading NVRTC
/// (DeviceLoader::jit). Empty text: the kernel ships none.
struct ShippedPtx {
  Tier tier = Tier::kTuned;  ///< which of the kernel's fragments it was compiled from
  int arch = 0;              ///< the virtual architecture, 10 * major + minor
  std::string_view digest;   ///< hex SHA-256 of text
  std::string_view text;     ///< the PTX
};

/// Compiles a fragment for sm_<arch>; jit::compile unless a test substitutes its own.
using Compiler = std::function<CompiledImage(const KernelSource&, int arch)>;

/// How a registry serves first use: which tiers, on how many background
/// threads, through which driver and compiler. The defaults give one tier.
struct TierConfig {
  TierTable table;                       ///< the quick tier (empty: one tier)
  TierMode mode = TierMode::kTiered;     ///< what first use does
  unsigned background_threads = 0;       ///< tuned compiles at once (0: one per spare core, at least 1)
  std::shared_ptr<DeviceLoader> loader;  ///< null: the CUDA driver
  Compiler compiler;                     ///< null: jit::compile
  std::span<const ShippedPtx> ptx;       ///< indexed by kernel id; empty: no kernel ships PTX
};

/// TROPICAL_TIERED: "0", "false", "no" or "off" (any case) give kTunedOnly,
/// "quick" gives kQuickOnly, anything else or unset kTiered; never throws.
TierMode tier_mode_from_env() noexcept;

/// Whether a call of `macs` multiply-adds should wait for the tuned kernel:
/// true if the quick kernel (at cost.quick_macs_per_ns) would run longer than
/// the tuned compile has left, estimated as cost.tuned_compile_ms less
/// `waited_ns` since it was queued, but never below a quarter of the estimate
/// (a compile that runs late is assumed to need that much more).
bool quick_takes_longer(const TierCost& cost, double macs, std::int64_t waited_ns) noexcept;

}  // namespace tropical::jit
