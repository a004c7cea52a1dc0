#include "wait.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::distributed_detail {

namespace driver = jit::driver;

double wait_limit_s(double option_s) {
  if (option_s < 0 || !std::isfinite(option_s)) {
    throw InvalidArgument("tropical: DistributedOptions::timeout_s is " + std::to_string(option_s) +
                          "; it is a number of seconds, or 0 for $" + kTimeoutVariable + " or " +
                          std::to_string(static_cast<int>(kDefaultTimeoutS)));
  }
  if (option_s > 0) return option_s;
  const char* env = std::getenv(kTimeoutVariable);
  if (env == nullptr || *env == '\0') return kDefaultTimeoutS;
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  if (*end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
    throw InvalidArgument(std::string("tropical: $") + kTimeoutVariable + " is \"" + env +
                          "\"; it is a positive number of seconds");
  }
  return seconds;
}

namespace {

/// wait_for_stream's loop; without a stream (null `stream`), wait_for_queued's.
void poll(const Nccl& api, ncclComm_t comm, const CUstream* stream, const char* what, double limit_s) {
  using Clock = std::chrono::steady_clock;
  // Capped at about 30 years, where the clock's count would otherwise overflow.
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(std::min(limit_s, 1e9)));
  // Polling starts fast (a collective often ends within microseconds of the wait) and backs off to 1 ms, which
  // costs a waiting thread almost nothing and a finished run at most that much latency.
  std::chrono::microseconds pause(10);
  for (;;) {
    int async_error = kNcclSuccess;
    const int result = api.ncclCommGetAsyncError(comm, &async_error);
    // ncclInProgress is a non-blocking communicator's call under way, not a failure.
    if (result != kNcclSuccess || (async_error != kNcclSuccess && async_error != kNcclInProgress)) {
      const int error = result != kNcclSuccess ? result : async_error;
      const char* text = api.ncclGetErrorString(error);
      api.ncclCommAbort(comm);  // its own result adds nothing to the error
      throw NcclError(what, error, text != nullptr ? text : "",
                      "; ncclCommGetAsyncError reported it while the run waited; the communicator was aborted "
                      "(ncclCommAbort) and cannot be used again");
    }
    // Until NCCL has queued the call's work, an idle stream says nothing about it.
    if (async_error == kNcclSuccess) {
      if (stream == nullptr) return;
      const CUresult r = driver::api().cuStreamQuery(*stream);
      if (r == CUDA_SUCCESS) return;
      if (r != CUDA_ERROR_NOT_READY) {
        // The collective may be half done: NCCL's state is unknown, so the communicator goes too.
        api.ncclCommAbort(comm);
        driver::check(r, "cuStreamQuery");
      }
    }
    if (Clock::now() >= deadline) {
      api.ncclCommAbort(comm);
      throw NcclTimeout(what, limit_s);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace

void wait_for_stream(const Nccl& api, ncclComm_t comm, CUstream stream, const char* what, double limit_s) {
  poll(api, comm, &stream, what, limit_s);
}

void wait_for_queued(const Nccl& api, ncclComm_t comm, const char* what, double limit_s) {
  poll(api, comm, nullptr, what, limit_s);
}

RunWorkspace::RunWorkspace(const Nccl& api, ncclComm_t comm, CUstream stream, double limit_s, std::size_t bytes,
                           int device)
    : api_(api),
      comm_(comm),
      stream_(stream),
      limit_s_(limit_s),
      device_(device),
      ptr_(detail::device_alloc(bytes > 0 ? bytes : 1, device)) {}

RunWorkspace::~RunWorkspace() {
  if (!failed_) {
    try {
      wait("the run's queued work, on its way out");
    } catch (...) {
      // The run's own error is the one that reports; this wait only decides whether the memory may go.
    }
  }
  if (!failed_) detail::device_free(ptr_, device_);
}

void RunWorkspace::wait(const char* what) { watch(what, true); }

void RunWorkspace::queued(const char* what) { watch(what, false); }

void RunWorkspace::watch(const char* what, bool stream_too) {
  try {
    poll(api_, comm_, stream_too ? &stream_ : nullptr, what, limit_s_);
  } catch (...) {
    failed_ = true;
    throw;
  }
}

}  // namespace tropical::distributed_detail
