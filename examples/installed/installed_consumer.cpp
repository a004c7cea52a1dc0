// Links the installed libtropical: lists the catalog and checks the CPU reference.
#include <tropical/tropical.hpp>

#include <cstdio>

int main() {
  std::int64_t a[] = {3}, b[] = {-5}, c[] = {0};
  tropical::reference::gemm<tropical::MinPlus, std::int64_t>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1,
                                                             a, 1, b, 1, c, 1);
  std::printf("%zu kernels in the installed catalog; MinPlus 3 (x) -5 = %lld\n", tropical::catalog::kKernelCount,
              static_cast<long long>(c[0]));
  return c[0] == -2 ? 0 : 1;
}
