"""Running a Plan on arrays: each operand first takes its diagonals (a label repeated in it) and reduces its
private labels with the semiring's addition; then every pairwise step classifies its labels (batch: in both and
kept; left/right: in one; contracted: in both and dropped), lays both sides out as one batch of matrices
(a view where the strides allow, row- or column-major, else one copy) and makes one batched product call.
mode "value" runs matmul, "argmax" matmul_argmax and keeps every step's argmax for the traceback, "counting"
counting_matmul on (values, counts) pairs."""

import math

from . import _fast
from ._einsum_arrays import MINIMIZING


class Tensor:
    """An operand or intermediate: values (and counts in counting mode) with one label per axis."""

    __slots__ = ("values", "counts", "labels")

    def __init__(self, values, counts, labels):
        self.values, self.counts, self.labels = values, counts, list(labels)


class Trace:
    """What the traceback needs: per leaf (kept labels, reduced labels, argmax over the flattened reduced labels
    at the kept labels' indices) and per internal node (its labels, contracted labels, the product's argmax)."""

    def __init__(self):
        self.leaves, self.steps = {}, {}


def _diagonals(x, counts, labels):
    """x (and counts) with one axis per label: a repeated label's axes replaced by their diagonal (last)."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        seen = {}
        for q, label in enumerate(labels):
            if label in seen:
                p = seen[label]
                break
            seen[label] = q
        x = x.diagonal(0, p, q)
        if counts is not None:
            counts = counts.diagonal(0, p, q)
        labels = [lab for i, lab in enumerate(labels) if i not in (p, q)] + [label]
    return x, counts, labels


def _fix(x, counts, labels, fixed):
    """x (and counts) at the fixed index of every sliced label it has; those axes removed."""
    index = tuple([fixed.get(label, slice(None)) for label in labels])
    if any([label in fixed for label in labels]):
        x = x[index]
        counts = counts[index] if counts is not None else None
        labels = [label for label in labels if label not in fixed]
    return x, counts, labels


def _without_nan(ad, x, semiring):
    """x with every NaN replaced by the semiring zero: a NaN never wins a reduction (reference.hpp)."""
    if semiring == "andor" or not ad.is_float(x):
        return x
    return ad.where(ad.isnan(x), ad.zero_like(x, semiring), x)


def _reduce(ad, x, axes, semiring):
    if semiring == "andor":
        return ad.any(x, axes)
    x = _without_nan(ad, x, semiring)
    return ad.amin(x, axes) if semiring in MINIMIZING else ad.amax(x, axes)


def prepare_leaf(ad, values, counts, term, fixed, keep, semiring, mode, sizes, trace, leaf):
    """The Tensor of one operand after its diagonals, the sliced labels' fixed indices and the reduction of
    the labels not in `keep` (recorded in trace for the argmax mode)."""
    x, c, labels = _diagonals(values, counts, term)
    x, c, labels = _fix(x, c, labels, fixed)
    reduced = [label for label in labels if label not in keep]
    if not reduced:
        return Tensor(x, c, labels)
    kept = [label for label in labels if label in keep]
    axes = tuple([labels.index(label) for label in reduced])
    if mode == "counting":
        v = _without_nan(ad, x, "maxplus")
        best = ad.amax(v, axes, keepdims=True)
        c = ad.sum(ad.where(v == best, c, ad.zero_like(c, "maxmul")), axes)
        return Tensor(ad.amax(v, axes), c, kept)
    if mode == "argmax" or (ad.differentiable and semiring != "andor"):
        perm = [labels.index(label) for label in kept] + list(axes)
        flat = ad.permute(x, perm).reshape(tuple([sizes[label] for label in kept]) + (-1,))
        if semiring == "andor":
            flat = flat != 0
        else:
            flat = _without_nan(ad, flat, semiring)
        arg = ad.argbest_last(flat, semiring in MINIMIZING)
        if mode == "argmax":
            trace.leaves[leaf] = (kept, reduced, arg)
        else:  # the gradient goes to the winner (ties: the smallest index), as through the products
            return Tensor(ad.gather_last(flat, arg), None, kept)
    return Tensor(_reduce(ad, x, axes, semiring), None, kept)


def _valid(ad, y):
    shape, strides = y.shape, ad.strides(y)
    if len(shape) == 3 and shape[0] > 1 and strides[0] < 0:
        return False
    rows, cols = shape[-2], shape[-1]
    return min(strides[-2:]) >= 0 and _fast.matrix(rows, cols, strides[-2], strides[-1]) is not None


class _Layout:
    """How one operand becomes a batch of matrices (batch x rows x cols): the permutation, the shapes of the
    row-major view and of the transposed one, and whether its axes are already in either order."""

    __slots__ = ("perm", "shape", "swapped", "in_order", "in_swapped_order")

    def __init__(self, labels, batch, rows, cols, sizes):
        nb, nr, nc = [math.prod([sizes[label] for label in group]) for group in (batch, rows, cols)]
        lead = (nb,) if batch else ()
        self.perm = [labels.index(label) for label in batch + rows + cols]
        self.shape, self.swapped = lead + (nr, nc), lead + (nc, nr)
        self.in_order = labels == batch + rows + cols
        self.in_swapped_order = labels == batch + cols + rows


def _arrange(ad, x, layout, how=None):
    """(matrix batch of x, how): how is "view" (a row-major view), "swap" (the transpose of a view:
    column-major) or "copy"; a given `how` is repeated (the counts of a values array)."""
    if how in (None, "swap") and layout.in_swapped_order:
        y = ad.swap_last(x.reshape(layout.swapped))
        if how == "swap" or _valid(ad, y):
            return y, "swap"
    y = (x if layout.in_order else ad.permute(x, layout.perm)).reshape(layout.shape)
    if how == "view" or (how is None and _valid(ad, y)):
        return y, "view"
    return ad.contiguous(ad.permute(x, layout.perm)).reshape(layout.shape), "copy"


class _Step:
    """One pairwise step's classification, made once per plan and operand label orders: the result's labels
    (batch + left + right) and shape, the contracted labels, and both operands' layouts."""

    __slots__ = ("labels", "shape", "contracted", "layout_a", "layout_b")

    def __init__(self, labels_a, labels_b, keep, sizes):
        in_a, in_b = set(labels_a), set(labels_b)
        # The larger operand's order decides the shared labels' order: the smaller one is the one copied.
        big = labels_a if math.prod([sizes[x] for x in labels_a]) >= math.prod([sizes[x] for x in labels_b]) else labels_b
        batch = [label for label in big if label in in_a and label in in_b and label in keep]
        self.contracted = [label for label in big if label in in_a and label in in_b and label not in keep]
        left = [label for label in labels_a if label not in in_b]
        right = [label for label in labels_b if label not in in_a]
        self.labels = batch + left + right
        self.shape = tuple([sizes[label] for label in self.labels])
        self.layout_a = _Layout(labels_a, batch, left, self.contracted, sizes)
        self.layout_b = _Layout(labels_b, batch, self.contracted, right, sizes)


