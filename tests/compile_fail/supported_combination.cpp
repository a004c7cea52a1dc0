// Must compile: the control case of the compile-fail tests.
#include "tropical/gemm.hpp"

void use(const float* a, const float* b, float* c) { tropical::gemm<tropical::MaxPlus, float>(1, 1, 1, a, b, c); }
