// Compiling a plan into steps: the label bookkeeping of python/tropical/_einsum_exec.py done once, with the
// same label orders (so that a step contracts its labels in the same order and ties fall the same way).

#include "program.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "tropical/error.hpp"

namespace tropical::einsum_detail {

namespace {

constexpr std::int64_t kAlign = 64;  // elements: every buffer starts on a 256-byte boundary or better

/// The most elements a workspace (or the argmax region) may have: its bytes, at 8 an element and twice that for
/// CountingTropical's values and counts, stay far inside 64 bits.
constexpr std::int64_t kMaxWorkspaceElements = std::int64_t{1} << 58;

[[noreturn]] void too_large(std::int64_t elements) {
  throw InvalidArgument("tropical: the order's workspace needs more than 2^58 elements" +
                        (elements > 0 ? " (" + std::to_string(elements) + ")" : std::string()) +
                        ", past 64-bit byte sizes; pass a memory_limit (elements) to slice it");
}

/// First-fit offsets for buffers that live over known stretches of the program.
class Arena {
 public:
  explicit Arena(std::int64_t base) : base_(base), high_(base) {}
  std::int64_t alloc(std::int64_t size) {
    size = (size + kAlign - 1) / kAlign * kAlign;
    std::int64_t at = base_;
    auto it = live_.begin();
    for (; it != live_.end(); ++it) {
      if (it->first - at >= size) break;
      at = it->first + it->second;
    }
    std::int64_t end = 0;
    if (__builtin_add_overflow(at, size, &end) || end > kMaxWorkspaceElements) too_large(end);
    live_.insert(it, {at, size});
    high_ = std::max(high_, end);
    return at;
  }
  void free(std::int64_t offset) {
    std::erase_if(live_, [&](const auto& block) { return block.first == offset; });
  }
  std::int64_t high() const { return high_; }

 private:
  std::int64_t base_, high_;
  std::vector<std::pair<std::int64_t, std::int64_t>> live_;  // (offset, size), sorted by offset
};

/// A tensor during compilation: where it is, its labels and each label's stride (elements).
struct Value {
  Where at;
  std::vector<int> labels;
  std::vector<std::int64_t> strides;
  bool owned = false;  ///< a workspace buffer of its own, freed once consumed
};

/// Products of more rows than this (and fewer columns) run transposed (Compiler::contract).
constexpr std::int64_t kTall = std::int64_t{1} << 18;

/// A matrix view of a Value: op(X) of rows x cols per batch element.
struct View {
  Trans trans;
  std::int64_t ld, stride;
};

class Compiler {
 public:
  Compiler(const Network& net, const Mask& sliced, std::int64_t base)
      : net_(net), sliced_(sliced), arena_(base) {}

  std::int64_t product_of(const std::vector<int>& labels) const {
    std::int64_t p = 1;
    for (int label : labels) p *= net_.sizes[label];
    return p;
  }

  std::vector<std::int64_t> dense_strides(const std::vector<int>& labels) const {
    std::vector<std::int64_t> strides(labels.size());
    std::int64_t s = 1;
    for (std::size_t i = labels.size(); i-- > 0;) {
      strides[i] = s;
      s *= net_.sizes[labels[i]];
    }
    return strides;
  }

  std::int64_t stride_of(const Value& v, int label) const {
    const auto it = std::find(v.labels.begin(), v.labels.end(), label);
    return v.strides[it - v.labels.begin()];
  }

  static std::vector<int> concat(std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int> out;
    for (const auto* part : parts) out.insert(out.end(), part->begin(), part->end());
    return out;
  }

  /// The labels of `group` of v (in that order, the last fastest) as one strided axis: (extent, stride) where
  /// each label steps exactly past the ones after it (labels of extent 1 skipped; none: extent 1, stride 0).
  std::optional<std::pair<std::int64_t, std::int64_t>> axis_of(const Value& v, const std::vector<int>& group) const {
    std::int64_t extent = 1, stride = 0;
    for (std::size_t i = group.size(); i-- > 0;) {
      const std::int64_t size = net_.sizes[group[i]];
      if (size == 1) continue;
      const std::int64_t s = stride_of(v, group[i]);
      if (extent == 1) {
        stride = s;
      } else if (s != stride * extent) {
        return std::nullopt;
      }
      extent *= size;
    }
    return std::pair{extent, stride};
  }

