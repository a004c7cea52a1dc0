// Must NOT compile: backward passes exist for float and double only.
#include "tropical/gemm.hpp"

void misuse(const std::int32_t* gc, const std::int32_t* argmax, const std::int32_t* b, std::int32_t* ga) {
  tropical::backward_a<tropical::MaxPlus, std::int32_t>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1,
                                                        gc, 1, argmax, 1, b, 1, ga, 1);
}
