#include "dispatch.hpp"

#include <cstdio>

namespace tropical::c_api {

Trans to_trans(int t, const char* name) {
  if (t == TROPICAL_NO_TRANS) return Trans::kNo;
  if (t == TROPICAL_TRANS) return Trans::kYes;
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, std::string("tropical: ") + name + " = " +
                                                     std::to_string(t) +
                                                     " is not a tropical_trans (0 or 1)"};
}

void not_in_catalog(int s, int t, Op op) {
  throw Failure{TROPICAL_ERROR_NOT_IN_CATALOG,
                "tropical: the catalog has no " + std::string(op_name(op)) + " for " +
                    std::string(semiring_name(s)) + " over " + std::string(dtype_name(t)) +
                    " (andor exists over u8 only, counting over f32 and f64 with gemm and gemm_batched only, the "
                    "other semirings over f32, f64, i32, i64 and i16; backward passes over f32 and f64 of "
                    "maxplus, minplus and maxmul)"};
}

void misaligned(const Pointer& p, std::size_t alignment) {
  char address[2 + 2 * sizeof(std::uintptr_t) + 1];
  std::snprintf(address, sizeof address, "%#jx", static_cast<std::uintmax_t>(reinterpret_cast<std::uintptr_t>(p.ptr)));
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                std::string("tropical: ") + p.name + " = " + address + " is not aligned for its elements: it must be a "
                    "multiple of " + std::to_string(alignment) + " bytes (copy the data to an aligned buffer)"};
}

}  // namespace tropical::c_api
