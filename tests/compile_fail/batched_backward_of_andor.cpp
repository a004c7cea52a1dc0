// Must NOT compile: AndOr (booleans) has no backward pass.
#include "tropical/gemm.hpp"

void misuse(const std::uint8_t* gc, const std::int32_t* argmax, const std::uint8_t* a, std::uint8_t* gb) {
  tropical::backward_b_batched<tropical::AndOr, std::uint8_t>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, gc,
                                                              1, 1, argmax, 1, 1, a, 1, 1, gb, 1, 1, 1);
}
