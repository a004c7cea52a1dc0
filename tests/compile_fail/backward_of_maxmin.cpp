// Must NOT compile: MaxMin has no backward pass (its product selects an operand).
#include "tropical/gemm.hpp"

void misuse(const float* gc, const std::int32_t* argmax, const float* b, float* ga) {
  tropical::backward_a<tropical::MaxMin, float>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, gc, 1, argmax, 1,
                                                b, 1, ga, 1);
}
