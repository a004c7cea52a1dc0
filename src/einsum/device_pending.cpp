// The device runner until the library's permute kernel is in (device.cpp then replaces this file).

#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

namespace tropical::detail {

void einsum_device(const EinsumProgram&, const EinsumKernels&, std::span<const void* const>, void*, void*, CUstream) {
  throw Unavailable("tropical: einsum on the device needs the library's permute kernel, which this build lacks");
}

}  // namespace tropical::detail
