#pragma once

// NCCL opened at run time, as the driver and NVRTC are: nothing links libnccl, and a program that never runs a
// distributed einsum never loads it.

#include <cuda.h>

#include <cstddef>
#include <string>

#include "tropical/distributed.hpp"

namespace tropical::distributed_detail {

/// nccl.h's values of the enumerators tropical passes (fixed across NCCL 2.x).
inline constexpr int kNcclSuccess = 0;
inline constexpr int kNcclInProgress = 7;
enum class NcclType : int { kUint8 = 1, kInt32 = 2, kInt64 = 4, kFloat32 = 7, kFloat64 = 8 };
enum class NcclOp : int { kMax = 2, kMin = 3 };

/// The environment variable naming the NCCL library to open instead of libnccl.so.2.
inline constexpr const char* kLibraryVariable = "TROPICAL_NCCL_LIBRARY";
/// What is opened without it, through the dynamic loader's search path.
inline constexpr const char* kSoname = "libnccl.so.2";

/// The NCCL entry points tropical calls, with nccl.h's prototypes (its enums are C enums, passed as int;
/// cudaStream_t is the driver's CUstream).
struct Nccl {
  int (*ncclCommCount)(ncclComm_t comm, int* count) = nullptr;
  int (*ncclCommUserRank)(ncclComm_t comm, int* rank) = nullptr;
  int (*ncclCommCuDevice)(ncclComm_t comm, int* device) = nullptr;
  int (*ncclAllReduce)(const void* send, void* recv, std::size_t count, int type, int op, ncclComm_t comm,
                       CUstream stream) = nullptr;
  int (*ncclAllGather)(const void* send, void* recv, std::size_t count, int type, ncclComm_t comm,
                       CUstream stream) = nullptr;
  int (*ncclGroupStart)() = nullptr;
  int (*ncclGroupEnd)() = nullptr;
  const char* (*ncclGetErrorString)(int result) = nullptr;
  int (*ncclCommGetAsyncError)(ncclComm_t comm, int* async_error) = nullptr;  // NCCL 2.4 and later
  int (*ncclCommAbort)(ncclComm_t comm) = nullptr;
  std::string library;  ///< the name it was opened by (a path, or the soname)
};

/// Opens `library` (a path, or a name the dynamic loader searches) and resolves every entry point; throws
/// Unavailable naming the library and `origin` (where the name came from) when it cannot be opened, or the
/// first symbol it lacks. Not cached: nccl() is.
Nccl load_nccl(const std::string& library, const std::string& origin);

/// NCCL for this process, opened once ($TROPICAL_NCCL_LIBRARY, else libnccl.so.2); thread-safe. A failure
/// sticks: every call throws the same Unavailable.
const Nccl& nccl();

/// Throws NcclError naming `call` and NCCL's text for `result` unless it is ncclSuccess.
void check(const Nccl& api, int result, const char* call);
/// check for a call that queues work: ncclInProgress (a non-blocking communicator's call under way, finished by
/// wait_for_queued or wait_for_stream) is not a failure either.
void check_queued(const Nccl& api, int result, const char* call);

/// A communicator's rank and size.
struct Ranks {
  int rank = 0;
  int size = 1;
};

/// The rank and size of comm, whose device must be `device` (the run's); throws NcclError for a failing query,
/// InvalidArgument for another device or a rank outside [0, size).
Ranks ranks_of(const Nccl& api, ncclComm_t comm, int device);

}  // namespace tropical::distributed_detail
