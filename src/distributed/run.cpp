// einsum_distributed: this rank's slices (dealing.hpp) contracted on its device and merged (device_steps.hpp's
// queue_part), then one collective over the communicator: an in-place all-reduce of the output, or an all-gather
// of every rank's output merged on the device (queue_merge_rows).

#include <vector>

#include "../einsum/device_backend.hpp"
#include "collective.hpp"
#include "dealing.hpp"
#include "device_steps.hpp"
#include "layout.hpp"
#include "nccl.hpp"
#include "start.hpp"
#include "wait.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace driver = jit::driver;

void einsum_distributed(const EinsumProgram& plan, const EinsumKernels& kernels, const DistributedKernels& more,
                        std::span<const void* const> operands, void* output, ncclComm_t comm, CUstream stream,
                        const DistributedOptions& options) {
  using namespace einsum_detail;
  using namespace distributed_detail;
  const std::size_t eb = kernels.element_bytes;
  const std::int64_t out = plan.output_size;
  const auto [limit_s, device, nccl_api, ranks] = start(plan, operands, output, eb, comm, stream, options);
  const Nccl& api = *nccl_api;
  const Collective collective = collective_for(more.add, more.element);
  const std::int64_t rows = holders(plan.info.slices, ranks.size);
  const Layout layout(static_cast<std::size_t>(plan.program.workspace_elements) * eb, collective.all_reduce ? 0 : 1,
                      rows, out, ranks.size, eb);
  driver::ScopedContext context(device);
  refuse_under_capture(stream, "allocates its workspace and waits for the stream to free it");
  RunWorkspace owned(api, comm, stream, limit_s, layout.bytes, device);
  queue_part(plan, kernels, more.zero, operands, output, owned.get(), deal(ranks.rank, ranks.size), stream);
  if (collective.all_reduce) {
    all_reduce(api, collective, output, static_cast<std::size_t>(out), comm, stream);
    owned.wait("ncclAllReduce");
  } else {
    std::byte* gathered = owned.get() + layout.gathered;
    const Gather gather{output, gathered};
    all_gather(api, &gather, 1, static_cast<std::size_t>(out) * eb, comm, stream);
    owned.queued("ncclAllGather");  // the merge reads what it gathers
    queue_merge_rows(kernels, gathered, rows, out, output, owned.get() + layout.ones, stream);
    owned.wait("ncclAllGather");
  }
}

}  // namespace tropical::detail
