"""The argmax traceback: from the output's indices down the contraction tree, each step's argmax is read at the
indices of the labels its result keeps (one gather per step) and unravelled into the indices of the labels it
contracted; at the leaves, the argmax of the reductions inside one operand the same way. Nothing is
re-contracted. Every label's index lives in one (labels, *output shape) integer array, so that a step costs
the same few array operations (select, multiply-sum, gather, divide, store) however many labels it has: on a
GPU, a handful of launches per step."""


def _reduction(tree, trace, node):
    """(labels, contracted, arg, children) of a node that reduced something (a step, or a leaf that reduced labels
    of its own), else (None, None, None, children): its children are walked either way."""
    if node >= tree.count:
        labels, contracted, arg = trace.steps[node]
        return (labels, contracted, arg, tree.children[node - tree.count]) if contracted else (
            None, None, None, tree.children[node - tree.count])
    if node in trace.leaves and trace.leaves[node][1]:
        return trace.leaves[node] + ((),)
    return None, None, None, ()


def _metadata(plan, trace):
    """(one flat list of integers, per visited node (label rows, strides, contracted rows, divisors, sizes) as
    (start, stop) ranges into it, the visiting order, arg of each) for every step and leaf reduction."""
    tree, sizes = plan.tree, plan.network.sizes
    row = {label: i for i, label in enumerate(plan.labels)}
    flat, visits = [], []

    def put(values):
        start = len(flat)
        flat.extend(values)
        return start, len(flat)

    def strides(labels):
        out, step = [], 1
        for label in reversed(labels):
            out.append(step)
            step *= sizes[label]
        return out[::-1]

    stack = [tree.root()]
    while stack:
        labels, contracted, arg, children = _reduction(tree, trace, stack.pop())
        stack.extend(children)
        if contracted is None:
            continue
        visits.append((put(row[label] for label in labels), put(strides(labels)),
                       put(row[label] for label in contracted), put(strides(contracted)),
                       put(sizes[label] for label in contracted), arg))
    return flat, visits


def traceback(ad, plan, trace, like, fixed):
    """An integer array (labels, *output shape): row i holds the index of label plan.labels[i] at every output
    element: the output's own indices, the sliced labels' fixed indices, and the winners of every reduction."""
    network = plan.network
    sizes = network.sizes
    output = network.output
    shape = tuple(sizes[label] for label in output)
    row = {label: i for i, label in enumerate(plan.labels)}
    assign = ad.zeros_indices((len(plan.labels),) + shape, like)
    for p, label in enumerate(output):
        axis = [1] * len(output)
        axis[p] = sizes[label]
        assign[row[label]] = ad.arange(sizes[label], like).reshape(tuple(axis))
    for label, index in fixed.items():
        assign[row[label]] = index
    flat, visits = _metadata(plan, trace)
    if visits:
        meta = ad.index_array(flat, like)
        column = (-1,) + (1,) * len(shape)
        for (rows, strides, crows, divisors, csizes, arg) in visits:
            view = lambda r: meta[r[0]:r[1]]  # noqa: E731
            if rows[1] > rows[0]:
                position = ad.sum(assign[view(rows)] * view(strides).reshape(column), (0,))
            else:
                position = ad.zeros_index(like)
            k = ad.clamp_min0(ad.take_flat(arg, position))  # -1 (nothing beat the zero): any index will do
            assign[view(crows)] = (k[None] // view(divisors).reshape(column)) % view(csizes).reshape(column)
    return assign


def scalar_traceback(ad, plan, trace, fixed):
    """label -> int for a scalar output: the same walk with Python integers, reading one element of each argmax.
    The tree is walked a level at a time: a node's element is known once its ancestors' winners are, so the
    elements of a whole level are read together (on a GPU one gather and one wait a level, not one a node)."""
    tree, sizes = plan.tree, plan.network.sizes
    values = dict(fixed)
    level = [tree.root()]
    while level:
        reads, below = [], []
        for node in level:
            labels, contracted, arg, children = _reduction(tree, trace, node)
            below.extend(children)
            if contracted is None:
                continue
            position = 0
            for label in labels:
                position = position * sizes[label] + values[label]
            reads.append((contracted, arg, position))
        for (contracted, _, _), k in zip(reads, ad.elements([(arg, position) for _, arg, position in reads])):
            k = max(k, 0)  # -1 (nothing beat the zero): any index will do
            for label in reversed(contracted):
                values[label] = k % sizes[label]
                k //= sizes[label]
        level = below
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
