// The C ABI's CPU products: enums to types, the same argument checks as the
// GPU path (src/checks.hpp), then the products on host memory.

#include "../checks.hpp"
#include "dispatch.hpp"
#include "status.hpp"
#include "tropical/reference.hpp"
#include "tropical/tropical.h"

using tropical::c_api::alpha_of;
using tropical::c_api::beta_of;
using tropical::c_api::guarded;
using tropical::c_api::not_in_catalog;
using tropical::c_api::to_trans;
using tropical::c_api::with_types;
using tropical::Op;
using tropical::detail::Problem;

namespace cpu = tropical::reference;
namespace checks = tropical::detail;

namespace {

/// The checks of a product and its batch (batch 1: a single product).
template <class T>
void check_product(const Problem& p, const void* a, const void* b, const void* c, const std::int32_t* argmax,
                   std::int64_t ldargmax, std::int64_t stride_a = 0, std::int64_t stride_b = 0,
                   std::int64_t stride_c = 0, std::int64_t stride_argmax = 0, std::int64_t batch = 1) {
  if (batch < 0) checks::invalid("negative batch = " + std::to_string(batch));
  const checks::Extents e = checks::check_product(p, sizeof(T));
  const std::int64_t argmax_extent = argmax != nullptr ? checks::check_argmax(p, ldargmax) : 0;
  checks::check_batch("stride_a", stride_a, p.k > 0 ? e.a : 0, batch, sizeof(T), false);
  checks::check_batch("stride_b", stride_b, p.k > 0 ? e.b : 0, batch, sizeof(T), false);
  checks::check_batch("stride_c", stride_c, e.c, batch, sizeof(T), true);
  if (argmax != nullptr) checks::check_batch("stride_argmax", stride_argmax, argmax_extent, batch, 4, true);
  if (batch == 0 || p.m == 0 || p.n == 0) return;
  checks::check_operands(p, a, b, c, argmax);
}

/// The checks of a backward pass of kernel O and its batch.
template <class S, class T, Op O>
void check_backward(const Problem& p, const void* grad_c, std::int64_t ldgc, const std::int32_t* argmax,
                    std::int64_t ldargmax, const void* operand, std::int64_t ld_operand, const void* grad,
                    std::int64_t ldgrad, std::int64_t stride_gc = 0, std::int64_t stride_argmax = 0,
                    std::int64_t stride_operand = 0, std::int64_t stride_grad = 0, std::int64_t batch = 1) {
  if (batch < 0) checks::invalid("negative batch = " + std::to_string(batch));
  const bool reads_operand = S::kMul == tropical::MulKind::kMul;
  const checks::BackwardShape s = checks::check_backward(tropical::kernel_id<S, T, O>(), sizeof(T), p, ldgc, ldargmax,
                                                         reads_operand, ld_operand, ldgrad);
  checks::check_batch("stride_gc", stride_gc, s.gc_extent, batch, sizeof(T), false);
  checks::check_batch("stride_argmax", stride_argmax, s.argmax_extent, batch, 4, false);
  if (reads_operand) {
    checks::check_batch(s.wrt_a ? "stride_b" : "stride_a", stride_operand, s.other_extent, batch, sizeof(T), false);
  }
  checks::check_batch(s.wrt_a ? "stride_ga" : "stride_gb", stride_grad, s.grad_extent, batch, sizeof(T), true);
  if (batch == 0 || s.grad_extent == 0) return;
  checks::check_non_null(grad, s.wrt_a ? "grad_a" : "grad_b");
  if (p.m > 0 && p.n > 0) {
    checks::check_non_null(grad_c, "grad_c");
    checks::check_non_null(argmax, "argmax");
    if (reads_operand) checks::check_non_null(operand, s.wrt_a ? "B (read by MaxMul's gradient)" : "A (read by MaxMul's gradient)");
    if (grad == grad_c || grad == argmax || (reads_operand && grad == operand)) {
      checks::invalid("the gradient must not overlap grad_c, argmax or the operand");
    }
  }
}

}  // namespace

extern "C" {

tropical_status tropical_cpu_gemm(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                  tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* alpha,
                                  const void* a, int64_t lda, const void* b, int64_t ldb, const void* beta, void* c,
                                  int64_t ldc) {
  return guarded([&] {
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, ldb, ldc};
    with_types(semiring, dtype, Op::kGemm, [&]<class S, class T>() {
      check_product<T>(p, a, b, c, nullptr, 0);
      cpu::gemm<S, T>(p.ta, p.tb, m, n, k, alpha_of<S, T>(alpha), static_cast<const T*>(a), lda,
                      static_cast<const T*>(b), ldb, beta_of<S, T>(beta), static_cast<T*>(c), ldc);
    });
  });
}

