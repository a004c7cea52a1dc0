#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tropical/jit/kernel_source.hpp"
#include "tropical/storage/image.hpp"

namespace tropical::jit {

/// The storage's image type: the compiler's output.
using storage::CompiledImage;

/// How much work NVRTC spends on a fragment's code.
enum class Effort : std::uint8_t {
  kFull,   ///< full optimisation: every kernel that stays (tuned, or a kernel with one tier)
  kLight,  ///< less optimisation for a shorter compile: quick fragments, which serve only until the tuned one loads
};

/// The fixed NVRTC option list used for every compile for `sm_<arch>`
/// (arch = 10 * major + minor, e.g. 90) with kFull effort, in the order it is passed:
///   --gpu-architecture=sm_<arch>  a real architecture, so NVRTC emits CUBIN
///                                 (it emits none for a virtual compute_XY);
///   --std=c++17                   the dialect the fragments are written in,
///                                 pinned so a new NVRTC default cannot change it;
///   --fmad=false                  no a*b+c contraction into FMA, so every
///                                 product and sum rounds as the CPU reference does;
///   --ftz=false                   keep float subnormals (NVRTC's default, pinned),
///                                 so max/min/+ see the same values as the CPU.
/// kLight appends two options that leave the arithmetic as it is (same
/// --fmad/--ftz, so the same bits) and cut ~25% of a quick fragment's compile
/// (bench/RESULTS.md, "Cheaper quick compiles"):
///   --Ofast-compile=min           less NVVM optimisation, ptxas at -O1;
///   --minimal                     no implicit CUDA runtime/texture declarations
///                                 (the fragments are self-contained).
/// No option turns warnings into errors (NVRTC 13 has none); compile() rejects
/// any log that reports a warning instead. arch_specific: sm_<arch>a in place of
/// sm_<arch> (the arch's own features, e.g. wgmma on sm_90a; the image runs on
/// that arch alone), for a kernel whose KernelSource::feature_arch is arch.
std::vector<std::string> compile_options(int arch, Effort effort = Effort::kFull, bool arch_specific = false);

/// compile_options() for `kernel` on sm_<arch>: arch-specific where the kernel's feature_arch is arch.
std::vector<std::string> compile_options(const KernelSource& kernel, int arch, Effort effort = Effort::kFull);

/// Compiles `kernel.source` alone to CUBIN and PTX for sm_<arch> with
/// compile_options(kernel, arch, effort). Opens libnvrtc with dlopen on the first call.
/// Thread-safe. Throws CompileError (with the NVRTC log and options) if the
/// fragment does not compile or NVRTC prints any warning, Unavailable if
/// libnvrtc cannot be loaded.
CompiledImage compile(const KernelSource& kernel, int arch, Effort effort = Effort::kFull);

/// Identity of the NVRTC that compile() would use (its resolved file name and
/// size, e.g. "libnvrtc.so.13.0.88:109338064", or the soname and the CUDA
/// version built against when the file cannot be found by name), found
/// without loading it; part of cache keys. Thread-safe; computed once per
/// process; never throws Unavailable.
const std::string& nvrtc_identity();

/// NVRTC's own version, "major.minor"; loads libnvrtc. Throws Unavailable.
std::string nvrtc_version();

/// True once a compile() of this process has succeeded.
bool nvrtc_compiled() noexcept;

/// Loads NVRTC and compiles a trivial kernel once per process, so that a
/// compile on a background thread is never the first (whose exit handlers
/// would be registered after the exit guard's). Throws like compile().
void prepare_compiler();

/// The sm_XY targets (10 * major + minor, ascending) that the NVRTC compile()
/// uses can compile for, as nvrtcGetSupportedArchs reports them; loads
/// libnvrtc. Thread-safe. Throws Unavailable.
std::vector<int> supported_archs();

/// True once this process has loaded libnvrtc (through compile or nvrtc_version).
bool nvrtc_loaded() noexcept;

}  // namespace tropical::jit
