#pragma once

// What a plain or argmax distributed run checks and learns before it queues anything: its arguments (refused before
// NCCL is opened), the device of its stream, NCCL, and this rank's place in the communicator.

#include <cuda.h>

#include <cstddef>
#include <span>

#include "../einsum/program.hpp"
#include "nccl.hpp"
#include "tropical/distributed.hpp"

namespace tropical::distributed_detail {

/// A run's start: the limit of its waits (seconds), its device, NCCL, this rank's place.
struct Start {
  double limit_s;
  int device;
  const Nccl* api;
  Ranks ranks;
};

/// Checks comm (not null), the operands and output (element_bytes each; every one memory of the stream's device)
/// and the wait limit, then opens NCCL and reads comm's rank and size; throws InvalidArgument, Unavailable or
/// NcclError.
Start start(const detail::EinsumProgram& plan, std::span<const void* const> operands, const void* output,
            std::size_t element_bytes, ncclComm_t comm, CUstream stream, const DistributedOptions& options);

/// ranks_of(api, comm, device) once comm has no call under way (a non-blocking communicator still initializing,
/// or finishing the caller's last call; wait_for_queued, bounded by limit_s).
Ranks ready_ranks(const Nccl& api, ncclComm_t comm, int device, double limit_s);

}  // namespace tropical::distributed_detail
