#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tropical::storage {

/// Machine code for one kernel and one target: CUBIN for the exact sm_XY, and
/// PTX for a driver newer than the compiler.
struct CompiledImage {
  std::vector<std::byte> cubin;
  std::string ptx;
};

}  // namespace tropical::storage
