// Must NOT compile: bytes exist for AndOr only.
#include "tropical/gemm.hpp"

void misuse(const std::uint8_t* a, const std::uint8_t* b, std::uint8_t* c) {
  tropical::gemm<tropical::MaxPlus, std::uint8_t>(1, 1, 1, a, b, c);
}
