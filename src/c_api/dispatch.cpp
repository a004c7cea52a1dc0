#include "dispatch.hpp"

#include <cstdio>

namespace tropical::c_api {

std::string_view semiring_name(int s) noexcept {
  switch (s) {
    case TROPICAL_MAXPLUS: return MaxPlus::kName;
    case TROPICAL_MINPLUS: return MinPlus::kName;
    case TROPICAL_MAXMUL: return MaxMul::kName;
    case TROPICAL_MAXMIN: return MaxMin::kName;
    case TROPICAL_MINMAX: return MinMax::kName;
    case TROPICAL_ANDOR: return AndOr::kName;
    case TROPICAL_COUNTING: return CountingTropical::kName;
  }
  return "";
}

std::string_view dtype_name(int t) noexcept {
  switch (t) {
    case TROPICAL_F32: return "f32";
    case TROPICAL_F64: return "f64";
    case TROPICAL_I32: return "i32";
    case TROPICAL_I64: return "i64";
    case TROPICAL_U8: return "u8";
    case TROPICAL_I16: return "i16";
  }
  return "";
}

bool to_op(int op, Op& out) noexcept {
  switch (op) {
    case TROPICAL_OP_GEMM: out = Op::kGemm; return true;
    case TROPICAL_OP_GEMM_ARGMAX: out = Op::kGemmArgmax; return true;
    case TROPICAL_OP_BACKWARD_A: out = Op::kBackwardA; return true;
    case TROPICAL_OP_BACKWARD_B: out = Op::kBackwardB; return true;
    case TROPICAL_OP_GEMM_BATCHED: out = Op::kGemmBatched; return true;
    case TROPICAL_OP_GEMM_BATCHED_ARGMAX: out = Op::kGemmBatchedArgmax; return true;
    case TROPICAL_OP_BACKWARD_A_BATCHED: out = Op::kBackwardABatched; return true;
    case TROPICAL_OP_BACKWARD_B_BATCHED: out = Op::kBackwardBBatched; return true;
  }
  return false;
}

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
