#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tropical::jit {

/// One entry of a generated kernel catalog: a self-contained CUDA fragment
/// (NVRTC compiles it alone, no headers) defining the extern "C" kernel `name`.
struct KernelSource {
  std::uint32_t id;         ///< dense index of the entry in its catalog
  std::string_view name;    ///< kernel symbol and registry name
  std::string_view source;  ///< the CUDA fragment
  std::string_view digest;  ///< hex SHA-256 of source
  /// Nonzero: the fragment uses the arch-specific features of sm_<feature_arch>a (wgmma), which NVRTC compiles
  /// for that arch as sm_<feature_arch>a (compile_options); for any other arch its kernel is a stub.
  int feature_arch = 0;
};

/// A whole catalog: entry i has id i.
using Catalog = std::span<const KernelSource>;

}  // namespace tropical::jit
