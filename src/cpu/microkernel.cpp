#include "kernel.hpp"
#include "tropical/cpu/gemm.hpp"

namespace tropical::cpu {
namespace detail {

template <class S, class T>
const KernelSet<T>& vector_kernels() {
  static const KernelSet<T> none{};
  return none;
}

const char* isa_name() { return "scalar"; }

#define TROPICAL_CPU_PAIR(S, T) template const KernelSet<T>& vector_kernels<S, T>();
#define TROPICAL_CPU_NUMBERS(S) \
  TROPICAL_CPU_PAIR(S, float) TROPICAL_CPU_PAIR(S, double) TROPICAL_CPU_PAIR(S, std::int32_t) TROPICAL_CPU_PAIR(S, std::int64_t)
TROPICAL_CPU_NUMBERS(MaxPlus)
TROPICAL_CPU_NUMBERS(MinPlus)
TROPICAL_CPU_NUMBERS(MaxMul)
TROPICAL_CPU_NUMBERS(MaxMin)
TROPICAL_CPU_NUMBERS(MinMax)
TROPICAL_CPU_PAIR(AndOr, std::uint8_t)

}  // namespace detail

std::string_view isa() { return detail::isa_name(); }

}  // namespace tropical::cpu