  /// v as op(X) batches of rows x cols without a copy: batch, rows and cols each one strided axis of v, and rows
  /// or cols of unit stride (the matrices' leading dimension the other's stride; the batch stride any).
  std::optional<View> view(const Value& v, const std::vector<int>& batch, const std::vector<int>& rows,
                           const std::vector<int>& cols) const {
    const auto b = axis_of(v, batch), r = axis_of(v, rows), c = axis_of(v, cols);
    if (!b || !r || !c) return std::nullopt;
    const auto [rn, rs] = *r;
    const auto [cn, cs] = *c;
    const std::int64_t batch_stride = b->first > 1 ? b->second : rn * cn;
    if (rn == 1 || rs == 1) {  // column-major: X(i, j) at j ld + i, stored as its transpose
      const std::int64_t ld = cn > 1 ? cs : std::max<std::int64_t>(rn, 1);
      if (ld >= rn) return View{Trans::kYes, ld, batch_stride};
    }
    if (cn == 1 || cs == 1) {  // row-major: X(i, j) at i ld + j
      const std::int64_t ld = rn > 1 ? rs : std::max<std::int64_t>(cn, 1);
      if (ld >= cn) return View{Trans::kNo, ld, batch_stride};
    }
    return std::nullopt;
  }

  /// A new dense buffer with `labels`, or the slice's result when `to_result`.
  Value make(const std::vector<int>& labels, bool to_result) {
    Value v;
    v.labels = labels;
    v.strides = dense_strides(labels);
    if (to_result) {
      v.at.space = Space::kResult;
    } else {
      v.at.offset = arena_.alloc(product_of(labels));
      v.owned = true;
    }
    return v;
  }

  void release(const Value& v) {
    if (v.owned) arena_.free(v.at.offset);
  }

  /// v copied into a new dense buffer (or the result) in `order`.
  Value copy(const Value& v, const std::vector<int>& order, bool to_result) {
    Value out = make(order, to_result);
    CopyStep step{v.at, out.at, {}, {}, {}};
    for (std::size_t i = 0; i < order.size(); ++i) {
      step.size.push_back(net_.sizes[order[i]]);
      step.src_stride.push_back(stride_of(v, order[i]));
      step.dst_stride.push_back(out.strides[i]);
    }
    coalesce(step);
    steps.push_back(std::move(step));
    return out;
  }

  /// v as op(X) batches of rows x cols: a view of it, or of a copy (then *scratch holds the copy).
  std::pair<Where, View> matrix(const Value& v, const std::vector<int>& batch, const std::vector<int>& rows,
                                const std::vector<int>& cols, std::optional<Value>& scratch) {
    if (auto found = view(v, batch, rows, cols)) return {v.at, *found};
    scratch = copy(v, concat({&batch, &rows, &cols}), false);
    return {scratch->at, *view(*scratch, batch, rows, cols)};
  }

  /// Operand `leaf` after its diagonals, sliced labels and the reduction of the labels not in keep.
  /// Records node's reduction for the traceback; its argmax's offset in the argmax region.
  std::int64_t trace_node(int node, const std::vector<int>& labels, const std::vector<int>& contracted) {
    const std::int64_t at = argmax_count;
    if (__builtin_add_overflow(argmax_count, product_of(labels), &argmax_count) ||
        argmax_count > kMaxWorkspaceElements) {
      too_large(-1);
    }
    traced[node] = TraceNode{labels, contracted, at};
    return at;
  }

