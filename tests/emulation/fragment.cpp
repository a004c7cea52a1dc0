// One catalog fragment built for the CPU (tests/emulation/cuda_host.hpp): compiled once per kernel and
// tier with TROPICAL_EMU_FRAGMENT (its file), TROPICAL_EMU_KERNEL (the extern "C" kernel it defines: the
// quick tier's carries _quick), TROPICAL_EMU_NAME and TROPICAL_EMU_TIER (the catalog's name and the tier,
// as strings) and TROPICAL_EMU_NS (a namespace of its own: the fragments' helpers share names).
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

// Last: its macros rename words the standard headers use too.
#include "cuda_host.hpp"

namespace TROPICAL_EMU_NS {
#include "device_functions.inc"
// `__shared__ alignas(16) T x[...]` is `static alignas(16) ...` here, which C++ does not allow (an
// attribute amid the decl-specifiers); GNU's aligned attribute may stand there. (A macro named like a
// keyword: every standard header is included above, and it is undefined right after the fragment.)
#define alignas(bytes) __attribute__((aligned(bytes)))
#include TROPICAL_EMU_FRAGMENT
#undef alignas
}  // namespace TROPICAL_EMU_NS

namespace {

// args[i] points to the i-th parameter's value, as for cuLaunchKernel.
template <class... P, std::size_t... I>
void call(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<P>*>(args[I])...);
}

template <class... P>
void call(void (*kernel)(P...), void** args) {
  call(kernel, args, std::index_sequence_for<P...>{});
}

void entry(void** args) { call(&TROPICAL_EMU_NS::TROPICAL_EMU_KERNEL, args); }

const bool registered = tropical::emulation::add_kernel(TROPICAL_EMU_NAME, TROPICAL_EMU_TIER, &entry);

}  // namespace
