// Must NOT compile: batched backward passes exist for float and double only.
#include "tropical/gemm.hpp"

void misuse(const std::int64_t* gc, const std::int32_t* argmax, const std::int64_t* b, std::int64_t* ga) {
  tropical::backward_a_batched<tropical::MinPlus, std::int64_t>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1,
                                                                gc, 1, 1, argmax, 1, 1, b, 1, 1, ga, 1, 1, 1);
}