tropical_status tropical_cpu_gemm_argmax(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                         tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* a,
                                         int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
                                         int32_t* argmax, int64_t ldargmax) {
  return guarded([&] {
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, ldb, ldc};
    with_types(semiring, dtype, Op::kGemmArgmax, [&]<class S, class T>() {
      if (argmax == nullptr && m > 0 && n > 0) checks::invalid("argmax is null");
      check_product<T>(p, a, b, c, argmax, ldargmax);
      cpu::gemm_argmax<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(a), lda, static_cast<const T*>(b), ldb,
                             static_cast<T*>(c), ldc, argmax, ldargmax);
    });
  });
}

tropical_status tropical_cpu_backward_a(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                        tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* grad_c,
                                        int64_t ldgc, const int32_t* argmax, int64_t ldargmax, const void* b,
                                        int64_t ldb, void* grad_a, int64_t ldga) {
  return guarded([&] {
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, 0, ldb, 0};
    with_types(semiring, dtype, Op::kBackwardA, [&]<class S, class T>() {
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardA>) {
        check_backward<S, T, Op::kBackwardA>(p, grad_c, ldgc, argmax, ldargmax, b, ldb, grad_a, ldga);
        cpu::backward_a<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(grad_c), ldgc, argmax, ldargmax,
                              static_cast<const T*>(b), ldb, static_cast<T*>(grad_a), ldga);
      } else {
        not_in_catalog(semiring, dtype, Op::kBackwardA);
      }
    });
  });
}

tropical_status tropical_cpu_backward_b(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                        tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* grad_c,
                                        int64_t ldgc, const int32_t* argmax, int64_t ldargmax, const void* a,
                                        int64_t lda, void* grad_b, int64_t ldgb) {
  return guarded([&] {
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, 0, 0};
    with_types(semiring, dtype, Op::kBackwardB, [&]<class S, class T>() {
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardB>) {
        check_backward<S, T, Op::kBackwardB>(p, grad_c, ldgc, argmax, ldargmax, a, lda, grad_b, ldgb);
        cpu::backward_b<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(grad_c), ldgc, argmax, ldargmax,
                              static_cast<const T*>(a), lda, static_cast<T*>(grad_b), ldgb);
      } else {
        not_in_catalog(semiring, dtype, Op::kBackwardB);
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
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, ldb, ldc};
    with_types(semiring, dtype, Op::kGemmBatched, [&]<class S, class T>() {
      check_product<T>(p, a, b, c, nullptr, 0, stride_a, stride_b, stride_c, 0, batch);
      cpu::gemm_batched<S, T>(p.ta, p.tb, m, n, k, alpha_of<S, T>(alpha), static_cast<const T*>(a), lda, stride_a,
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
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, ldb, ldc};
    with_types(semiring, dtype, Op::kGemmBatchedArgmax, [&]<class S, class T>() {
      if (argmax == nullptr && m > 0 && n > 0 && batch > 0) checks::invalid("argmax is null");
      check_product<T>(p, a, b, c, argmax, ldargmax, stride_a, stride_b, stride_c, stride_argmax, batch);
      cpu::gemm_batched_argmax<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(a), lda, stride_a,
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
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, 0, ldb, 0};
    with_types(semiring, dtype, Op::kBackwardABatched, [&]<class S, class T>() {
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardABatched>) {
        check_backward<S, T, Op::kBackwardABatched>(p, grad_c, ldgc, argmax, ldargmax, b, ldb, grad_a, ldga,
                                                    stride_gc, stride_argmax, stride_b, stride_ga, batch);
        cpu::backward_a_batched<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(grad_c), ldgc, stride_gc, argmax,
                                      ldargmax, stride_argmax, static_cast<const T*>(b), ldb, stride_b,
                                      static_cast<T*>(grad_a), ldga, stride_ga, batch);
      } else {
        not_in_catalog(semiring, dtype, Op::kBackwardABatched);
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
    const Problem p{to_trans(ta, "ta"), to_trans(tb, "tb"), m, n, k, lda, 0, 0};
    with_types(semiring, dtype, Op::kBackwardBBatched, [&]<class S, class T>() {
      if constexpr (tropical::kInCatalog<S, T, Op::kBackwardBBatched>) {
        check_backward<S, T, Op::kBackwardBBatched>(p, grad_c, ldgc, argmax, ldargmax, a, lda, grad_b, ldgb,
                                                    stride_gc, stride_argmax, stride_a, stride_gb, batch);
        cpu::backward_b_batched<S, T>(p.ta, p.tb, m, n, k, static_cast<const T*>(grad_c), ldgc, stride_gc, argmax,
                                      ldargmax, stride_argmax, static_cast<const T*>(a), lda, stride_a,
                                      static_cast<T*>(grad_b), ldgb, stride_gb, batch);
      } else {
        not_in_catalog(semiring, dtype, Op::kBackwardBBatched);
      }
    });
  });
}

}  // extern "C"
