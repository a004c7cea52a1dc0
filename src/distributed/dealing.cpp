// The public face of the dealing rule (dealing.hpp) and of the slice numbering (run.hpp's slice_index).

#include "dealing.hpp"

#include <string>
#include <vector>

#include "../einsum/program.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"

namespace tropical {

std::vector<std::int64_t> distributed_slices(const EinsumPlan& plan, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument("tropical: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                          " ranks does not exist");
  }
  const einsum_detail::SliceRange range = distributed_detail::deal(rank, size);
  std::vector<std::int64_t> mine;
  for (std::int64_t s = range.first; s < plan.info().slices; s += range.step) mine.push_back(s);
  return mine;
}

std::vector<std::int64_t> slice_index(const EinsumPlan& plan, std::int64_t slice) {
  if (slice < 0 || slice >= plan.info().slices) {
    throw InvalidArgument("tropical: slice " + std::to_string(slice) + " of a plan of " +
                          std::to_string(plan.info().slices) + " slices does not exist");
  }
  return einsum_detail::slice_index(plan.program().program, slice);
}

}  // namespace tropical
