// Must compile: the control case of the compile-fail tests, one call of each kind.
#include "tropical/gemm.hpp"

void use(const float* a, const float* b, float* c, const std::uint8_t* x, std::uint8_t* y, std::int32_t* arg) {
  using tropical::Trans;
  tropical::gemm<tropical::MaxPlus, float>(1, 1, 1, a, b, c);
  tropical::gemm<tropical::MaxMin, float>(Trans::kNo, Trans::kNo, 1, 1, 1, 2.0f, a, 1, b, 1, 3.0f, c, 1);
  tropical::gemm<tropical::AndOr, std::uint8_t>(1, 1, 1, x, x, y);
  tropical::gemm_batched_argmax<tropical::AndOr, std::uint8_t>(Trans::kNo, Trans::kNo, 1, 1, 1, x, 1, 1, x, 1, 1, y, 1,
                                                               1, arg, 1, 1, 1);
  tropical::backward_b_batched<tropical::MaxMul, float>(Trans::kNo, Trans::kNo, 1, 1, 1, a, 1, 1, arg, 1, 1, b, 1, 1,
                                                        c, 1, 1, 1);
}
