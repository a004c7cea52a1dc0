// Must NOT compile: CountingTropical's elements are two arrays, so it has its own calls (gemm_counting).
#include "tropical/gemm.hpp"

void misuse(const float* a, const float* b, float* c) {
  tropical::gemm<tropical::CountingTropical, float>(1, 1, 1, a, b, c);
}
