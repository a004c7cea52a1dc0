// Random strided copies for the permute tests (emulated and on a GPU): a tensor of random rank and shape read
// from one layout (row-major, padded axes, now and then a broadcast axis of stride 0) and written in a random
// permutation of its axes (padded too), and the host loop that is the reference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../../src/permute.hpp"

namespace tropical::permute_test {

/// One copy and the elements its source and destination span.
struct Case {
  detail::StridedCopy copy{};
  std::int64_t src_elements = 0, dst_elements = 0;
  std::string what;
};

/// Appends " <v>" to `text` (appends, not `" " + std::to_string(v)`: GCC 12 warns falsely on that at -O3).
inline void append(std::string& text, std::int64_t v) {
  text += ' ';
  text += std::to_string(v);
}

/// A random copy of rank 1..max_rank of at most max_elements elements; sizes from a list that crosses the tiles'
/// edges (1, 2, 3, 31, 33, 63, 64, 65, 100, 130).
inline Case random_case(std::mt19937_64& rng, int max_rank, std::int64_t max_elements) {
  static constexpr std::int64_t kSizes[] = {1, 2, 3, 5, 31, 33, 63, 64, 65, 100, 130};
  const int rank = std::uniform_int_distribution<int>(1, max_rank)(rng);
  Case c;
  c.copy.rank = rank;
  std::int64_t elements = 1;
  for (int a = 0; a < rank; ++a) {
    std::int64_t size = kSizes[std::uniform_int_distribution<int>(0, static_cast<int>(std::size(kSizes)) - 1)(rng)];
    while (size > 1 && elements * size > max_elements) size /= 2;
    c.copy.size[a] = size;
    elements *= size;
  }
  std::vector<int> perm(static_cast<std::size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::uniform_int_distribution<int> pad(0, 4);
  // Source: row-major in the axes' order, some axes padded, one now and then broadcast (stride 0).
  std::int64_t stride = 1 + (pad(rng) == 0 ? 1 : 0);
  for (int a = rank - 1; a >= 0; --a) {
    const bool broadcast = pad(rng) == 0 && rank > 1;
    c.copy.src_stride[a] = broadcast ? 0 : stride;
    if (!broadcast) stride *= c.copy.size[a] + (pad(rng) == 0 ? pad(rng) : 0);
  }
  // Destination: row-major in the permuted order, some axes padded.
  stride = 1;
  for (int q = rank - 1; q >= 0; --q) {
    const int a = perm[static_cast<std::size_t>(q)];
    c.copy.dst_stride[a] = stride;
    stride *= c.copy.size[a] + (pad(rng) == 0 ? pad(rng) : 0);
  }
  c.src_elements = c.dst_elements = 1;
  for (int a = 0; a < rank; ++a) {
    c.src_elements += (c.copy.size[a] - 1) * c.copy.src_stride[a];
    c.dst_elements += (c.copy.size[a] - 1) * c.copy.dst_stride[a];
  }
  c.what = "rank";
  append(c.what, rank);
  c.what += " sizes";
  for (int a = 0; a < rank; ++a) append(c.what, c.copy.size[a]);
  c.what += " src strides";
  for (int a = 0; a < rank; ++a) append(c.what, c.copy.src_stride[a]);
  c.what += " dst strides";
  for (int a = 0; a < rank; ++a) append(c.what, c.copy.dst_stride[a]);
  return c;
}

/// A case of the given sizes, source row-major, destination row-major in the order `perm` of the axes.
inline Case permuted(std::vector<std::int64_t> sizes, std::vector<int> perm) {
  Case c;
  c.copy.rank = static_cast<int>(sizes.size());
  std::int64_t stride = 1;
  for (int a = c.copy.rank - 1; a >= 0; --a) {
    c.copy.size[a] = sizes[static_cast<std::size_t>(a)];
    c.copy.src_stride[a] = stride;
    stride *= sizes[static_cast<std::size_t>(a)];
  }
  c.src_elements = c.dst_elements = stride;
  stride = 1;
  for (int q = c.copy.rank - 1; q >= 0; --q) {
    const int a = perm[static_cast<std::size_t>(q)];
    c.copy.dst_stride[a] = stride;
    stride *= sizes[static_cast<std::size_t>(a)];
  }
  c.what = "permuted sizes";
  for (auto s : sizes) append(c.what, s);
  return c;
}

/// The reference: dst at every index = src there, in a plain loop over the indices.
template <class T>
void copy_on_host(const T* src, T* dst, const detail::StridedCopy& c) {
  std::int64_t index[detail::kMaxPermuteRank] = {};
  for (int a = 0; a < c.rank; ++a) {
    if (c.size[a] == 0) return;
  }
  for (;;) {
    std::int64_t s = 0, d = 0;
    for (int a = 0; a < c.rank; ++a) {
      s += index[a] * c.src_stride[a];
      d += index[a] * c.dst_stride[a];
    }
    dst[d] = src[s];
    int a = c.rank - 1;
    while (a >= 0 && ++index[a] == c.size[a]) index[a--] = 0;
    if (a < 0) return;
  }
}

}  // namespace tropical::permute_test
