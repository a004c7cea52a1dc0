// Must NOT compile: AndOr exists over std::uint8_t only.
#include "tropical/gemm.hpp"

void misuse(const float* a, const float* b, float* c) {
  tropical::gemm_batched_argmax<tropical::AndOr, float>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, a, 1, 1, b,
                                                        1, 1, c, 1, 1, nullptr, 1, 1, 1);
}
