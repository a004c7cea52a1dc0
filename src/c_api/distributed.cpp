// The C ABI's distributed einsum runs: a plan (einsum_plan.hpp) run over the ranks of a caller's ncclComm_t
// (passed as void*) through tropical/distributed.hpp.

#include <vector>

#include "einsum_plan.hpp"
#include "tropical/distributed.hpp"

using tropical::c_api::guarded;
using tropical::c_api::invalid;
using tropical::c_api::operands_of;
using tropical::c_api::Plan;
using tropical::c_api::plan_of;
using tropical::c_api::typed;
using tropical::c_api::with_plan_types;

extern "C" {

tropical_status tropical_einsum_plan_run_distributed(const void* plan, const void* const* operands, void* output,
                                                     void* comm, void* stream) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    const std::vector<const void*> ops = operands_of(p, operands);
    with_plan_types(p, [&]<class S, class T>() {
      tropical::c_api::check_aligned<T>({{output, "output"}});
      tropical::einsum_distributed<S, T>(p.plan, typed<T>(ops), static_cast<T*>(output),
                                         static_cast<ncclComm_t>(comm), static_cast<CUstream>(stream));
    });
  });
}

tropical_status tropical_einsum_plan_run_distributed_argmax(const void* plan, const void* const* operands,
                                                            void* output, int64_t* assignment, void* comm,
                                                            void* stream) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    const std::vector<const void*> ops = operands_of(p, operands);
    with_plan_types(p, [&]<class S, class T>() {
      tropical::c_api::check_aligned<T>({{output, "output"}});
      tropical::c_api::check_aligned<std::int64_t>({{assignment, "assignment"}});
      tropical::einsum_distributed_argmax<S, T>(p.plan, typed<T>(ops), static_cast<T*>(output), assignment,
                                                static_cast<ncclComm_t>(comm), static_cast<CUstream>(stream));
    });
  });
}

tropical_status tropical_einsum_plan_run_distributed_counting(const void* plan, const void* const* values,
                                                              const void* const* counts, void* out_values,
                                                              void* out_counts, void* comm, void* stream) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    if (p.semiring != TROPICAL_COUNTING) invalid("the plan was not made for TROPICAL_COUNTING");
    const std::vector<const void*> v = operands_of(p, values), c = operands_of(p, counts);
    tropical::c_api::with_counting_type(p.dtype, [&]<class T>() {
      tropical::c_api::check_aligned<T>({{out_values, "out_values"}, {out_counts, "out_counts"}});
      tropical::einsum_distributed_counting<T>(p.plan, typed<T>(v), typed<T>(c), static_cast<T*>(out_values),
                                               static_cast<T*>(out_counts), static_cast<ncclComm_t>(comm),
                                               static_cast<CUstream>(stream));
    });
  });
}

}  // extern "C"
