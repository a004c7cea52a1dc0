// The C ABI's CPU products: enums to types, then tropical::cpu (which checks
// every argument and throws tropical::Error before writing anything).

#include "dispatch.hpp"
#include "status.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/tropical.h"

using tropical::c_api::alpha_of;
using tropical::c_api::beta_of;
using tropical::c_api::check_aligned;
using tropical::c_api::guarded;
using tropical::c_api::not_in_catalog;
using tropical::c_api::raw;
using tropical::c_api::to_trans;
using tropical::c_api::with_types;
using tropical::Op;

namespace cpu = tropical::cpu;

extern "C" {

tropical_status tropical_cpu_gemm(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                  tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* alpha,
                                  const void* a, int64_t lda, const void* b, int64_t ldb, const void* beta, void* c,
                                  int64_t ldc) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kGemm, [&]<class S, class T>() {
      check_aligned<T>({{a, "A"}, {b, "B"}, {c, "C"}});
      cpu::gemm<S, T>(op_a, op_b, m, n, k, alpha_of<S, T>(alpha), static_cast<const T*>(a), lda,
                      static_cast<const T*>(b), ldb, beta_of<S, T>(beta), static_cast<T*>(c), ldc);
    });
  });
}

tropical_status tropical_cpu_gemm_argmax(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                         tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* a,
                                         int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
                                         int32_t* argmax, int64_t ldargmax) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kGemmArgmax, [&]<class S, class T>() {
      check_aligned<T>({{a, "A"}, {b, "B"}, {c, "C"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      cpu::gemm_argmax<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(a), lda, static_cast<const T*>(b), ldb,
                             static_cast<T*>(c), ldc, argmax, ldargmax);
    });
  });
}

tropical_status tropical_cpu_backward_a(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                        tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* grad_c,
                                        int64_t ldgc, const int32_t* argmax, int64_t ldargmax, const void* b,
                                        int64_t ldb, void* grad_a, int64_t ldga) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kBackwardA, [&]<class S, class T>() {
      check_aligned<T>({{grad_c, "grad_c"}, {grad_a, "grad_a"},
                        {S::kMul == tropical::MulKind::kMul ? b : nullptr, "B"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardA>) {
        cpu::backward_a<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(grad_c), ldgc, argmax, ldargmax,
                              static_cast<const T*>(b), ldb, static_cast<T*>(grad_a), ldga);
      } else {
        not_in_catalog(raw(semiring), raw(dtype), Op::kBackwardA);
      }
    });
  });
}

tropical_status tropical_cpu_backward_b(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                        tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* grad_c,
                                        int64_t ldgc, const int32_t* argmax, int64_t ldargmax, const void* a,
                                        int64_t lda, void* grad_b, int64_t ldgb) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kBackwardB, [&]<class S, class T>() {
      check_aligned<T>({{grad_c, "grad_c"}, {grad_b, "grad_b"},
                        {S::kMul == tropical::MulKind::kMul ? a : nullptr, "A"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardB>) {
        cpu::backward_b<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(grad_c), ldgc, argmax, ldargmax,
                              static_cast<const T*>(a), lda, static_cast<T*>(grad_b), ldgb);
      } else {
        not_in_catalog(raw(semiring), raw(dtype), Op::kBackwardB);
      }
    });
  });
}

tropical_status tropical_cpu_gemm_batched(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                          tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* alpha,
                                          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                          int64_t stride_b, const void* beta, void* c, int64_t ldc,
                                          int64_t stride_c, int64_t batch) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kGemmBatched, [&]<class S, class T>() {
      check_aligned<T>({{a, "A"}, {b, "B"}, {c, "C"}});
      cpu::gemm_batched<S, T>(op_a, op_b, m, n, k, alpha_of<S, T>(alpha), static_cast<const T*>(a), lda, stride_a,
                              static_cast<const T*>(b), ldb, stride_b, beta_of<S, T>(beta), static_cast<T*>(c), ldc,
                              stride_c, batch);
    });
  });
}

tropical_status tropical_cpu_gemm_batched_argmax(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                                 tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* a,
                                                 int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
                                                 int64_t stride_b, void* c, int64_t ldc, int64_t stride_c,
                                                 int32_t* argmax, int64_t ldargmax, int64_t stride_argmax,
                                                 int64_t batch) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kGemmBatchedArgmax, [&]<class S, class T>() {
      check_aligned<T>({{a, "A"}, {b, "B"}, {c, "C"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      cpu::gemm_batched_argmax<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(a), lda, stride_a,
                                     static_cast<const T*>(b), ldb, stride_b, static_cast<T*>(c), ldc, stride_c,
                                     argmax, ldargmax, stride_argmax, batch);
    });
  });
}

tropical_status tropical_cpu_backward_a_batched(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                                tropical_trans tb, int64_t m, int64_t n, int64_t k,
                                                const void* grad_c, int64_t ldgc, int64_t stride_gc,
                                                const int32_t* argmax, int64_t ldargmax, int64_t stride_argmax,
                                                const void* b, int64_t ldb, int64_t stride_b, void* grad_a,
                                                int64_t ldga, int64_t stride_ga, int64_t batch) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kBackwardABatched, [&]<class S, class T>() {
      check_aligned<T>({{grad_c, "grad_c"}, {grad_a, "grad_a"},
                        {S::kMul == tropical::MulKind::kMul ? b : nullptr, "B"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardABatched>) {
        cpu::backward_a_batched<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(grad_c), ldgc, stride_gc, argmax,
                                      ldargmax, stride_argmax, static_cast<const T*>(b), ldb, stride_b,
                                      static_cast<T*>(grad_a), ldga, stride_ga, batch);
      } else {
        not_in_catalog(raw(semiring), raw(dtype), Op::kBackwardABatched);
      }
    });
  });
}

tropical_status tropical_cpu_backward_b_batched(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                                tropical_trans tb, int64_t m, int64_t n, int64_t k,
                                                const void* grad_c, int64_t ldgc, int64_t stride_gc,
                                                const int32_t* argmax, int64_t ldargmax, int64_t stride_argmax,
                                                const void* a, int64_t lda, int64_t stride_a, void* grad_b,
                                                int64_t ldgb, int64_t stride_gb, int64_t batch) {
  return guarded([&] {
    const tropical::Trans op_a = to_trans(raw(ta), "ta"), op_b = to_trans(raw(tb), "tb");
    with_types(raw(semiring), raw(dtype), Op::kBackwardBBatched, [&]<class S, class T>() {
      check_aligned<T>({{grad_c, "grad_c"}, {grad_b, "grad_b"},
                        {S::kMul == tropical::MulKind::kMul ? a : nullptr, "A"}});
      check_aligned<std::int32_t>({{argmax, "argmax"}});
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardBBatched>) {
        cpu::backward_b_batched<S, T>(op_a, op_b, m, n, k, static_cast<const T*>(grad_c), ldgc, stride_gc, argmax,
                                      ldargmax, stride_argmax, static_cast<const T*>(a), lda, stride_a,
                                      static_cast<T*>(grad_b), ldgb, stride_gb, batch);
      } else {
        not_in_catalog(raw(semiring), raw(dtype), Op::kBackwardBBatched);
      }
    });
  });
}

}  // extern "C"
