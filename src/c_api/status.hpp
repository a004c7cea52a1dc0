#pragma once

// The C ABI's error boundary: every tropical_* function runs its body through
// guarded(), which turns any exception into a status code and the thread's
// message, so that nothing thrown inside the library reaches a C caller.

#include <string>

#include "tropical/tropical.h"

namespace tropical::c_api {

/// A failure that has a status of its own (not one of tropical::Error's codes).
struct Failure {
  tropical_status status;
  std::string message;
};

/// Throws Failure(TROPICAL_ERROR_INVALID_ARGUMENT) for a null output pointer named `name`.
[[noreturn]] void not_null_failure(const char* name);

/// Records `message` (control characters but line breaks and tabs shown as '?') as this thread's last
/// error and returns `status`.
tropical_status fail(tropical_status status, const std::string& message) noexcept;

/// Clears this thread's last error (a successful call leaves "").
void clear_error() noexcept;

/// The status and message of the exception being handled (call inside a catch block only).
tropical_status from_current_exception() noexcept;

/// Runs body() and returns TROPICAL_OK, or the status of whatever it threw.
template <class Body>
tropical_status guarded(Body&& body) noexcept {
  try {
    clear_error();
    body();
    return TROPICAL_OK;
  } catch (...) {
    return from_current_exception();
  }
}

}  // namespace tropical::c_api
