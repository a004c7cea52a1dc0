#pragma once

// The C ABI's einsum plan handle and what its calls share (einsum.cpp, distributed.cpp): a tropical::EinsumPlan
// that remembers its semiring and dtype, and the checks of the arrays of pointers a run takes.

#include <string>
#include <vector>

#include "dispatch.hpp"
#include "status.hpp"
#include "tropical/einsum.hpp"
#include "tropical/tropical.h"

namespace tropical::c_api {

struct Plan {
  tropical::EinsumPlan plan;
  int semiring, dtype;
};

[[noreturn]] inline void invalid(const std::string& what) {
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: " + what};
}

inline const Plan& plan_of(const void* plan) {
  if (plan == nullptr) invalid("the einsum plan is null");
  return *static_cast<const Plan*>(plan);
}

/// Calls f.template operator()<S, T>() for the plan's semiring and dtype (a counting plan: rejected, naming
/// the calls that run it).
template <class F>
void with_plan_types(const Plan& p, F&& f) {
  if (p.semiring == TROPICAL_COUNTING) {
    invalid("a counting plan runs with tropical_einsum_plan_run_host_counting, tropical_einsum_plan_run_counting "
            "or tropical_einsum_plan_run_distributed_counting (values and counts)");
  }
  with_types(p.semiring, p.dtype, tropical::Op::kGemmBatched, f);
}

inline std::vector<const void*> operands_of(const Plan& p, const void* const* operands) {
  if (operands == nullptr) invalid("the einsum operands array is null");
  return std::vector<const void*>(operands, operands + p.plan.operand_count());
}

template <class T>
std::vector<const T*> typed(const std::vector<const void*>& operands) {
  std::vector<const T*> out;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    check_aligned<T>({{operands[i], "an einsum operand"}});
    out.push_back(static_cast<const T*>(operands[i]));
  }
  return out;
}

}  // namespace tropical::c_api
