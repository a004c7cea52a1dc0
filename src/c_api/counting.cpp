// The C ABI's CountingTropical products: the dtype to float or double, then
// tropical::gemm_counting on device pointers or tropical::cpu::gemm_counting on
// host memory (both check every argument and throw tropical::Error).

#include <cuda.h>

#include "dispatch.hpp"
#include "status.hpp"
#include "tropical/counting.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/tropical.h"

using tropical::CountingMatrix;
using tropical::c_api::check_aligned;
using tropical::c_api::guarded;
using tropical::c_api::raw;
using tropical::c_api::to_trans;
using tropical::c_api::with_counting_type;

namespace {

/// One operand as two arrays (values, counts) with their leading dimensions and strides.
struct Arrays {
  const void* values;
  int64_t ld_values, stride_values;
  const void* counts;
  int64_t ld_counts, stride_counts;

  template <class T>
  CountingMatrix<const T> in() const {
    return {static_cast<const T*>(values), ld_values, static_cast<const T*>(counts), ld_counts, stride_values,
            stride_counts};
  }
  template <class T>
  CountingMatrix<T> out() const {
    return {static_cast<T*>(const_cast<void*>(values)), ld_values, static_cast<T*>(const_cast<void*>(counts)),
            ld_counts, stride_values, stride_counts};
  }
};

/// One call: on the GPU (gpu, on `stream`) or the CPU, batched or not (the enums as raw() ints).
tropical_status counting(bool gpu, int dtype, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, const Arrays& a, const Arrays& b, const Arrays& c, int64_t batch, bool batched,
                         void* stream) {
  return guarded([&] {
    const auto tra = to_trans(ta, "ta"), trb = to_trans(tb, "tb");
    with_counting_type(dtype, [&]<class T>() {
      check_aligned<T>({{a.values, "a_values"}, {a.counts, "a_counts"}, {b.values, "b_values"}, {b.counts, "b_counts"},
                        {c.values, "c_values"}, {c.counts, "c_counts"}});
      if (gpu && batched) {
        tropical::gemm_batched_counting<T>(tra, trb, m, n, k, a.in<T>(), b.in<T>(), c.out<T>(), batch,
                                           static_cast<CUstream>(stream));
      } else if (gpu) {
        tropical::gemm_counting<T>(tra, trb, m, n, k, a.in<T>(), b.in<T>(), c.out<T>(), static_cast<CUstream>(stream));
      } else if (batched) {
        tropical::cpu::gemm_batched_counting<T>(tra, trb, m, n, k, a.in<T>(), b.in<T>(), c.out<T>(), batch);
      } else {
        tropical::cpu::gemm_counting<T>(tra, trb, m, n, k, a.in<T>(), b.in<T>(), c.out<T>());
      }
    });
  });
}

}  // namespace

extern "C" {

tropical_status tropical_counting_gemm(tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m,
                                       int64_t n, int64_t k, const void* a_values, int64_t lda_values,
                                       const void* a_counts, int64_t lda_counts, const void* b_values,
                                       int64_t ldb_values, const void* b_counts, int64_t ldb_counts, void* c_values,
                                       int64_t ldc_values, void* c_counts, int64_t ldc_counts, void* stream) {
  return counting(true, raw(dtype), raw(ta), raw(tb), m, n, k, {a_values, lda_values, 0, a_counts, lda_counts, 0},
                  {b_values, ldb_values, 0, b_counts, ldb_counts, 0}, {c_values, ldc_values, 0, c_counts, ldc_counts, 0},
                  1, false, stream);
}

tropical_status tropical_counting_gemm_batched(tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m,
                                               int64_t n, int64_t k, const void* a_values, int64_t lda_values,
                                               int64_t stride_a_values, const void* a_counts, int64_t lda_counts,
                                               int64_t stride_a_counts, const void* b_values, int64_t ldb_values,
                                               int64_t stride_b_values, const void* b_counts, int64_t ldb_counts,
                                               int64_t stride_b_counts, void* c_values, int64_t ldc_values,
                                               int64_t stride_c_values, void* c_counts, int64_t ldc_counts,
                                               int64_t stride_c_counts, int64_t batch, void* stream) {
  return counting(true, raw(dtype), raw(ta), raw(tb), m, n, k,
                  {a_values, lda_values, stride_a_values, a_counts, lda_counts, stride_a_counts},
                  {b_values, ldb_values, stride_b_values, b_counts, ldb_counts, stride_b_counts},
                  {c_values, ldc_values, stride_c_values, c_counts, ldc_counts, stride_c_counts}, batch, true, stream);
}

tropical_status tropical_cpu_counting_gemm(tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m,
                                           int64_t n, int64_t k, const void* a_values, int64_t lda_values,
                                           const void* a_counts, int64_t lda_counts, const void* b_values,
                                           int64_t ldb_values, const void* b_counts, int64_t ldb_counts,
                                           void* c_values, int64_t ldc_values, void* c_counts, int64_t ldc_counts) {
  return counting(false, raw(dtype), raw(ta), raw(tb), m, n, k, {a_values, lda_values, 0, a_counts, lda_counts, 0},
                  {b_values, ldb_values, 0, b_counts, ldb_counts, 0}, {c_values, ldc_values, 0, c_counts, ldc_counts, 0},
                  1, false, nullptr);
}

tropical_status tropical_cpu_counting_gemm_batched(
    tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n, int64_t k,
    const void* a_values, int64_t lda_values, int64_t stride_a_values, const void* a_counts, int64_t lda_counts,
    int64_t stride_a_counts, const void* b_values, int64_t ldb_values, int64_t stride_b_values,
    const void* b_counts, int64_t ldb_counts, int64_t stride_b_counts, void* c_values, int64_t ldc_values,
    int64_t stride_c_values, void* c_counts, int64_t ldc_counts, int64_t stride_c_counts, int64_t batch) {
  return counting(false, raw(dtype), raw(ta), raw(tb), m, n, k,
                  {a_values, lda_values, stride_a_values, a_counts, lda_counts, stride_a_counts},
                  {b_values, ldb_values, stride_b_values, b_counts, ldb_counts, stride_b_counts},
                  {c_values, ldc_values, stride_c_values, c_counts, ldc_counts, stride_c_counts}, batch, true,
                  nullptr);
}

}  // extern "C"
