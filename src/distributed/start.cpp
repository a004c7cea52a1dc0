#include "start.hpp"

#include "../einsum/device_backend.hpp"
#include "wait.hpp"
#include "tropical/error.hpp"

namespace tropical::distributed_detail {

Start start(const detail::EinsumProgram& plan, std::span<const void* const> operands, const void* output,
            std::size_t element_bytes, ncclComm_t comm, CUstream stream, const DistributedOptions& options) {
  if (comm == nullptr) throw InvalidArgument("tropical: the NCCL communicator is null");
  einsum_detail::check_pointers(plan, operands, output, &plan);  // the workspace is the run's own
  const double limit_s = wait_limit_s(options.timeout_s);
  einsum_detail::RunDevices devices;
  devices.add_operands(plan, operands, element_bytes, "einsum operand");
  devices.add(output, static_cast<std::size_t>(plan.output_size) * element_bytes, "the einsum output");
  const int device = devices.device(stream);
  const Nccl& api = nccl();
  return Start{limit_s, device, &api, ready_ranks(api, comm, device, limit_s)};
}

Ranks ready_ranks(const Nccl& api, ncclComm_t comm, int device, double limit_s) {
  // A non-blocking communicator may still be initializing, or finishing the caller's last call: NCCL refuses
  // every call on it until then.
  wait_for_queued(api, comm, "the communicator's call before the run", limit_s);
  return ranks_of(api, comm, device);
}

}  // namespace tropical::distributed_detail
