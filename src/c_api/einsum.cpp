// The C ABI's einsum plans: flat arrays to a tropical::EinsumPlan behind an opaque handle that remembers its
// semiring and dtype (checked against the catalog when it is made), and runs through the C++ API.

#include <limits>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "einsum_plan.hpp"

using tropical::c_api::guarded;
using tropical::c_api::invalid;
using tropical::c_api::operands_of;
using tropical::c_api::Plan;
using tropical::c_api::plan_of;
using tropical::c_api::raw;
using tropical::c_api::typed;
using tropical::c_api::with_plan_types;
using tropical::c_api::with_types;

namespace {

/// The checks every value run shares (the plan, its operands, output and workspace aligned for T), then
/// run.template operator()<S, T>(plan, operands, output) for the plan's semiring and type.
template <class Run>
tropical_status run_values(const void* plan, const void* const* operands, void* output, void* workspace,
                           Run&& run) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    const std::vector<const void*> ops = operands_of(p, operands);
    with_plan_types(p, [&]<class S, class T>() {
      tropical::c_api::check_aligned<T>({{output, "output"}, {workspace, "workspace"}});
      run.template operator()<S, T>(p.plan, typed<T>(ops), static_cast<T*>(output));
    });
  });
}

}  // namespace

extern "C" {

tropical_status tropical_einsum_plan_create(tropical_semiring semiring, tropical_dtype dtype, size_t count,
                                            const int64_t* ranks, const int64_t* labels,
                                            const int64_t* shapes, int64_t output_rank, const int64_t* output,
                                            size_t path_length, const int64_t* path, int64_t memory_limit,
                                            void** plan) {
  return guarded([&] {
    if (plan == nullptr) tropical::c_api::not_null_failure("plan");
    *plan = nullptr;
    if (raw(semiring) == TROPICAL_COUNTING) {
      tropical::c_api::with_counting_type(raw(dtype), []<class T>() {});
    } else {
      with_types(raw(semiring), raw(dtype), tropical::Op::kGemmBatched, []<class S, class T>() {});
    }
    if (count > 0 && ranks == nullptr) invalid("ranks is null");
    if (output_rank < 0) invalid("output_rank is " + std::to_string(output_rank));
    if (output_rank > 0 && output == nullptr) invalid("output is null");
    if (path_length > 0 && path == nullptr) invalid("path is null");
    // Labels and path positions are ints inside the library: a value outside that range is refused, not
    // truncated (2^32 would become label 0).
    const auto small = [](std::int64_t value, const std::string& what) {
      if (value < 0 || value > std::numeric_limits<int>::max()) invalid(what + " is " + std::to_string(value));
      return static_cast<int>(value);
    };
    std::vector<std::vector<int>> terms;
    std::vector<std::vector<std::int64_t>> dims;
    std::size_t at = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (ranks[i] < 0) invalid("operand " + std::to_string(i) + " has rank " + std::to_string(ranks[i]));
      if (ranks[i] > 0 && (labels == nullptr || shapes == nullptr)) invalid("labels or shapes is null");
      terms.emplace_back();
      for (std::int64_t j = 0; j < ranks[i]; ++j) {
        terms.back().push_back(small(labels[at + static_cast<std::size_t>(j)],
                                     "label " + std::to_string(j) + " of operand " + std::to_string(i)));
      }
      dims.emplace_back(shapes + at, shapes + at + ranks[i]);
      at += static_cast<std::size_t>(ranks[i]);
    }
    tropical::EinsumOptions options;
    options.memory_limit = memory_limit;
    for (std::size_t s = 0; s < path_length; ++s) {
      const std::string step = "position of path step " + std::to_string(s);
      if (path[2 * s + 1] == -1) {  // a one-operand step, as tropical_einsum_plan_path writes it
        options.path.push_back({small(path[2 * s], step)});
      } else {
        options.path.push_back({small(path[2 * s], step), small(path[2 * s + 1], step)});
      }
    }
    std::vector<int> out;
    for (std::int64_t j = 0; j < output_rank; ++j) out.push_back(small(output[j], "output label " + std::to_string(j)));
    *plan = new Plan{tropical::EinsumPlan(terms, out, dims, options), raw(semiring), raw(dtype)};
  });
}

tropical_status tropical_einsum_plan_destroy(void* plan) {
  return guarded([&] { delete static_cast<Plan*>(plan); });
}

tropical_status tropical_einsum_plan_info(const void* plan, double* log2_time, double* log2_space,
                                          int64_t* largest_intermediate, int64_t* slices,
                                          int64_t* path_length) {
  return guarded([&] {
    const tropical::EinsumInfo& info = plan_of(plan).plan.info();
    if (log2_time != nullptr) *log2_time = info.log2_time;
    if (log2_space != nullptr) *log2_space = info.log2_space;
    if (largest_intermediate != nullptr) *largest_intermediate = info.largest_intermediate;
    if (slices != nullptr) *slices = info.slices;
    if (path_length != nullptr) *path_length = static_cast<int64_t>(info.path.size());
  });
}

