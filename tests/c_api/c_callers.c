/* Every function of the C ABI that takes an enum, called as a C program calls it: in C any int converts to an
 * enum parameter, so a value outside the enum reaches the library without undefined behaviour on the caller's
 * side (a C++ caller could not pass one). Operands are small host arrays (2 x 2, leading dimensions 2). */
#include "c_callers.h"

#include <stddef.h>
#include <stdint.h>

#include "tropical/tropical.h"

int c_has_kernel(int semiring, int dtype, int op) { return tropical_has_kernel(semiring, dtype, op); }

int c_cpu_has_kernel(int semiring, int dtype, int op) { return tropical_cpu_has_kernel(semiring, dtype, op); }

size_t c_dtype_size(int dtype) { return tropical_dtype_size(dtype); }

int c_find_kernel(int semiring, int dtype, int op) {
  uint32_t id = 0;
  return tropical_find_kernel(semiring, dtype, op, &id);
}

int c_call_count(void) { return 20; }

int c_call(int which, int s, int t, int ta, int tb) {
  static double a[8], b[8], c[8], d[8], e[8], f[8];
  static int32_t x[8];
  const double one = 0;
  switch (which) {
    case 0: return tropical_gemm(s, t, ta, tb, 2, 2, 2, &one, a, 2, b, 2, &one, c, 2, NULL);
    case 1: return tropical_gemm_argmax(s, t, ta, tb, 2, 2, 2, a, 2, b, 2, c, 2, x, 2, NULL);
    case 2: return tropical_backward_a(s, t, ta, tb, 2, 2, 2, a, 2, x, 2, b, 2, c, 2, NULL);
    case 3: return tropical_backward_b(s, t, ta, tb, 2, 2, 2, a, 2, x, 2, b, 2, c, 2, NULL);
    case 4: return tropical_gemm_batched(s, t, ta, tb, 2, 2, 2, &one, a, 2, 4, b, 2, 4, &one, c, 2, 4, 1, NULL);
    case 5: return tropical_gemm_batched_argmax(s, t, ta, tb, 2, 2, 2, a, 2, 4, b, 2, 4, c, 2, 4, x, 2, 4, 1, NULL);
    case 6: return tropical_backward_a_batched(s, t, ta, tb, 2, 2, 2, a, 2, 4, x, 2, 4, b, 2, 4, c, 2, 4, 1, NULL);
    case 7: return tropical_backward_b_batched(s, t, ta, tb, 2, 2, 2, a, 2, 4, x, 2, 4, b, 2, 4, c, 2, 4, 1, NULL);
    case 8: return tropical_counting_gemm(t, ta, tb, 2, 2, 2, a, 2, b, 2, c, 2, d, 2, e, 2, f, 2, NULL);
    case 9:
      return tropical_counting_gemm_batched(t, ta, tb, 2, 2, 2, a, 2, 4, b, 2, 4, c, 2, 4, d, 2, 4, e, 2, 4, f, 2, 4,
                                            1, NULL);
    case 10: return tropical_cpu_gemm(s, t, ta, tb, 2, 2, 2, &one, a, 2, b, 2, &one, c, 2);
    case 11: return tropical_cpu_gemm_argmax(s, t, ta, tb, 2, 2, 2, a, 2, b, 2, c, 2, x, 2);
    case 12: return tropical_cpu_backward_a(s, t, ta, tb, 2, 2, 2, a, 2, x, 2, b, 2, c, 2);
    case 13: return tropical_cpu_backward_b(s, t, ta, tb, 2, 2, 2, a, 2, x, 2, b, 2, c, 2);
    case 14: return tropical_cpu_gemm_batched(s, t, ta, tb, 2, 2, 2, &one, a, 2, 4, b, 2, 4, &one, c, 2, 4, 1);
    case 15: return tropical_cpu_gemm_batched_argmax(s, t, ta, tb, 2, 2, 2, a, 2, 4, b, 2, 4, c, 2, 4, x, 2, 4, 1);
    case 16: return tropical_cpu_backward_a_batched(s, t, ta, tb, 2, 2, 2, a, 2, 4, x, 2, 4, b, 2, 4, c, 2, 4, 1);
    case 17: return tropical_cpu_backward_b_batched(s, t, ta, tb, 2, 2, 2, a, 2, 4, x, 2, 4, b, 2, 4, c, 2, 4, 1);
    case 18: return tropical_cpu_counting_gemm(t, ta, tb, 2, 2, 2, a, 2, b, 2, c, 2, d, 2, e, 2, f, 2);
    case 19:
      return tropical_cpu_counting_gemm_batched(t, ta, tb, 2, 2, 2, a, 2, 4, b, 2, 4, c, 2, 4, d, 2, 4, e, 2, 4, f,
                                                2, 4, 1);
    default: return -1;
  }
}
