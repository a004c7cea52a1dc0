// einsum_distributed_counting: this rank's slices (dealing.hpp) over CountingTropical on its device
// (device_counting.hpp's slice loop), then the values and the counts of every rank all-gathered in one NCCL group
// and merged on the device by one counting product (merge.hpp).

#include <limits>
#include <string>

#include "../einsum/device_backend.hpp"
#include "../einsum/device_counting.hpp"
#include "../einsum/program.hpp"
#include "collective.hpp"
#include "dealing.hpp"
#include "layout.hpp"
#include "merge.hpp"
#include "nccl.hpp"
#include "start.hpp"
#include "wait.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical::detail {

namespace driver = jit::driver;

void einsum_distributed_counting(const EinsumProgram& plan, std::size_t element_bytes,
                                 std::span<const void* const> values, std::span<const void* const> counts,
                                 void* out_values, void* out_counts, ncclComm_t comm, CUstream stream,
                                 const DistributedOptions& options) {
  using namespace einsum_detail;
  using namespace distributed_detail;
  if (comm == nullptr) throw InvalidArgument("tropical: the NCCL communicator is null");
  check_pointers(plan, values, out_values, &plan);  // the workspace is the run's own
  check_pointers(plan, counts, out_counts, &plan);
  const double limit_s = wait_limit_s(options.timeout_s);
  if (element_bytes != sizeof(float) && element_bytes != sizeof(double)) {
    throw InvalidArgument("tropical: counting einsum elements are float or double, not " +
                          std::to_string(element_bytes) + " bytes");
  }
  const std::int64_t out = plan.output_size;
  const std::size_t out_bytes = static_cast<std::size_t>(out) * element_bytes;
  RunDevices devices;
  devices.add_operands(plan, values, element_bytes, "einsum values of operand");
  devices.add_operands(plan, counts, element_bytes, "einsum counts of operand");
  devices.add(out_values, out_bytes, "the einsum out_values");
  devices.add(out_counts, out_bytes, "the einsum out_counts");
  const int device = devices.device(stream);
  const Nccl& api = nccl();
  const Ranks ranks = ready_ranks(api, comm, device, limit_s);
  const std::int64_t rows = holders(plan.info.slices, ranks.size);
  const Layout layout(counting_bytes(plan.program, out, element_bytes), 2, rows, out, ranks.size, element_bytes);
  driver::ScopedContext context(device);
  refuse_under_capture(stream, "allocates its workspace and waits for the stream to free it");
  RunWorkspace owned(api, comm, stream, limit_s, layout.bytes, device);
  std::byte* base = owned.get();
  // The outputs hold this rank's result, the all-gather's send buffers; the merge overwrites them afterwards.
  const SliceRange range = deal(ranks.rank, ranks.size);
  if (range.first < plan.info.slices) {
    queue_counting_slices(plan, element_bytes, values, counts, out_values, out_counts, base, range, stream);
  } else {  // no slice: the zero of CountingTropical, (-inf, 0)
    const EinsumKernels copies{element_bytes, nullptr, {}, nullptr, {}, {}, nullptr};  // fill reads the size
    DeviceBackend backend(copies, stream);
    const float fz = -std::numeric_limits<float>::infinity(), fc = 0.0f;
    const double dz = -std::numeric_limits<double>::infinity(), dc = 0.0;
    const bool single = element_bytes == sizeof(float);
    backend.fill(out_values, single ? static_cast<const void*>(&fz) : &dz, out);
    backend.fill(out_counts, single ? static_cast<const void*>(&fc) : &dc, out);
  }
  std::byte* gathered_values = base + layout.gathered;
  std::byte* gathered_counts = gathered_values + layout.gathered_pitch;
  const Gather gathers[2] = {{out_values, gathered_values}, {out_counts, gathered_counts}};
  all_gather(api, gathers, 2, out_bytes, comm, stream);
  owned.queued("ncclAllGather (values and counts, one group)");  // the merge reads what they gather
  merge_counting_rows(element_bytes, gathered_values, gathered_counts, rows, out, out_values, out_counts,
                      base + layout.ones, base + layout.ones + layout.ones_pitch, stream);
  owned.wait("ncclAllGather (values and counts, one group)");
}

}  // namespace tropical::detail
