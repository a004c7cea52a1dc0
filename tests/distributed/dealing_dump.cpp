// Prints how the C++ distributed einsum deals a plan's slices (tropical::distributed_slices, slice_index), for
// dealing_test.py to compare with python/tropical/distributed.py's dealing of the same plan:
//   dealing_dump EQUATION SHAPES MEMORY_LIMIT     (SHAPES: "3x3,3x3", one shape per operand)
// prints one JSON object: {"sliced": [labels as letters], "slices": n, "ranks": {"size": [[[s, [index, ...]],
// ...] per rank]}} for communicators of 1 to 4 ranks.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "tropical/distributed.hpp"

namespace {

std::vector<std::vector<std::int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::vector<std::int64_t>> shapes(1);
  std::string number;
  const auto flush = [&] {
    if (!number.empty()) shapes.back().push_back(std::stoll(number));
    number.clear();
  };
  for (char ch : text) {
    if (ch == ',') {
      flush();
      shapes.emplace_back();
    } else if (ch == 'x') {
      flush();
    } else {
      number += ch;
    }
  }
  flush();
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s EQUATION SHAPES MEMORY_LIMIT\n", argv[0]);
    return 2;
  }
  try {
    const tropical::EinsumPlan plan(argv[1], parse_shapes(argv[2]), {{}, std::atoll(argv[3])});
    std::string out = "{\"sliced\": [";
    for (std::size_t i = 0; i < plan.info().sliced.size(); ++i) {
      out += (i > 0 ? ", \"" : "\"") + std::string(1, static_cast<char>(plan.info().sliced[i])) + "\"";
    }
    out += "], \"slices\": " + std::to_string(plan.info().slices) + ", \"ranks\": {";
    for (int size = 1; size <= 4; ++size) {
      out += (size > 1 ? ", \"" : "\"") + std::to_string(size) + "\": [";
      for (int rank = 0; rank < size; ++rank) {
        out += rank > 0 ? ", [" : "[";
        bool first = true;
        for (std::int64_t s : tropical::distributed_slices(plan, rank, size)) {
          out += (first ? "[" : ", [") + std::to_string(s) + ", [";
          const std::vector<std::int64_t> index = tropical::slice_index(plan, s);
          for (std::size_t i = 0; i < index.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(index[i]);
          out += "]]";
          first = false;
        }
        out += "]";
      }
      out += "]";
    }
    std::printf("%s}}\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