tropical_status tropical_einsum_plan_path(const void* plan, int64_t* path) {
  return guarded([&] {
    const tropical::EinsumInfo& info = plan_of(plan).plan.info();
    if (path == nullptr) tropical::c_api::not_null_failure("path");
    for (std::size_t s = 0; s < info.path.size(); ++s) {
      path[2 * s] = info.path[s][0];
      path[2 * s + 1] = info.path[s].size() > 1 ? info.path[s][1] : -1;
    }
  });
}

tropical_status tropical_einsum_plan_workspace_bytes(const void* plan, size_t* bytes, size_t* argmax_bytes) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    const std::size_t element = tropical_dtype_size(static_cast<tropical_dtype>(p.dtype));
    if (bytes != nullptr) {
      *bytes = p.semiring == TROPICAL_COUNTING ? p.plan.counting_workspace_bytes(element)
                                               : p.plan.workspace_bytes(element);
    }
    if (argmax_bytes != nullptr) *argmax_bytes = p.plan.argmax_workspace_bytes(element);
  });
}

tropical_status tropical_einsum_plan_run_host(const void* plan, const void* const* operands, void* output,
                                              void* workspace) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::einsum_host<S, T>(e, ops, out, workspace);
                    });
}

tropical_status tropical_einsum_plan_run_host_argmax(const void* plan, const void* const* operands,
                                                     void* output, int64_t* assignment, void* workspace) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::c_api::check_aligned<std::int64_t>({{assignment, "assignment"}});
                      tropical::einsum_argmax_host<S, T>(e, ops, out, assignment, workspace);
                    });
}

tropical_status tropical_einsum_plan_run_host_counting(const void* plan, const void* const* values,
                                                       const void* const* counts, void* out_values,
                                                       void* out_counts, void* workspace) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    if (p.semiring != TROPICAL_COUNTING) invalid("the plan was not made for TROPICAL_COUNTING");
    const std::vector<const void*> v = operands_of(p, values), c = operands_of(p, counts);
    tropical::c_api::with_counting_type(p.dtype, [&]<class T>() {
      tropical::c_api::check_aligned<T>(
          {{out_values, "out_values"}, {out_counts, "out_counts"}, {workspace, "workspace"}});
      tropical::einsum_counting_host<T>(p.plan, typed<T>(v), typed<T>(c), static_cast<T*>(out_values),
                                        static_cast<T*>(out_counts), workspace);
    });
  });
}

tropical_status tropical_einsum_plan_run(const void* plan, const void* const* operands, void* output,
                                         void* workspace, void* stream) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::einsum<S, T>(e, ops, out, workspace, static_cast<CUstream>(stream));
                    });
}

tropical_status tropical_einsum_plan_run_part_host(const void* plan, const void* const* operands, void* output,
                                                   int64_t part, int64_t parts, void* workspace) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::einsum_part_host<S, T>(e, ops, out, part, parts, workspace);
                    });
}

tropical_status tropical_einsum_plan_run_part(const void* plan, const void* const* operands, void* output,
                                              int64_t part, int64_t parts, void* workspace, void* stream) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::einsum_part<S, T>(e, ops, out, part, parts, workspace, static_cast<CUstream>(stream));
                    });
}

tropical_status tropical_einsum_plan_run_argmax(const void* plan, const void* const* operands, void* output,
                                                int64_t* assignment, void* workspace, void* stream) {
  return run_values(plan, operands, output, workspace,
                    [&]<class S, class T>(const tropical::EinsumPlan& e, std::span<const T* const> ops, T* out) {
                      tropical::c_api::check_aligned<std::int64_t>({{assignment, "assignment"}});
                      tropical::einsum_argmax<S, T>(e, ops, out, assignment, workspace, static_cast<CUstream>(stream));
                    });
}

tropical_status tropical_einsum_plan_run_counting(const void* plan, const void* const* values,
                                                  const void* const* counts, void* out_values, void* out_counts,
                                                  void* workspace, void* stream) {
  return guarded([&] {
    const Plan& p = plan_of(plan);
    if (p.semiring != TROPICAL_COUNTING) invalid("the plan was not made for TROPICAL_COUNTING");
    const std::vector<const void*> v = operands_of(p, values), c = operands_of(p, counts);
    tropical::c_api::with_counting_type(p.dtype, [&]<class T>() {
      tropical::c_api::check_aligned<T>(
          {{out_values, "out_values"}, {out_counts, "out_counts"}, {workspace, "workspace"}});
      tropical::einsum_counting<T>(p.plan, typed<T>(v), typed<T>(c), static_cast<T*>(out_values),
                                   static_cast<T*>(out_counts), workspace, static_cast<CUstream>(stream));
    });
  });
}

}  // extern "C"
