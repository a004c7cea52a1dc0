// Must NOT compile: MinMax has no backward pass, in the CPU reference either.
#include "tropical/reference.hpp"

void misuse(const float* gc, const std::int32_t* argmax, const float* a, float* gb) {
  tropical::reference::backward_b<tropical::MinMax, float>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, gc, 1,
                                                           argmax, 1, a, 1, gb, 1);
}
