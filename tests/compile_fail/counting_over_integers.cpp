// Must NOT compile: CountingTropical's values and counts are float or double.
#include "tropical/counting.hpp"

void misuse(const int* a, int* c) {
  const tropical::CountingMatrix<const int> x{a, 1, a, 1};
  tropical::gemm_counting<int>(tropical::Trans::kNo, tropical::Trans::kNo, 1, 1, 1, x, x,
                               tropical::CountingMatrix<int>{c, 1, c + 1, 1});
}
