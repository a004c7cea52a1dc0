/* The C ABI called from C with enum arguments as plain ints (c_callers.c); for the C ABI tests. */
#ifndef TROPICAL_TESTS_C_CALLERS_H
#define TROPICAL_TESTS_C_CALLERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** tropical_has_kernel(semiring, dtype, op). */
int c_has_kernel(int semiring, int dtype, int op);
/** tropical_cpu_has_kernel(semiring, dtype, op). */
int c_cpu_has_kernel(int semiring, int dtype, int op);
/** tropical_dtype_size(dtype). */
size_t c_dtype_size(int dtype);
/** tropical_find_kernel(semiring, dtype, op, &id)'s status. */
int c_find_kernel(int semiring, int dtype, int op);
/** How many products c_call knows (which = 0 .. count - 1). */
int c_call_count(void);
/** The status of product `which` (tropical_gemm, ..., tropical_cpu_counting_gemm_batched, in the header's order)
 * on 2 x 2 f64-sized host arrays with these enum values (counting products ignore s). */
int c_call(int which, int s, int t, int ta, int tb);

#ifdef __cplusplus
}
#endif

#endif
