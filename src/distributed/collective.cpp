#include "collective.hpp"

namespace tropical::distributed_detail {

Collective collective_for(AddKind add, detail::DistributedElement element) {
  using detail::DistributedElement;
  const NcclOp op = add == AddKind::kMin ? NcclOp::kMin : NcclOp::kMax;
  switch (element) {
    case DistributedElement::kF32: return {true, NcclType::kFloat32, op};
    case DistributedElement::kF64: return {true, NcclType::kFloat64, op};
    case DistributedElement::kI32: return {true, NcclType::kInt32, op};
    case DistributedElement::kI64: return {true, NcclType::kInt64, op};
    case DistributedElement::kU8: return {true, NcclType::kUint8, op};
    case DistributedElement::kI16: break;
  }
  return {false, NcclType::kUint8, op};
}

void all_reduce(const Nccl& api, const Collective& c, void* buffer, std::size_t count, ncclComm_t comm,
                CUstream stream) {
  check_queued(api,
               api.ncclAllReduce(buffer, buffer, count, static_cast<int>(c.type), static_cast<int>(c.op), comm,
                                 stream),
               "ncclAllReduce");
}

void all_gather(const Nccl& api, const Gather* gathers, std::size_t count, std::size_t bytes, ncclComm_t comm,
                CUstream stream) {
  const bool group = count > 1;
  if (group) check(api, api.ncclGroupStart(), "ncclGroupStart");
  try {
    for (std::size_t i = 0; i < count; ++i) {
      check_queued(api,
                   api.ncclAllGather(gathers[i].send, gathers[i].recv, bytes, static_cast<int>(NcclType::kUint8),
                                     comm, stream),
                   "ncclAllGather");
    }
  } catch (...) {
    // A group left open would swallow the caller's next NCCL calls; its own result adds nothing to the error.
    if (group) api.ncclGroupEnd();
    throw;
  }
  if (group) check_queued(api, api.ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace tropical::distributed_detail
