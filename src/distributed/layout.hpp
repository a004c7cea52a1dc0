#pragma once

// Where a distributed run's own allocation puts things: the einsum workspace first, then (for a gathered
// collective) the merge's row of ones and every rank's gathered result, each 256-byte aligned.

#include <cstddef>
#include <cstdint>

namespace tropical::distributed_detail {

inline std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Byte offsets into the allocation of a run whose workspace takes `workspace` bytes, gathering `arrays` arrays
/// (1: values, 2: values and counts) of `count` elements of element_bytes from `size` ranks, merged from `rows`
/// rows.
struct Layout {
  std::size_t ones = 0;      ///< `arrays` rows of `rows` ones, one after another (aligned each)
  std::size_t gathered = 0;  ///< `arrays` blocks of size x count elements, one after another (aligned each)
  std::size_t ones_pitch = 0, gathered_pitch = 0;
  std::size_t bytes = 0;  ///< the whole allocation

  Layout(std::size_t workspace, int arrays, std::int64_t rows, std::int64_t count, int size,
         std::size_t element_bytes)
      : ones(aligned(workspace)),
        ones_pitch(aligned(static_cast<std::size_t>(rows) * element_bytes)),
        gathered_pitch(aligned(static_cast<std::size_t>(size) * static_cast<std::size_t>(count) * element_bytes)) {
    gathered = ones + static_cast<std::size_t>(arrays) * ones_pitch;
    bytes = gathered + static_cast<std::size_t>(arrays) * gathered_pitch;
  }
};

}  // namespace tropical::distributed_detail
