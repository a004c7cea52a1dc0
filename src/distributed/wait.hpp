#pragma once

// Bounded waits for a distributed run's stream: work that includes an NCCL collective finishes only when every
// rank joins it, so a peer that threw or crashed would hang a plain stream synchronize forever. The stream is
// polled instead, NCCL's asynchronous error read each round, and past a limit the communicator is aborted.

#include <cuda.h>

#include <cstddef>

#include "nccl.hpp"

namespace tropical::distributed_detail {

/// The environment variable that sets the limit, in seconds, where DistributedOptions::timeout_s is 0.
inline constexpr const char* kTimeoutVariable = "TROPICAL_NCCL_TIMEOUT_S";
/// The limit where neither sets one.
inline constexpr double kDefaultTimeoutS = 600;

/// The limit of a run's waits in seconds: option_s where positive, else $TROPICAL_NCCL_TIMEOUT_S where set and
/// not empty, else kDefaultTimeoutS; throws InvalidArgument for a negative or non-finite option_s or a variable
/// that is not a positive number.
double wait_limit_s(double option_s);

/// Returns once comm has no call under way and everything queued on stream is done, polling
/// ncclCommGetAsyncError and then (NCCL done) cuStreamQuery with a short backoff; on NCCL's asynchronous error, a
/// failing query, or after limit_s seconds it aborts comm (ncclCommAbort) and throws NcclError (NCCL's text),
/// CudaError, or NcclTimeout naming `what`.
void wait_for_stream(const Nccl& api, ncclComm_t comm, CUstream stream, const char* what, double limit_s);

/// Returns once comm has no call under way, polled and bounded as wait_for_stream is: a non-blocking
/// communicator (ncclConfig_t::blocking = 0) answers a call with ncclInProgress while NCCL still has to queue its
/// work (connect the ranks, for one), and nothing may go on the stream behind it until ncclCommGetAsyncError says
/// ncclSuccess. A blocking communicator's call returns queued: one query.
void wait_for_queued(const Nccl& api, ncclComm_t comm, const char* what, double limit_s);

/// A distributed run's own device allocation and the bounded waits for the stream that uses it. On the way out
/// (an exception's included) it waits for the stream the same bounded way, and frees the allocation only once
/// the stream is known to be done: after a failed wait the allocation is left to leak, since an aborted
/// collective or a step still queued may touch it (and cuMemFree would wait for it).
class RunWorkspace {
 public:
  RunWorkspace(const Nccl& api, ncclComm_t comm, CUstream stream, double limit_s, std::size_t bytes, int device);
  ~RunWorkspace();
  RunWorkspace(const RunWorkspace&) = delete;
  RunWorkspace& operator=(const RunWorkspace&) = delete;

  std::byte* get() const { return reinterpret_cast<std::byte*>(ptr_); }
  /// wait_for_stream on the run's stream, `what` naming the collective or step waited for.
  void wait(const char* what);
  /// wait_for_queued on the run's communicator: before work queued behind the collective `what`.
  void queued(const char* what);

 private:
  /// wait (stream_too) or queued, marking the workspace failed where the wait throws.
  void watch(const char* what, bool stream_too);

  const Nccl& api_;
  ncclComm_t comm_;
  CUstream stream_;
  double limit_s_;
  int device_;
  CUdeviceptr ptr_;
  bool failed_ = false;  // a wait failed: leak, never wait again
};

}  // namespace tropical::distributed_detail
