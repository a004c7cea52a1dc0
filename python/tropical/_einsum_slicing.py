"""Slicing: fix labels to one index at a time so that every intermediate of a contraction tree fits in a
memory limit; the slices are contracted one after another and merged with the semiring's addition. Only labels
reduced away are sliced (an output label would split the output instead of merging it)."""

import math

from ._errors import InvalidArgument


def choose(problem, tree, memory_limit):
    """The mask of labels to slice so that every tensor the tree makes has at most memory_limit elements:
    repeatedly the label held by the most oversized tensors (ties: the largest of them, then the label that
    costs the least time)."""
    if memory_limit is None:
        return 0
    if memory_limit < 1:
        raise InvalidArgument(f"tropical: memory_limit is {memory_limit}; it counts elements and must be at least 1")
    limit = math.log2(memory_limit)
    sliced = 0
    n = tree.count
    while True:
        current = problem.without(sliced)
        outs = tree.outputs(current)
        made = [outs[leaf] for leaf in range(n) if outs[leaf] != problem.leaves[leaf]] + outs[n:]
        over = [mask for mask in made if current.log2_size(mask) > limit + 1e-9]
        if not over:
            return sliced
        scores = {}
        for mask in over:
            weight = current.log2_size(mask)
            m = mask & ~problem.output & ~sliced
            while m:
                low = m & -m
                count, largest = scores.get(low, (0, 0.0))
                scores[low] = (count + 1, max(largest, weight))
                m ^= low
        if not scores:
            worst = max(current.log2_size(mask) for mask in over)
            raise InvalidArgument(f"tropical: memory_limit {memory_limit} is too small: a tensor of 2^{worst:.1f} "
                                  "elements holds only output labels, which are not sliced")
        sliced |= max(scores, key=lambda bit: (scores[bit], -bit.bit_length()))


def slice_count(problem, sliced):
    """How many slices the labels of mask `sliced` make (the product of their extents)."""
    return round(2.0 ** (problem.log2_size(sliced))) if sliced else 1
