#pragma once

// Random small tensor networks for the einsum tests: labels of size 1 to 3, up to five operands of up to four
// axes (labels repeated in one, shared by several, private to one), output labels among them, operands of
// small integers (exact sums and products in any order) and now and then the semiring zero.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tropical/reference.hpp"

namespace tropical::einsum_test {

template <class S, class T>
struct Pair {
  using Semiring = S;
  using Element = T;
};

struct Net {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::map<int, std::int64_t> sizes;

  std::vector<std::vector<std::int64_t>> shapes() const {
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& term : inputs) {
      out.emplace_back();
      for (int label : term) out.back().push_back(sizes.at(label));
    }
    return out;
  }
};

/// A random network: labels of size 1 to 3, one to five operands of up to four axes (a label may repeat in
/// one), output labels drawn from them; at most a few thousand assignments in all.
inline Net random_net(std::mt19937& rng) {
  Net net;
  const int labels = 1 + static_cast<int>(rng() % 7);
  std::int64_t total = 1;
  for (int l = 0; l < labels; ++l) {
    net.sizes[l] = 1 + static_cast<std::int64_t>(rng() % 3);
    total *= net.sizes[l];
  }
  if (total > 4096) return random_net(rng);
  const int operands = 1 + static_cast<int>(rng() % 5);
  std::vector<bool> used(labels, false);
  for (int i = 0; i < operands; ++i) {
    std::vector<int> term;
    const int rank = static_cast<int>(rng() % 5);
    for (int a = 0; a < rank; ++a) {
      const int label = static_cast<int>(rng() % labels);
      term.push_back(label);
      used[label] = true;
    }
    net.inputs.push_back(term);
  }
  for (int l = 0; l < labels; ++l) {
    if (used[l] && rng() % 3 == 0) net.output.push_back(l);
  }
  std::shuffle(net.output.begin(), net.output.end(), rng);
  std::map<int, std::int64_t> sizes;
  for (const auto& term : net.inputs) {
    for (int label : term) sizes[label] = net.sizes[label];
  }
  net.sizes = sizes;
  return net;
}

/// Small integers (exact sums and products in any order) and now and then the semiring zero.
template <class S, class T>
std::vector<std::vector<T>> random_operands(const Net& net, std::mt19937& rng) {
  std::vector<std::vector<T>> out;
  for (const auto& shape : net.shapes()) {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    std::vector<T> x(n);
    for (T& v : x) {
      const int r = static_cast<int>(rng() % 9);
      if constexpr (S::kAdd == AddKind::kOr) {
        v = static_cast<T>(r % 2);
      } else if (r == 8) {
        v = reference::zero<S, T>();
      } else if constexpr (S::kMul == MulKind::kMul) {
        v = static_cast<T>(r % 4);
      } else {
        v = static_cast<T>(r - 4);
      }
    }
    out.push_back(std::move(x));
  }
  return out;
}

/// The contraction by brute force: for every assignment of the labels, the product of the operands' elements
/// added into the output element it belongs to.
template <class S, class T>
std::vector<T> brute_force(const Net& net, const std::vector<std::vector<T>>& operands) {
  std::vector<int> labels;
  for (const auto& [label, size] : net.sizes) labels.push_back(label);
  std::int64_t out_size = 1;
  for (int label : net.output) out_size *= net.sizes.at(label);
  std::vector<T> out(out_size, reference::zero<S, T>());
  std::map<int, std::int64_t> at;
  for (int label : labels) at[label] = 0;
  while (true) {
    T p = reference::one<S, T>();
    for (std::size_t i = 0; i < net.inputs.size(); ++i) {
      std::int64_t offset = 0;
      for (int label : net.inputs[i]) offset = offset * net.sizes.at(label) + at[label];
      p = reference::mul<S, T>(p, operands[i][offset]);
    }
    std::int64_t o = 0;
    for (int label : net.output) o = o * net.sizes.at(label) + at[label];
    out[o] = reference::add<S, T>(out[o], p);
    std::size_t d = labels.size();
    while (d > 0 && ++at[labels[d - 1]] == net.sizes.at(labels[d - 1])) at[labels[--d]] = 0;
    if (d == 0) break;
  }
  return out;
}

inline std::string describe(const Net& net) {
  std::string s;
  for (const auto& term : net.inputs) {
    s += "[";
    for (int label : term) s += std::to_string(label) + "(" + std::to_string(net.sizes.at(label)) + ") ";
    s += "] ";
  }
  s += "-> [";
  for (int label : net.output) s += std::to_string(label) + " ";
  return s + "]";
}

/// A CountingTropical network's operands: values and counts, one array each per operand.
template <class T>
struct Pairs {
  std::vector<std::vector<T>> values, counts;
};

/// Random (values, counts) operands of `net`: few distinct values (many ties to count) and small counts. No -inf:
/// its counts are kept (reference.hpp), so an order that multiplies -inf late counts other configurations than a
/// brute force does.
template <class T>
Pairs<T> random_pairs(const Net& net, std::mt19937& rng) {
  Pairs<T> p;
  for (const auto& shape : net.shapes()) {
    std::int64_t n = 1;
    for (std::int64_t e : shape) n *= e;
    std::vector<T> v(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<T>(rng() % 3);
      c[i] = static_cast<T>(rng() % 3);
    }
    p.values.push_back(std::move(v));
    p.counts.push_back(std::move(c));
  }
  return p;
}

}  // namespace tropical::einsum_test
