#include "status.hpp"

#include <exception>
#include <new>

#include "tropical/error.hpp"
#include "tropical/storage/log.hpp"

namespace tropical::c_api {
namespace {

// One message per thread: a caller reads it right after the failing call, and
// another thread's failure must not overwrite it in between.
thread_local std::string last_error;

tropical_status status_of(Errc code) noexcept {
  switch (code) {
    case Errc::kCompile: return TROPICAL_ERROR_COMPILE;
    case Errc::kCuda: return TROPICAL_ERROR_CUDA;
    case Errc::kInvalidArgument: return TROPICAL_ERROR_INVALID_ARGUMENT;
    case Errc::kUnavailable: return TROPICAL_ERROR_UNAVAILABLE;
  }
  return TROPICAL_ERROR_INTERNAL;
}

}  // namespace

tropical_status fail(tropical_status status, const std::string& message) noexcept {
  try {
    // Messages quote what callers passed (names, paths): no escape sequence or bell of theirs is handed back
    // to a caller that prints the message to a terminal.
    last_error = storage::terminal_safe(message);
  } catch (...) {
    // No memory for the message: the status still says what happened.
    last_error.clear();
  }
  return status;
}

void not_null_failure(const char* name) {
  throw Failure{TROPICAL_ERROR_INVALID_ARGUMENT, std::string("tropical: ") + name + " is null"};
}

void clear_error() noexcept { last_error.clear(); }

tropical_status from_current_exception() noexcept {
  try {
    throw;
  } catch (const Failure& f) {
    return fail(f.status, f.message);
  } catch (const tropical::CompileError& e) {
    // The message names the kernel; the log is what the user needs to act on.
    return fail(TROPICAL_ERROR_COMPILE, std::string(e.what()) + "\n" + e.log());
  } catch (const tropical::Error& e) {
    return fail(status_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(TROPICAL_ERROR_OUT_OF_MEMORY, "tropical: out of host memory");
  } catch (const std::exception& e) {
    return fail(TROPICAL_ERROR_INTERNAL, std::string("tropical: internal error: ") + e.what());
  } catch (...) {
    return fail(TROPICAL_ERROR_INTERNAL, "tropical: internal error (an exception of unknown type)");
  }
}

}  // namespace tropical::c_api

extern "C" const char* tropical_last_error(void) { return tropical::c_api::last_error.c_str(); }
