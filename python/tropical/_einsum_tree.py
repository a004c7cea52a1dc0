"""Contraction trees over label bit masks: which labels each node keeps, its cost in the planner's model, and
conversion from and to opt_einsum's path format. Leaves are operands 0..n-1; internal node n + i is the i-th
pairwise contraction (SSA numbering, as opt_einsum's ssa paths)."""

import math

from ._errors import InvalidArgument


class Problem:
    """A network as the planners see it: a bit mask of label indices per operand, the output's mask, and the
    log2 extent of every label index (label index i is bit 1 << i)."""

    __slots__ = ("leaves", "output", "log2_sizes", "_uniform")

    def __init__(self, leaves, output, log2_sizes):
        self.leaves, self.output, self.log2_sizes = list(leaves), output, list(log2_sizes)
        distinct = set(self.log2_sizes)
        self._uniform = distinct.pop() if len(distinct) == 1 else None

    def log2_size(self, mask):
        """log2 of the element count of a tensor with the labels of `mask`."""
        if self._uniform is not None:
            return self._uniform * mask.bit_count()
        total, sizes = 0.0, self.log2_sizes
        while mask:
            low = mask & -mask
            total += sizes[low.bit_length() - 1]
            mask ^= low
        return total

    def without(self, sliced):
        """The same problem with the labels of mask `sliced` fixed to one index (their extents become 1)."""
        sizes = [0.0 if sliced >> i & 1 else s for i, s in enumerate(self.log2_sizes)]
        return Problem(self.leaves, self.output, sizes)


class Tree:
    """A binary contraction tree: children[i] = (left, right) of internal node n + i, in an order where every
    child precedes its parent (so the last node is the root)."""

    __slots__ = ("count", "children")

    def __init__(self, count, children):
        self.count, self.children = count, list(children)

    def root(self):
        return self.count + len(self.children) - 1

    def outputs(self, problem):
        """The kept-label mask of every node (leaves first): a node keeps the labels of its subtree that the
        output or some operand outside its subtree still needs."""
        n = self.count
        full = list(problem.leaves) + [0] * len(self.children)
        for i, (a, b) in enumerate(self.children):
            full[n + i] = full[a] | full[b]
        need = [0] * len(full)
        need[-1] = problem.output
        for i in range(len(self.children) - 1, -1, -1):
            a, b = self.children[i]
            need[a] = need[n + i] | full[b]
            need[b] = need[n + i] | full[a]
        if not self.children:
            need[0] = problem.output
        return [f & w for f, w in zip(full, need)]

    def cost(self, problem, outs=None):
        """(log2 time, log2 space, largest intermediate's log2 size): time counts every pairwise product's
        multiply-adds (the size of the union of its operands' labels) and every reduction inside one operand;
        space is the largest tensor made (intermediates and reduced operands)."""
        outs = outs or self.outputs(problem)
        n = self.count
        total, space = 0.0, 0.0
        for leaf in range(n):
            if outs[leaf] != problem.leaves[leaf]:
                total += 2.0 ** problem.log2_size(problem.leaves[leaf])
                space = max(space, problem.log2_size(outs[leaf]))
        largest = 0.0
        for i, (a, b) in enumerate(self.children):
            total += 2.0 ** problem.log2_size(outs[a] | outs[b])
            largest = max(largest, problem.log2_size(outs[n + i]))
        space = max(space, largest)
        return (math.log2(total) if total > 0 else 0.0), space, largest


def from_path(path, count):
    """The Tree of an opt_einsum-format path (a list of tuples of positions in the list of remaining operands;
    each step removes them and appends the result), checked to contract all `count` operands into one."""
    try:
        steps = [tuple(int(i) for i in step) for step in path]
    except (TypeError, ValueError):
        raise InvalidArgument(f"tropical: the path {path!r} is not a list of tuples of operand positions") from None
    remaining = list(range(count))
    children = []
    for number, step in enumerate(steps):
        if not step:
            raise InvalidArgument(f"tropical: step {number} of the path is empty")
        if len(set(step)) != len(step) or any(i < 0 or i >= len(remaining) for i in step):
            raise InvalidArgument(f"tropical: step {number} of the path, {step}, names positions outside the "
                                  f"{len(remaining)} remaining operands or one twice")
        nodes = [remaining[i] for i in step]
        for i in sorted(step, reverse=True):
            del remaining[i]
        node = nodes[0]
        for other in nodes[1:]:
            children.append((node, other))
            node = count + len(children) - 1
        remaining.append(node)
    if len(remaining) != 1:
        raise InvalidArgument(f"tropical: the path does not cover the operands: {len(remaining)} operands remain "
                              f"after its {len(steps)} step(s) (a path for {count} operands contracts them into one)")
    return Tree(count, children)


def to_path(tree):
    """The opt_einsum-format path of a tree (pairs of positions in the list of remaining operands)."""
    if not tree.children:
        return [(0,)]
    remaining = list(range(tree.count))
    path = []
    for i, (a, b) in enumerate(tree.children):
        pa, pb = remaining.index(a), remaining.index(b)
        path.append((min(pa, pb), max(pa, pb)))
        for p in sorted((pa, pb), reverse=True):
            del remaining[p]
        remaining.append(tree.count + i)
    return path


def problem_of(network):
    """(Problem, label list) of a parsed Network: label index i is labels[i]."""
    labels = network.labels()
    index = {label: i for i, label in enumerate(labels)}
    leaves = []
    for term in network.inputs:
        mask = 0
        for label in term:
            mask |= 1 << index[label]
        leaves.append(mask)
    output = 0
    for label in network.output:
        output |= 1 << index[label]
    return Problem(leaves, output, [math.log2(network.sizes[label]) for label in labels]), labels