  Value leaf(int leaf, const Mask& keep, bool is_root) {
    Value v;
    v.at.space = Space::kOperand;
    v.at.operand = leaf;
    v.labels = net_.inputs[leaf];
    v.strides.assign(v.labels.size(), 1);
    for (std::size_t i = v.labels.size(); i-- > 1;) v.strides[i - 1] = v.strides[i] * net_.shapes[leaf][i];
    // A repeated label's axes become their diagonal, appended last (numpy's diagonal(), as the Python
    // executor).
    while (true) {
      std::size_t p = 0, q = 0;
      for (q = 0; q < v.labels.size(); ++q) {
        const auto first = std::find(v.labels.begin(), v.labels.begin() + q, v.labels[q]);
        if (first != v.labels.begin() + q) {
          p = first - v.labels.begin();
          break;
        }
      }
      if (q == v.labels.size()) break;
      const int label = v.labels[q];
      const std::int64_t stride = v.strides[p] + v.strides[q];
      v.labels.erase(v.labels.begin() + q);
      v.strides.erase(v.strides.begin() + q);
      v.labels.erase(v.labels.begin() + p);
      v.strides.erase(v.strides.begin() + p);
      v.labels.push_back(label);
      v.strides.push_back(stride);
    }
    for (std::size_t i = 0; i < v.labels.size();) {
      if (sliced_.test(v.labels[i])) {
        v.at.fixed.emplace_back(sliced_ordinal(v.labels[i]), v.strides[i]);
        v.labels.erase(v.labels.begin() + i);
        v.strides.erase(v.strides.begin() + i);
      } else {
        ++i;
      }
    }
    std::vector<int> kept, reduced;
    for (int label : v.labels) (keep.test(label) ? kept : reduced).push_back(label);
    if (reduced.empty()) return v;
    // The reduction inside one operand, as one product written transposed: a row of ones (x) (reduced x kept),
    // one row of kept columns (the grid's rows are limited, its columns are not; the argmax's layout, one per
    // kept index, is the same).
    std::optional<Value> scratch;
    const auto [at, how] = matrix(v, {}, kept, reduced, scratch);
    Value out = make(kept, is_root && kept == net_.output);
    const std::int64_t n = product_of(kept), k = product_of(reduced);
    ones_count = std::max(ones_count, k);
    ProductStep step;
    step.a.space = Space::kOnes;
    step.lda = k;
    step.b = at;
    step.tb = how.trans == Trans::kYes ? Trans::kNo : Trans::kYes;
    step.ldb = how.ld;
    step.c = out.at;
    step.m = 1;
    step.k = k;
    step.n = n;
    step.ldc = n;
    step.argmax = trace_node(leaf, kept, reduced);
    steps.push_back(std::move(step));
    if (scratch) release(*scratch);
    return out;
  }

  /// a (x) b keeping the labels of `keep`: one batched product (python/tropical/_einsum_exec.py's _Step).
  Value contract(int node, const Value& a, const Value& b, const Mask& keep, bool is_root) {
    const auto& la = a.labels;
    const auto& lb = b.labels;
    const auto in = [](const std::vector<int>& labels, int label) {
      return std::find(labels.begin(), labels.end(), label) != labels.end();
    };
    // The larger operand's order decides the shared labels' order: the smaller one is the one copied.
    const auto& big = product_of(la) >= product_of(lb) ? la : lb;
    std::vector<int> batch, contracted, left, right;
    for (int label : big) {
      if (in(la, label) && in(lb, label)) (keep.test(label) ? batch : contracted).push_back(label);
    }
    for (int label : la) {
      if (!in(lb, label)) left.push_back(label);
    }
    for (int label : lb) {
      if (!in(la, label)) right.push_back(label);
    }
    std::optional<Value> sa, sb;
    const auto [wa, va] = matrix(a, batch, left, contracted, sa);
    const auto [wb, vb] = matrix(b, batch, contracted, right, sb);
    // A tall product (many rows, fewer columns) runs as its transpose, B^T (x) A^T, written as (batch, right,
    // left): few rows take the skinny tiles, and a grid of row tiles past the device's limit is avoided (the
    // Python executor's rule, _einsum_arrays._tall).
    const std::int64_t rows = product_of(left), cols = product_of(right);
    const bool tall = rows > kTall && cols < rows;
    const std::vector<int> labels = tall ? concat({&batch, &right, &left}) : concat({&batch, &left, &right});
    Value out = make(labels, is_root && labels == net_.output);
    const auto flip = [](Trans t) { return t == Trans::kYes ? Trans::kNo : Trans::kYes; };
    ProductStep step;
    step.a = tall ? wb : wa;
    step.b = tall ? wa : wb;
    step.c = out.at;
    step.ta = tall ? flip(vb.trans) : va.trans;
    step.tb = tall ? flip(va.trans) : vb.trans;
    step.m = tall ? cols : rows;
    step.n = tall ? rows : cols;
    step.k = product_of(contracted);
    step.lda = tall ? vb.ld : va.ld;
    step.ldb = tall ? va.ld : vb.ld;
    step.ldc = step.n;
    step.batch = product_of(batch);
    step.stride_a = tall ? vb.stride : va.stride;
    step.stride_b = tall ? va.stride : vb.stride;
    step.stride_c = step.m * step.n;
    if (!contracted.empty()) step.argmax = trace_node(node, labels, contracted);
    steps.push_back(std::move(step));
    if (sa) release(*sa);
    if (sb) release(*sb);
    release(a);
    release(b);
    return out;
  }

