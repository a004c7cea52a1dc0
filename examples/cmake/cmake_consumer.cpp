// Links the installed libtropical through CMake: checks the CPU reference.
#include <tropical/tropical.hpp>

#include <cstdio>

int main() {
  float a[] = {1, 4}, b[] = {2, -3}, c[] = {0};
  // (max, +): max(1 + 2, 4 + -3) = 3.
  tropical::reference::gemm<tropical::MaxPlus, float>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 2, a, 2, b,
                                                      1, c, 1);
  std::printf("%zu kernels in the installed catalog; MaxPlus [1 4] (x) [2 -3] = %g\n", tropical::catalog::kKernelCount,
              static_cast<double>(c[0]));
  return c[0] == 3 ? 0 : 1;
}
