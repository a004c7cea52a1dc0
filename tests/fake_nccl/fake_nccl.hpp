#pragma once

// What the test-only libnccl.so.2 of this directory does, for tests of the distributed einsum without NCCL or a
// GPU: it records every call it gets (the log below) and answers as a communicator the test describes; it never
// reads or writes memory.

namespace tropical::fake_nccl {

/// extern "C" const char* (): every call so far, each "name(arguments);" (reset by kReset).
inline constexpr const char* kLog = "tropical_fake_nccl_log";
/// extern "C" void (): empties the log, forgets a failure, an asynchronous error and a call under way, zeroes the
/// count of ncclCommGetAsyncError calls, and makes the communicator rank 0 of 1 on device 0.
inline constexpr const char* kReset = "tropical_fake_nccl_reset";
/// extern "C" void (int rank, int size, int device): what the communicator reports.
inline constexpr const char* kSetComm = "tropical_fake_nccl_set_comm";
/// extern "C" void (const char* call, int result): makes every later call of that name return result.
inline constexpr const char* kFail = "tropical_fake_nccl_fail";

/// extern "C" void (int result): what ncclCommGetAsyncError reports from now on (0: none). It is polled, so its
/// calls are counted (kAsyncQueries) rather than logged; ncclCommAbort is logged.
inline constexpr const char* kSetAsyncError = "tropical_fake_nccl_set_async_error";
/// extern "C" void (long rounds): the next `rounds` ncclCommGetAsyncError calls report ncclInProgress (7), as a
/// non-blocking communicator's call under way does, before the asynchronous error; -1: every later call.
inline constexpr const char* kSetInProgress = "tropical_fake_nccl_set_in_progress";
/// extern "C" long (): the ncclCommGetAsyncError calls since the last reset.
inline constexpr const char* kAsyncQueries = "tropical_fake_nccl_async_queries";

/// ncclGetErrorString's text for every result but ncclSuccess.
inline constexpr const char* kErrorText = "failed in the tests' fake libnccl";

}  // namespace tropical::fake_nccl
