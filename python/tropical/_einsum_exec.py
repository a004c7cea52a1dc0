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
    index = tuple(fixed.get(label, slice(None)) for label in labels)
    if any(label in fixed for label in labels):
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
    axes = tuple(labels.index(label) for label in reduced)
    if mode == "counting":
        v = _without_nan(ad, x, "maxplus")
        best = ad.amax(v, axes, keepdims=True)
        c = ad.sum(ad.where(v == best, c, ad.zero_like(c, "maxmul")), axes)
        return Tensor(ad.amax(v, axes), c, kept)
    if mode == "argmax" or (ad.differentiable and semiring != "andor"):
        perm = [labels.index(label) for label in kept] + list(axes)
        flat = ad.permute(x, perm).reshape(tuple(sizes[label] for label in kept) + (-1,))
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


def _arrange(ad, x, labels, batch, rows, cols, sizes, how=None):
    """(matrix batch of x with axes batch x rows x cols, how): how is "view" (a row-major view), "swap" (the
    transpose of a view: column-major) or "copy"; a given `how` is repeated (the counts of a values array)."""
    nb, nr, nc = (math.prod(sizes[label] for label in group) for group in (batch, rows, cols))
    lead = (nb,) if batch else ()
    if how in (None, "swap") and labels == batch + cols + rows:
        y = ad.swap_last(x.reshape(lead + (nc, nr)))
        if how == "swap" or _valid(ad, y):
            return y, "swap"
    perm = [labels.index(label) for label in batch + rows + cols]
    y = ad.permute(x, perm).reshape(lead + (nr, nc))
    if how == "view" or (how is None and _valid(ad, y)):
        return y, "view"
    return ad.contiguous(ad.permute(x, perm)).reshape(lead + (nr, nc)), "copy"


def contract(ad, a, b, keep, sizes, semiring, mode, trace, node):
    """The Tensor of one pairwise step a (x) b keeping the labels in `keep`: labels batch + left + right."""
    in_a, in_b = set(a.labels), set(b.labels)
    big = a if ad.numel(a.values) >= ad.numel(b.values) else b
    batch = [label for label in big.labels if label in in_a and label in in_b and label in keep]
    contracted = [label for label in big.labels if label in in_a and label in in_b and label not in keep]
    left = [label for label in a.labels if label not in in_b]
    right = [label for label in b.labels if label not in in_a]
    ma, how_a = _arrange(ad, a.values, a.labels, batch, left, contracted, sizes)
    mb, how_b = _arrange(ad, b.values, b.labels, batch, contracted, right, sizes)
    labels = batch + left + right
    shape = tuple(sizes[label] for label in labels)
    if mode == "counting":
        ca, _ = _arrange(ad, a.counts, a.labels, batch, left, contracted, sizes, how_a)
        cb, _ = _arrange(ad, b.counts, b.labels, batch, contracted, right, sizes, how_b)
        v, c = ad.counting_matmul(ma, ca, mb, cb)
        return Tensor(v.reshape(shape), c.reshape(shape), labels)
    if mode == "argmax":
        v, arg = ad.matmul_argmax(ma, mb, semiring)
        trace.steps[node] = (labels, contracted, arg)
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
    for i, (a, b) in enumerate(tree.children):
        nodes[n + i] = contract(ad, nodes.pop(a), nodes.pop(b), keeps[n + i], sizes, semiring, mode, trace, n + i)
    root = nodes[tree.root()]
    perm = [root.labels.index(label) for label in network.output]
    values = ad.contiguous(ad.permute(root.values, perm))
    c = ad.contiguous(ad.permute(root.counts, perm)) if root.counts is not None else None
    return Tensor(values, c, network.output)
