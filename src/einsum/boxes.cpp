#include "boxes.hpp"

namespace tropical::einsum_detail {

std::vector<Box> split(const CopyStep& copy, int max_rank) {
  const int rank = static_cast<int>(copy.size.size());
  const int outer = rank > max_rank ? rank - max_rank : 0;
  Box box;
  box.rank = rank - outer;
  for (int i = 0; i < box.rank; ++i) {
    box.size[i] = copy.size[outer + i];
    box.src_stride[i] = copy.src_stride[outer + i];
    box.dst_stride[i] = copy.dst_stride[outer + i];
  }
  if (box.rank == 0) box.rank = 1;  // one element: size, strides 1
  std::vector<Box> boxes;
  std::vector<std::int64_t> index(outer, 0);
  while (true) {
    box.src_offset = box.dst_offset = 0;
    for (int i = 0; i < outer; ++i) {
      box.src_offset += index[i] * copy.src_stride[i];
      box.dst_offset += index[i] * copy.dst_stride[i];
    }
    boxes.push_back(box);
    int axis = outer;
    while (axis > 0 && ++index[axis - 1] == copy.size[axis - 1]) index[--axis] = 0;
    if (axis == 0) break;
  }
  return boxes;
}

}  // namespace tropical::einsum_detail
