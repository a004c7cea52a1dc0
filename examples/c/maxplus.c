/* tropical from C: a max-plus product with its argmax on the CPU (every machine), and a call the catalog
 * refuses. On a GPU the same call is tropical_gemm_argmax with device pointers and a CUstream (void*).
 * Build: cc -std=c99 maxplus.c $(pkg-config --cflags --libs tropical) */
#include <stdio.h>

#include <tropical/tropical.h>

int main(void) {
  /* C (2 x 2) = A (2 x 3) (x) B (3 x 2) over (max, +), row-major host arrays. */
  const float a[6] = {0, 1, 2, 3, 4, 5};
  const float b[6] = {1, 0, 0, 1, 2, 2};
  float c[4];
  int32_t argmax[4];
  tropical_status status;

  printf("tropical %s (C ABI %d), %d CUDA device(s)\n", tropical_version(), tropical_abi_version(),
         tropical_device_count());
  status = tropical_cpu_gemm_argmax(TROPICAL_MAXPLUS, TROPICAL_F32, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 3,
                                    a, 3, b, 2, c, 2, argmax, 2);
  if (status != TROPICAL_OK) {
    fprintf(stderr, "tropical_cpu_gemm_argmax: %s\n", tropical_last_error());
    return 1;
  }
  printf("C = [%g %g; %g %g], argmax = [%d %d; %d %d]\n", c[0], c[1], c[2], c[3], (int)argmax[0],
         (int)argmax[1], (int)argmax[2], (int)argmax[3]);

  /* A bad call returns a status and a message; nothing is written. */
  status = tropical_cpu_gemm(TROPICAL_ANDOR, TROPICAL_F32, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 3, NULL, a,
                             3, b, 2, NULL, c, 2);
  printf("andor over f32: status %d: %s\n", (int)status, tropical_last_error());
  return c[0] == 4 && c[3] == 7 && argmax[0] == 2 && status == TROPICAL_ERROR_NOT_IN_CATALOG ? 0 : 1;
}
