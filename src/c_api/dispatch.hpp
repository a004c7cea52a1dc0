#pragma once

// From the C ABI's enums to the C++ API's types: with_types(semiring, dtype, f)
// calls f.template operator()<S, T>() for the catalog's pair, and rejects a
// value outside the enums or a pair the catalog lacks with a status of its own.

#include <cstdint>
#include <string>
#include <string_view>

#include "status.hpp"
#include "tropical/gemm.hpp"
#include "tropical/tropical.h"

namespace tropical::c_api {

/// The semiring's short name ("maxplus"), or "" for a value outside the enum.
std::string_view semiring_name(tropical_semiring s) noexcept;

/// The element type's short name ("f32"), or "" for a value outside the enum.
std::string_view dtype_name(tropical_dtype t) noexcept;

/// The catalog's operation for a C op, false for a value outside the enum.
bool to_op(tropical_op op, Op& out) noexcept;

/// The C++ transpose of a C one; throws Failure for a value outside the enum.
Trans to_trans(tropical_trans t, const char* name);

/// Throws Failure(TROPICAL_ERROR_NOT_IN_CATALOG) naming (semiring, dtype, op) and what the catalog has.
[[noreturn]] void not_in_catalog(tropical_semiring s, tropical_dtype t, Op op);

/// Calls f.template operator()<S, T>() for the tag S and element T of (s, t);
/// throws Failure for a value outside the enums, or for a pair the catalog lacks (op names it).
template <class F>
void with_types(tropical_semiring s, tropical_dtype t, Op op, F&& f) {
  const auto by_type = [&]<class S>() {
    const auto call = [&]<class T>() {
      if constexpr (kSupported<S, T>) {
        f.template operator()<S, T>();
      } else {
        not_in_catalog(s, t, op);
      }
    };
    switch (t) {
      case TROPICAL_F32: return call.template operator()<float>();
      case TROPICAL_F64: return call.template operator()<double>();
      case TROPICAL_I32: return call.template operator()<std::int32_t>();
      case TROPICAL_I64: return call.template operator()<std::int64_t>();
      case TROPICAL_U8: return call.template operator()<std::uint8_t>();
      case TROPICAL_I16: return call.template operator()<std::int16_t>();
    }
    throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: dtype " + std::to_string(static_cast<int>(t)) +
                                                       " is not a tropical_dtype"};
  };
  switch (s) {
    case TROPICAL_MAXPLUS: return by_type.template operator()<MaxPlus>();
    case TROPICAL_MINPLUS: return by_type.template operator()<MinPlus>();
    case TROPICAL_MAXMUL: return by_type.template operator()<MaxMul>();
    case TROPICAL_MAXMIN: return by_type.template operator()<MaxMin>();
    case TROPICAL_MINMAX: return by_type.template operator()<MinMax>();
    case TROPICAL_ANDOR: return by_type.template operator()<AndOr>();
    case TROPICAL_COUNTING:
      throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                    "tropical: counting products take values and counts: call tropical_counting_gemm or "
                    "tropical_counting_gemm_batched (tropical_cpu_counting_* on host memory)"};
  }
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: semiring " + std::to_string(static_cast<int>(s)) +
                                                     " is not a tropical_semiring"};
}

/// Calls f.template operator()<T>() for CountingTropical's element type `t`
/// (float or double); throws Failure for any other dtype.
template <class F>
void with_counting_type(tropical_dtype t, F&& f) {
  if (t == TROPICAL_F32) return f.template operator()<float>();
  if (t == TROPICAL_F64) return f.template operator()<double>();
  if (!dtype_name(t).empty()) not_in_catalog(TROPICAL_COUNTING, t, Op::kGemm);
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: dtype " + std::to_string(static_cast<int>(t)) +
                                                     " is not a tropical_dtype"};
}

/// alpha as an element of T: the semiring one if null.
template <class S, class T>
T alpha_of(const void* alpha) {
  return alpha == nullptr ? reference::one<S, T>() : *static_cast<const T*>(alpha);
}

/// beta as an element of T: the semiring zero (C overwritten) if null.
template <class S, class T>
T beta_of(const void* beta) {
  return beta == nullptr ? reference::zero<S, T>() : *static_cast<const T*>(beta);
}

}  // namespace tropical::c_api
