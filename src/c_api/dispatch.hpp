#pragma once

// From the C ABI's enums to the C++ API's types: with_types(semiring, dtype, f)
// calls f.template operator()<S, T>() for the catalog's pair, and rejects a
// value outside the enums or a pair the catalog lacks with a status of its own.
// The switches over the enums are generated from codegen/spec.py (tropical/c_abi_enums.hpp).
// A C caller may pass any int as an enum, and loading a value outside an enum's
// range as that enum is undefined behaviour in C++: every enum argument is read
// from its bytes as an int (raw()) and only these helpers compare it.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "status.hpp"
#include "tropical/c_abi_enums.hpp"
#include "tropical/gemm.hpp"
#include "tropical/tropical.h"

namespace tropical::c_api {

/// The int a C caller passed as the enum argument `e`, copied from its bytes (never loaded as the enum).
template <class E>
int raw(const E& e) noexcept {
  static_assert(sizeof(E) == sizeof(int), "the C ABI's enums are ints");
  int value = 0;
  std::memcpy(&value, &e, sizeof value);
  return value;
}

/// The C++ transpose of a tropical_trans value; throws Failure for any other int.
Trans to_trans(int t, const char* name);

/// Throws Failure(TROPICAL_ERROR_NOT_IN_CATALOG) naming (semiring, dtype, op) and what the catalog has.
[[noreturn]] void not_in_catalog(int s, int t, Op op);

/// A pointer argument and the name messages give it.
struct Pointer {
  const void* ptr;
  const char* name;
};

/// Throws Failure(TROPICAL_ERROR_INVALID_ARGUMENT) naming the pointer and the alignment it lacks.
[[noreturn]] void misaligned(const Pointer& p, std::size_t alignment);

/// Throws Failure(TROPICAL_ERROR_INVALID_ARGUMENT) for a pointer that is not a multiple of alignof(T): the
/// library reads and writes it as T (null passes: the C++ API names a null operand itself).
template <class T>
void check_aligned(std::initializer_list<Pointer> pointers) {
  for (const Pointer& p : pointers) {
    if (reinterpret_cast<std::uintptr_t>(p.ptr) % alignof(T) != 0) misaligned(p, alignof(T));
  }
}

/// Calls f.template operator()<S, T>() for the tag S and element T of (s, t);
/// throws Failure for a value outside the enums, or for a pair the catalog lacks (op names it).
template <class F>
void with_types(int s, int t, Op op, F&& f) {
  const auto by_type = [&]<class S>() {
    const bool known = visit_dtype(t, [&]<class T>() {
      if constexpr (kSupported<S, T>) {
        f.template operator()<S, T>();
      } else {
        not_in_catalog(s, t, op);
      }
    });
    if (!known) {
      throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                    "tropical: dtype " + std::to_string(t) + " is not a tropical_dtype"};
    }
  };
  if (visit_scalar_semiring(s, by_type)) return;
  if (s == TROPICAL_COUNTING) {
    throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT,
                  "tropical: counting products take values and counts: call tropical_counting_gemm or "
                  "tropical_counting_gemm_batched (tropical_cpu_counting_* on host memory)"};
  }
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: semiring " + std::to_string(s) +
                                                     " is not a tropical_semiring"};
}

/// Calls f.template operator()<T>() for CountingTropical's element type `t`
/// (float or double); throws Failure for any other dtype.
template <class F>
void with_counting_type(int t, F&& f) {
  const bool known = visit_dtype(t, [&]<class T>() {
    if constexpr (CountingElement<T>) {
      f.template operator()<T>();
    } else {
      not_in_catalog(TROPICAL_COUNTING, t, Op::kGemm);
    }
  });
  if (!known) {
    throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, "tropical: dtype " + std::to_string(t) + " is not a tropical_dtype"};
  }
}

/// The element of T at `scalar` (checked aligned, read by bytes), or `fallback` if null.
template <class T>
T scalar_of(const void* scalar, const char* name, T fallback) {
  if (scalar == nullptr) return fallback;
  check_aligned<T>({{scalar, name}});
  T value;
  std::memcpy(&value, scalar, sizeof value);
  return value;
}

/// alpha as an element of T: the semiring one if null.
template <class S, class T>
T alpha_of(const void* alpha) {
  return scalar_of<T>(alpha, "alpha", reference::one<S, T>());
}

/// beta as an element of T: the semiring zero (C overwritten) if null.
template <class S, class T>
T beta_of(const void* beta) {
  return scalar_of<T>(beta, "beta", reference::zero<S, T>());
}

}  // namespace tropical::c_api