def contract(ad, a, b, step, semiring, mode, trace, node):
    """The Tensor of one pairwise step a (x) b classified by `step`."""
    ma, how_a = _arrange(ad, a.values, step.layout_a)
    mb, how_b = _arrange(ad, b.values, step.layout_b)
    labels, shape = step.labels, step.shape
    if mode == "counting":
        ca, _ = _arrange(ad, a.counts, step.layout_a, how_a)
        cb, _ = _arrange(ad, b.counts, step.layout_b, how_b)
        v, c = ad.counting_matmul(ma, ca, mb, cb)
        return Tensor(v.reshape(shape), c.reshape(shape), labels)
    if mode == "argmax":
        v, arg = ad.matmul_argmax(ma, mb, semiring)
        trace.steps[node] = (labels, step.contracted, arg)
        return Tensor(v.reshape(shape), None, labels)
    return Tensor(ad.matmul(ma, mb, semiring).reshape(shape), None, labels)


def run(ad, plan, operands, counts, semiring, mode, fixed, trace):
    """The output Tensor (labels in the output's order, a contiguous array) of one slice (`fixed`: sliced label
    -> index) of the plan."""
    network, tree, keeps = plan.network, plan.tree, plan.keeps
    sizes = network.sizes
    nodes = {}
    for leaf, term in enumerate(network.inputs):
        c = counts[leaf] if counts is not None else None
        nodes[leaf] = prepare_leaf(ad, operands[leaf], c, term, fixed, keeps[leaf], semiring, mode, sizes, trace,
                                   leaf)
    n = tree.count
    steps = plan.steps
    for i, (a, b) in enumerate(tree.children):
        ta, tb = nodes.pop(a), nodes.pop(b)
        key = (n + i, tuple(ta.labels), tuple(tb.labels))
        step = None if ad.compiling else steps.get(key)  # torch.compile traces no memo of the plan's
        if step is None:
            step = _Step(ta.labels, tb.labels, keeps[n + i], sizes)
            if not ad.compiling:
                steps[key] = step
        nodes[n + i] = contract(ad, ta, tb, step, semiring, mode, trace, n + i)
    root = nodes[tree.root()]
    perm = [root.labels.index(label) for label in network.output]
    values = ad.contiguous(ad.permute(root.values, perm))
    c = ad.contiguous(ad.permute(root.counts, perm)) if root.counts is not None else None
    return Tensor(values, c, network.output)