  int sliced_ordinal(int label) const {
    int ordinal = 0;
    for (int bit : sliced_.bits()) {
      if (bit == label) return ordinal;
      ++ordinal;
    }
    return -1;
  }

  std::vector<Step> steps;
  std::int64_t ones_count = 0;
  std::int64_t argmax_count = 0;
  std::vector<std::optional<TraceNode>> traced;
  const Network& net_;
  const Mask& sliced_;
  Arena arena_;
};

}  // namespace

void coalesce(CopyStep& copy) {
  CopyStep out{copy.src, copy.dst, {}, {}, {}};
  for (std::size_t i = 0; i < copy.size.size(); ++i) {
    if (copy.size[i] == 1) continue;
    if (!out.size.empty() && out.src_stride.back() == copy.src_stride[i] * copy.size[i] &&
        out.dst_stride.back() == copy.dst_stride[i] * copy.size[i]) {
      out.size.back() *= copy.size[i];
      out.src_stride.back() = copy.src_stride[i];
      out.dst_stride.back() = copy.dst_stride[i];
      continue;
    }
    out.size.push_back(copy.size[i]);
    out.src_stride.push_back(copy.src_stride[i]);
    out.dst_stride.push_back(copy.dst_stride[i]);
  }
  copy = std::move(out);
}

Program compile(const Network& net, const Problem& problem, const Tree& tree, const Mask& sliced) {
  Program program;
  std::int64_t slices = 1;
  for (int label : sliced.bits()) {
    program.sliced.push_back(label);
    program.slice_extents.push_back(net.sizes[label]);
    slices *= net.sizes[label];
  }
  std::int64_t output_size = 1;
  for (int label : net.output) output_size *= net.sizes[label];
  std::vector<Mask> keeps = tree.outputs(problem);
  for (Mask& keep : keeps) keep.remove(sliced);
  // The ones: as many as the largest reduction inside one operand reads (one to merge slices), known up front
  // so that the arena starts after them.
  std::int64_t ones = slices > 1 ? 1 : 0;
  for (int leaf = 0; leaf < tree.count; ++leaf) {
    std::int64_t k = 1;
    for (int label : without(without(problem.leaves[leaf], keeps[leaf]), sliced).bits())
      k *= net.sizes[label];
    ones = std::max(ones, k);
  }
  std::int64_t base = (ones + kAlign - 1) / kAlign * kAlign;
  if (slices > 1) {
    program.part_offset = base;
    base += (output_size + kAlign - 1) / kAlign * kAlign;
    if (base > kMaxWorkspaceElements) too_large(base);  // the ones and the part alone
  }
  Compiler c(net, sliced, base);
  c.traced.resize(tree.root() + 1);
  const int root = tree.root();
  std::vector<std::optional<Value>> nodes(root + 1);
  const auto get = [&](int node) {
    if (!nodes[node]) nodes[node] = c.leaf(node, keeps[node], node == root);
    return *nodes[node];
  };
  for (std::size_t i = 0; i < tree.children.size(); ++i) {
    const auto [a, b] = tree.children[i];
    const Value va = get(a), vb = get(b);
    const int node = tree.count + static_cast<int>(i);
    nodes[node] = c.contract(node, va, vb, keeps[node], node == root);
  }
  const Value result = get(root);
  if (result.at.space != Space::kResult) {
    c.copy(result, net.output, true);
    c.release(result);
  }
  // The traceback's order: from the root down (an ancestor assigns every label its descendants' results
  // hold).
  std::vector<int> stack{root};
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (c.traced[node]) program.trace.push_back(*c.traced[node]);
    if (node >= tree.count) {
      stack.push_back(tree.children[node - tree.count].first);
      stack.push_back(tree.children[node - tree.count].second);
    }
  }
  program.argmax_count = c.argmax_count;
  program.steps = std::move(c.steps);
  program.ones_count = std::max(c.ones_count, slices > 1 ? std::int64_t{1} : 0);
  program.workspace_elements = c.arena_.high();
  return program;
}

}  // namespace tropical::einsum_detail
