// einsum_distributed_argmax: this rank's slices run with their argmax on its device and traced back on the host
// (argmax_part.hpp), every rank's part (values, winning slice, assignment) packed and all-gathered as bytes, and
// merged on the host with the library's tie rule (the smallest slice index among equal values); the merged values
// go back to the output.

#include <algorithm>
#include <vector>

#include "../einsum/device_backend.hpp"
#include "../einsum/program.hpp"
#include "argmax_part.hpp"
#include "collective.hpp"
#include "dealing.hpp"
#include "device_steps.hpp"
#include "nccl.hpp"
#include "start.hpp"
#include "wait.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace driver = jit::driver;

namespace {

/// Queues a copy of host bytes to the device on stream, so that the steps after it on the stream read them; src
/// must live until the stream is next waited for.
void to_device(void* dst, const void* src, std::size_t bytes, CUstream stream) {
  driver::check(driver::api().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream),
                "cuMemcpyHtoDAsync");
}

}  // namespace

void einsum_distributed_argmax(const EinsumProgram& plan, const EinsumKernels& kernels,
                               const DistributedKernels& more, std::span<const void* const> operands, void* output,
                               std::int64_t* assignment, ncclComm_t comm, CUstream stream,
                               const DistributedOptions& options) {
  using namespace einsum_detail;
  using namespace distributed_detail;
  const std::size_t rows = plan.network.labels.size() - plan.network.output.size();
  if (rows > 0 && assignment == nullptr) throw InvalidArgument("tropical: the einsum assignment is null");
  const std::size_t eb = kernels.element_bytes;
  const auto [limit_s, device, nccl_api, ranks] = start(plan, operands, output, eb, comm, stream, options);
  const Nccl& api = *nccl_api;
  const std::size_t packed = (ArgmaxPart::packed_bytes(plan, eb) + 255) / 256 * 256;
  const std::size_t workspace = (argmax_bytes(plan.program, eb) + 255) / 256 * 256;
  driver::ScopedContext context(device);
  refuse_under_capture(stream, "reads every step's argmax back to the host (an argmax run waits for the stream)");
  RunWorkspace owned(api, comm, stream, limit_s, workspace + packed * (1 + static_cast<std::size_t>(ranks.size)),
                     device);
  const ArgmaxPart mine = device_argmax_part(plan, kernels, more.zero, operands, output, owned.get(),
                                             deal(ranks.rank, ranks.size), stream);
  std::vector<std::byte> host(packed * static_cast<std::size_t>(ranks.size));
  mine.pack(plan, eb, host.data());
  std::byte* send = owned.get() + workspace;
  std::byte* recv = send + packed;
  to_device(send, host.data(), packed, stream);
  const Gather gather{send, recv};
  all_gather(api, &gather, 1, packed, comm, stream);
  owned.wait("ncclAllGather");  // also done with the copy that read host
  device_to_host(host.data(), recv, host.size(), stream);
  std::vector<ArgmaxPart> parts;
  for (std::int64_t r = 0; r < holders(plan.info.slices, ranks.size); ++r) {
    parts.push_back(ArgmaxPart::unpack(plan, eb, host.data() + packed * static_cast<std::size_t>(r)));
  }
  const ArgmaxPart best = merge_argmax(plan, kernels, parts);
  to_device(output, best.values.data(), best.values.size(), stream);
  owned.wait("the copy of the merged values");
  std::copy(best.assignment.begin(), best.assignment.end(), assignment);
}

}  // namespace tropical::detail
