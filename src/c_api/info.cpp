// The C ABI's queries: version, devices, the catalog, warming kernels and publishing them to the fleet.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "status.hpp"
#include "tropical/cpu/gemm.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/runtime.hpp"
#include "tropical/tropical.h"

using tropical::c_api::fail;
using tropical::c_api::guarded;
using tropical::c_api::raw;
using tropical::catalog::kInfo;
using tropical::catalog::kKernelCount;

namespace {

/// The default-tile id of (s, t, op) in the catalog, or -1.
long find_default(int s, int t, int op) noexcept {
  tropical::Op o{};
  const auto semiring = tropical::c_api::semiring_name(s);
  const auto type = tropical::c_api::dtype_name(t);
  if (!tropical::c_api::to_op(op, o) || semiring.empty() || type.empty()) return -1;
  for (const auto& info : kInfo) {
    if (info.op == o && info.variant.empty() && info.semiring == semiring && info.type == type) {
      return static_cast<long>(info.id);
    }
  }
  return -1;
}

/// The kernels of ids[0..count) (none: the whole catalog), each checked to be below the catalog's size.
std::vector<tropical::catalog::KernelId> kernel_list(const uint32_t* ids, size_t count) {
  if (count > 0 && ids == nullptr) tropical::c_api::not_null_failure("ids");
  std::vector<tropical::catalog::KernelId> list;
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] >= kKernelCount) {
      throw tropical::c_api::Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: kernel id " + std::to_string(ids[i]) +
                                                                          " is not below " +
                                                                          std::to_string(kKernelCount)};
    }
    list.push_back(static_cast<tropical::catalog::KernelId>(ids[i]));
  }
  return list;
}

}  // namespace

extern "C" {

const char* tropical_version(void) { return tropical::version(); }

int tropical_abi_version(void) { return TROPICAL_ABI_VERSION; }

int tropical_device_count(void) { return tropical::device_count(); }

tropical_status tropical_device_arch(int device, int* arch) {
  return guarded([&] {
    if (arch == nullptr) tropical::c_api::not_null_failure("arch");
    *arch = tropical::device_arch(device);
  });
}

size_t tropical_dtype_size(tropical_dtype dtype) {
  size_t size = 0;
  tropical::c_api::visit_dtype(raw(dtype), [&]<class T>() { size = sizeof(T); });
  return size;
}

int tropical_has_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op) {
  return find_default(raw(semiring), raw(dtype), raw(op)) >= 0 ? 1 : 0;
}

int tropical_cpu_has_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op) {
  return find_default(raw(semiring), raw(dtype), raw(op)) >= 0 ? 1 : 0;
}

uint32_t tropical_kernel_count(void) { return static_cast<uint32_t>(kKernelCount); }

const char* tropical_kernel_name(uint32_t id) {
  // Every name in kInfo is a string literal of the generated catalog, so it is NUL-terminated.
  return id < kKernelCount ? kInfo[id].name.data() : nullptr;
}

tropical_status tropical_kernel_id(const char* name, uint32_t* id) {
  return guarded([&] {
    if (name == nullptr) tropical::c_api::not_null_failure("name");
    if (id == nullptr) tropical::c_api::not_null_failure("id");
    for (const auto& info : kInfo) {
      if (info.name == name) {
        *id = static_cast<uint32_t>(info.id);
        return;
      }
    }
    throw tropical::c_api::Failure{TROPICAL_ERROR_NOT_IN_CATALOG,
                                   std::string("tropical: no kernel named '") + name + "' (tropical list prints the catalog)"};
  });
}

tropical_status tropical_find_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op,
                                     uint32_t* id) {
  return guarded([&] {
    if (id == nullptr) tropical::c_api::not_null_failure("id");
    const int s = raw(semiring), t = raw(dtype), o_raw = raw(op);
    tropical::Op o{};
    if (!tropical::c_api::to_op(o_raw, o)) {
      throw tropical::c_api::Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                                     "tropical: op " + std::to_string(o_raw) + " is not a tropical_op"};
    }
    // Validates the enums and names the pair the catalog lacks.
    if (s == TROPICAL_COUNTING) {
      tropical::c_api::with_counting_type(t, []<class T>() {});
    } else {
      tropical::c_api::with_types(s, t, o, []<class S, class T>() {});
    }
    const long found = find_default(s, t, o_raw);
    if (found < 0) tropical::c_api::not_in_catalog(s, t, o);
    *id = static_cast<uint32_t>(found);
  });
}

tropical_status tropical_warm(const uint32_t* ids, size_t count, int arch, unsigned threads, size_t* compiled,
                              size_t* ready) {
  if (compiled != nullptr) *compiled = 0;
  if (ready != nullptr) *ready = 0;
  std::string first_error;
  std::size_t errors = 0, unavailable = 0;
  const tropical_status status = guarded([&] {
    const std::vector<tropical::catalog::KernelId> list = kernel_list(ids, count);
    if (arch == 0) arch = tropical::device_arch(0);
    // An arch NVRTC cannot target is the caller's mistake, named with the ones it can (as the CLI does), not
    // NVRTC's raw complaint from every compile.
    const std::vector<int> targets = tropical::jit::supported_archs();
    if (std::find(targets.begin(), targets.end(), arch) == targets.end()) {
      std::string names;
      for (const int t : targets) names += (names.empty() ? "sm_" : ", sm_") + std::to_string(t);
      throw tropical::c_api::Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                                     "tropical: sm_" + std::to_string(arch) + " is not a target of NVRTC " +
                                         tropical::jit::nvrtc_version() + ", which compiles for " + names};
    }
    const auto report = tropical::warm(arch, list, threads);
    if (compiled != nullptr) *compiled = report.compiled;
    if (ready != nullptr) *ready = report.ready;
    errors = report.errors.size();
    unavailable = report.unavailable;
    if (errors > 0) first_error = report.errors.front();
  });
  if (status != TROPICAL_OK || errors == 0) return status;
  return fail(unavailable == errors ? TROPICAL_ERROR_UNAVAILABLE : TROPICAL_ERROR_COMPILE,
              first_error + (errors > 1 ? " (and " + std::to_string(errors - 1) + " more)" : std::string()));
}

tropical_status tropical_publish_cached(const uint32_t* ids, size_t count, int arch, size_t* published) {
  if (published != nullptr) *published = 0;
  return guarded([&] {
    const std::vector<tropical::catalog::KernelId> list = kernel_list(ids, count);
    if (arch < 0) {
      throw tropical::c_api::Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: negative arch " + std::to_string(arch)};
    }
    if (arch == 0) arch = tropical::device_arch(0);
    const std::size_t n = tropical::publish_cached(arch, list);
    if (published != nullptr) *published = n;
  });
}

tropical_status tropical_cpu_set_num_threads(int n) {
  return guarded([&] { tropical::cpu::set_num_threads(n); });
}

int tropical_cpu_num_threads(void) {
  try {
    return tropical::cpu::num_threads();
  } catch (...) {
    return 1;
  }
}

const char* tropical_cpu_isa(void) {
  try {
    // isa() names one of a fixed set of string literals, so the view is NUL-terminated.
    return tropical::cpu::isa().data();
  } catch (...) {
    return "unknown";
  }
}

}  // extern "C"
