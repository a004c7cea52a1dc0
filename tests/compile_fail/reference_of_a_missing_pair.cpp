// Must NOT compile: the CPU reference has no AndOr over double either.
#include "tropical/reference.hpp"

void misuse(const double* a, const double* b, double* c) {
  tropical::reference::gemm<tropical::AndOr, double>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, a, 1, b, 1,
                                                     c, 1);
}
