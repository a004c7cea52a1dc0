// Splitting strided copies into the device kernel's boxes (src/einsum/boxes.cpp): every element copied once,
// to the same place as the whole copy, at every rank (more axes than a box holds included).

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "../../src/einsum/boxes.hpp"

namespace tropical::einsum_detail {
namespace {

void copy_box(const Box& b, const std::vector<int>& src, std::vector<int>& dst, int axis, std::int64_t s,
              std::int64_t d) {
  if (axis == b.rank) {
    dst[d] = src[s];
    return;
  }
  for (std::int64_t i = 0; i < b.size[axis]; ++i) {
    copy_box(b, src, dst, axis + 1, s + i * b.src_stride[axis], d + i * b.dst_stride[axis]);
  }
}

TEST(EinsumBoxes, boxes_copy_what_the_whole_copy_does_at_every_rank) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int rank = static_cast<int>(rng() % 13);
    CopyStep copy;
    std::int64_t total = 1;
    for (int i = 0; i < rank; ++i) {
      copy.size.push_back(1 + static_cast<std::int64_t>(rng() % 3));
      total *= copy.size.back();
    }
    // The source: a random permutation of a dense box; the destination: dense in order.
    std::vector<int> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::int64_t> dense(rank);
    for (std::int64_t s = 1, i = rank; i-- > 0;) {
      dense[i] = s;
      s *= copy.size[i];
    }
    copy.dst_stride = dense;
    copy.src_stride.resize(rank);
    for (std::int64_t s = 1, i = rank; i-- > 0;) {
      copy.src_stride[perm[i]] = s;
      s *= copy.size[perm[i]];
    }
    std::vector<int> src(total);
    std::iota(src.begin(), src.end(), 0);
    std::vector<int> expected(total, -1);
    for (int max_rank : {8, 3, 1}) {
      std::vector<int> got(total, -1);
      const std::vector<Box> boxes = split(copy, max_rank);
      for (const Box& b : boxes) {
        ASSERT_GE(b.rank, 1);
        ASSERT_LE(b.rank, max_rank);
        copy_box(b, src, got, 0, b.src_offset, b.dst_offset);
      }
      // The reference: element by element over the whole index space.
      std::vector<std::int64_t> index(rank, 0);
      for (std::int64_t e = 0; e < total; ++e) {
        std::int64_t s = 0, d = 0;
        for (int i = 0; i < rank; ++i) {
          s += index[i] * copy.src_stride[i];
          d += index[i] * copy.dst_stride[i];
        }
        expected[d] = src[s];
        for (int i = rank; i-- > 0;) {
          if (++index[i] < copy.size[i]) break;
          index[i] = 0;
        }
      }
      EXPECT_EQ(got, expected) << "rank " << rank << ", boxes of " << max_rank;
    }
  }
}

}  // namespace
}  // namespace tropical::einsum_detail
