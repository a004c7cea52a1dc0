"""The argmax traceback: from the output's indices down the contraction tree, each step's argmax is read at the
indices of the labels its result keeps (one gather per step) and unravelled into the indices of the labels it
contracted; at the leaves, the argmax of the reductions inside one operand the same way. Nothing is
re-contracted."""


def traceback(ad, plan, trace, like, fixed):
    """label -> integer index array, broadcastable to the output's shape, for every label of the network: the
    output's own indices, the sliced labels' fixed indices, and the winners of every reduction."""
    network, tree = plan.network, plan.tree
    sizes = network.sizes
    output = network.output
    values = {}
    for p, label in enumerate(output):
        shape = [1] * len(output)
        shape[p] = sizes[label]
        values[label] = ad.arange(sizes[label], like).reshape(tuple(shape))
    for label, index in fixed.items():
        values[label] = ad.full_index(index, like)

    def gather(arg, labels):
        flat = ad.zeros_index(like)
        for label in labels:
            flat = flat * sizes[label] + values[label]
        return ad.clamp_min0(ad.take_flat(arg, flat))  # -1 (nothing beat the zero): any index will do

    def unravel(k, labels):
        for label in reversed(labels):
            values[label] = k % sizes[label]
            k = k // sizes[label]

    stack = [tree.root()]
    while stack:
        node = stack.pop()
        if node >= tree.count:
            labels, contracted, arg = trace.steps[node]
            if contracted:
                unravel(gather(arg, labels), contracted)
            stack.extend(tree.children[node - tree.count])
        elif node in trace.leaves:
            kept, reduced, arg = trace.leaves[node]
            unravel(gather(arg, kept), reduced)
    return values


def better(ad, semiring, new, old):
    """Where the semiring's addition strictly prefers new to old (a NaN never wins; ties keep old)."""
    if semiring == "andor":
        return (new != 0) & (old == 0)
    if semiring in ("minplus", "minmax"):
        return new < old
    return new > old


def add(ad, semiring, x, y):
    """x (+) y elementwise."""
    if semiring == "andor":
        return ad.logical_or(x, y, x)
    if semiring in ("minplus", "minmax"):
        return ad.fmin(x, y) if ad.is_float(x) else ad.where(y < x, y, x)
    return ad.fmax(x, y) if ad.is_float(x) else ad.where(y > x, y, x)
