#pragma once

// The one collective of a distributed run: which one a semiring and element type take, and queuing it.

#include <cuda.h>

#include <cstddef>

#include "nccl.hpp"
#include "tropical/distributed.hpp"

namespace tropical::distributed_detail {

/// An all-reduce of the output with `op` over `type`, or (all_reduce false: a type NCCL lacks) an all-gather of
/// every rank's output as bytes, merged on the device.
struct Collective {
  bool all_reduce = true;
  NcclType type = NcclType::kUint8;
  NcclOp op = NcclOp::kMax;
};

/// The collective of a semiring with addition `add` over `element`: max for max and or (AndOr's results are 0
/// or 1, so their max is their or), min for min; int16 gathered.
Collective collective_for(AddKind add, detail::DistributedElement element);

/// Queues the in-place all-reduce of `count` elements at buffer on stream (a non-blocking communicator's may still
/// be under way: wait_for_queued); throws NcclError.
void all_reduce(const Nccl& api, const Collective& c, void* buffer, std::size_t count, ncclComm_t comm,
                CUstream stream);

/// One array's all-gather: `bytes` from send on every rank into recv (the ranks' one after another).
struct Gather {
  const void* send;
  void* recv;
};

/// Queues the all-gathers of `count` arrays of `bytes` each, in one NCCL group where there are several (under way
/// as all_reduce's may be); throws NcclError (the group ended on the way out).
void all_gather(const Nccl& api, const Gather* gathers, std::size_t count, std::size_t bytes, ncclComm_t comm,
                CUstream stream);

}  // namespace tropical::distributed_detail
