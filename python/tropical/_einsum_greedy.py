"""The greedy order (opt_einsum's "greedy"): repeatedly contract the pair of operands sharing a label whose
result removes the most elements (size of the result minus the sizes of the pair), then join what is left
(disconnected parts) smallest first. With a random generator, ties and near-ties are broken at random (the
starting trees of the annealer)."""

import heapq

from ._einsum_tree import Tree


def greedy(problem, rng=None, noise=0.0, alpha=1.0):
    """A Tree for `problem`. rng (random.Random) and noise (relative jitter of the cost, 0: none) randomize it;
    alpha weighs the sizes of the pair against the size of the result (1: opt_einsum's, 0: omeco's default)."""
    n = len(problem.leaves)
    if n == 1:
        return Tree(1, [])
    output = problem.output
    size = lambda mask: 2.0 ** problem.log2_size(mask)  # noqa: E731
    count = {}
    for mask in problem.leaves:
        m = mask
        while m:
            low = m & -m
            count[low] = count.get(low, 0) + 1
            m ^= low
    # multi2/multi3: the labels held by at least two/three remaining tensors; a pair keeps the labels that
    # someone else (or the output) still holds.
    multi2 = multi3 = 0
    for bit, c in count.items():
        if c >= 2:
            multi2 |= bit
        if c >= 3:
            multi3 |= bit
    holders = {}
    outs = {}
    # Each tensor keeps only the labels shared with another tensor or the output (a private label is reduced
    # inside its operand first).
    for i, mask in enumerate(problem.leaves):
        outs[i] = mask & (multi2 | output)
        m = outs[i]
        while m:
            low = m & -m
            holders.setdefault(low, set()).add(i)
            m ^= low
    for i, mask in enumerate(problem.leaves):
        private = mask & ~outs[i]
        while private:
            low = private & -private
            count[low] -= 1
            private ^= low
    sizes = {i: size(outs[i]) for i in outs}
    heap = []

    def result(a, b):
        oa, ob = outs[a], outs[b]
        return ((oa ^ ob) & (multi2 | output)) | ((oa & ob) & (multi3 | output))

    def push(a, b):
        out = result(a, b)
        cost = size(out) - alpha * (sizes[a] + sizes[b])
        if rng is not None:
            cost -= noise * abs(cost) * rng.random()
        heapq.heappush(heap, (cost, rng.random() if rng is not None else 0.0, min(a, b), max(a, b)))

    for bit, members in holders.items():
        members = sorted(members)
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                push(members[x], members[y])
    children = []
    alive = set(outs)
    seen_pairs = set()
    while len(alive) > 1:
        while heap:
            _, _, a, b = heapq.heappop(heap)
            if a in alive and b in alive and (a, b) not in seen_pairs:
                break
        else:
            a = b = None
        if a is None:  # no pair shares a label: join the two smallest
            a, b = sorted(alive, key=lambda t: (sizes[t], t))[:2]
        seen_pairs.add((a, b))
        new = n + len(children)
        out = result(a, b)
        children.append((a, b))
        for t in (a, b):
            alive.discard(t)
            m = outs[t]
            while m:
                low = m & -m
                holders[low].discard(t)
                count[low] -= 1
                m ^= low
        m = out
        while m:
            low = m & -m
            holders[low].add(new)
            count[low] += 1
            m ^= low
        for bit in _bits(outs[a] | outs[b]):
            c = count[bit]
            multi2 = multi2 | bit if c >= 2 else multi2 & ~bit
            multi3 = multi3 | bit if c >= 3 else multi3 & ~bit
        outs[new], sizes[new] = out, size(out)
        alive.add(new)
        neighbours = set()
        for bit in _bits(out):
            neighbours |= holders[bit]
        neighbours.discard(new)
        for d in neighbours:
            push(d, new)
    return Tree(n, children)


def _bits(mask):
    while mask:
        low = mask & -mask
        yield low
        mask ^= low
