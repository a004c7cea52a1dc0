"""TreeSA: simulated annealing on the contraction tree (Kalachev, Panteleev, Yung, arXiv:2108.05665, as
OMEinsumContractionOrders.jl implements it), started from randomized greedy trees.

Why this optimizer: on graph problems greedy orders are far from the best, and among the published methods
TreeSA finds the best orders for the networks this library is for (the reference's benchmarks) while being a
few hundred lines: a move rotates one node's subtree, ((a, b), c) -> ((a, c), b) or ((c, b), a), and changes
only two nodes' costs, so each proposal costs O(1) mask operations. The energy is the log2 time of the two
changed nodes (plus, if asked, a penalty on space above sc_target), accepted by the Metropolis rule as the
inverse temperature rises. Operands whose labels another operand holds are multiplied into it first, so the
anneal works on fewer leaves. In pure Python a proposal costs ~1.5 us: the defaults (4 trials x 3,000 sweeps)
are ~12x fewer sweeps than omeco's (10 trials x 15,000), which is why `processes` exists."""

import math
import random

from ._einsum_greedy import greedy
from ._einsum_tree import Problem, Tree


class _Annealer:
    """A tree as child arrays, mutated in place by accepted rotations; size[node] (log2 of its result) and
    cost[node] (log2 of its product's multiply-adds) are kept current, so a proposal computes three sizes."""

    def __init__(self, problem, tree):
        self.problem = problem
        n = tree.count
        self.n = n
        total = n + len(tree.children)
        self.left, self.right = [-1] * total, [-1] * total
        for i, (a, b) in enumerate(tree.children):
            self.left[n + i], self.right[n + i] = a, b
        self.out = tree.outputs(problem)
        self.root = tree.root()
        self.log2 = problem.log2_size
        self.size = [self.log2(mask) for mask in self.out]
        self.cost = [0.0] * total
        for node in range(n, total):
            self.cost[node] = self.log2(self.out[self.left[node]] | self.out[self.right[node]])

    def sweep(self, beta, rng, sc_target, sc_weight):
        """One pre-order pass over the internal nodes, proposing one random rotation at each."""
        left, right, out, log2, size, cost, n = self.left, self.right, self.out, self.log2, self.size, self.cost, self.n
        random, exp, lg = rng.random, math.exp, math.log2
        stack = [self.root]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            a, b = left[node], right[node]
            if a < 0:
                continue
            choices = (a >= n) * 2 + (b >= n) * 2
            if choices:
                pick = int(random() * choices)
                if a >= n and (b < n or pick < 2):
                    inner, sibling, inner_is_left = a, b, True
                else:
                    inner, sibling, inner_is_left = b, a, False
                c1, c2 = left[inner], right[inner]
                keep, move = (c1, c2) if pick % 2 == 0 else (c2, c1)
                # ((keep, move), sibling) -> ((keep, sibling), move): inner now joins keep and sibling.
                o_keep, o_move, o_sib = out[keep], out[move], out[sibling]
                new_inner = (o_keep | o_sib) & (o_move | out[node])
                old1, old2 = cost[inner], cost[node]
                new1, new2, s_new = log2(o_keep | o_sib), log2(new_inner | o_move), log2(new_inner)
                hi, lo = (old1, old2) if old1 > old2 else (old2, old1)
                old_tc = hi + lg(1.0 + 2.0 ** (lo - hi))
                hi, lo = (new1, new2) if new1 > new2 else (new2, new1)
                energy = hi + lg(1.0 + 2.0 ** (lo - hi)) - old_tc
                # Space: the larger of the two changed tensors (the node's own result does not change); above
                # the target, growing it costs and shrinking it pays.
                s_node = size[node]
                old_sc = s_node if s_node > size[inner] else size[inner]
                new_sc = s_node if s_node > s_new else s_new
                if old_sc > sc_target or new_sc > sc_target:
                    energy += sc_weight * (new_sc - old_sc)
                if energy <= 0 or random() < exp(-beta * energy):
                    left[inner], right[inner], out[inner] = keep, sibling, new_inner
                    size[inner], cost[inner], cost[node] = s_new, new1, new2
                    if inner_is_left:
                        right[node] = move
                    else:
                        left[node] = move
                    a, b = left[node], right[node]
            push(a)
            push(b)

    def tree(self):
        """The current tree, renumbered so that children precede parents."""
        children, ids = [], {}
        stack = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            if node < self.n:
                continue
            if expanded:
                a, b = self.left[node], self.right[node]
                children.append((ids.get(a, a), ids.get(b, b)))
                ids[node] = self.n + len(children) - 1
            else:
                stack.append((node, True))
                stack.append((self.right[node], False))
                stack.append((self.left[node], False))
        return Tree(self.n, children)


class TreeSA:
    """The annealer's settings, for optimize=: trials independent anneals (the first from the greedy tree) over
    `temperatures` inverse temperatures from betas[0] to betas[1], `sweeps` passes over the tree at each; the
    energy penalizes space above sc_target (log2 elements; None: no penalty, as einsum's memory_limit is met by
    slicing) with weight sc_weight; seed makes the result deterministic (whatever `processes`: trials run
    in that many forked processes, Linux only). The defaults plan a random 3-regular graph of 200 vertices in
    about 10 s of one core (more trials beat longer anneals there)."""

    def __init__(self, trials=4, temperatures=300, sweeps=10, betas=(0.01, 15.0), sc_target=None, sc_weight=1.0,
                 seed=0, processes=1):
        self.trials, self.temperatures, self.sweeps = int(trials), int(temperatures), int(sweeps)
        self.betas, self.sc_target, self.sc_weight, self.seed = tuple(betas), sc_target, float(sc_weight), int(seed)
        self.processes = int(processes)

    def _key(self):
        return (self.trials, self.temperatures, self.sweeps, self.betas, self.sc_target, self.sc_weight, self.seed,
                self.processes)

    def __eq__(self, other):
        return isinstance(other, TreeSA) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return ("TreeSA(trials={}, temperatures={}, sweeps={}, betas={}, sc_target={}, sc_weight={}, seed={}, "
                "processes={})".format(*self._key()))


def _anneal(problem, settings, sc_target, trial, start):
    """One trial's annealed tree (its own generator, so that trials can run in any order or process)."""
    rng = random.Random(settings.seed * 1000003 + trial)
    tree = start if trial == 0 else greedy(problem, rng, noise=0.5)
    low, high = settings.betas
    count = max(settings.temperatures, 2)
    annealer = _Annealer(problem, tree)
    for i in range(count):
        beta = low + (high - low) * i / (count - 1)
        for _ in range(settings.sweeps):
            annealer.sweep(beta, rng, sc_target, settings.sc_weight)
    return [tree, annealer.tree()]


def _absorbed(problem):
    """(hosts, groups): an operand whose labels are a subset of another's is first multiplied into it (as
    OMEinsum's MergeVectors does), so the annealer works on fewer, larger leaves: hosts are the operands left,
    groups[host] the operands absorbed into it, in order."""
    leaves = problem.leaves
    order = sorted(range(len(leaves)), key=lambda i: (leaves[i].bit_count(), i))
    host_of = {}
    groups = {i: [] for i in range(len(leaves))}
    for position, i in enumerate(order):
        for j in order[position + 1:]:  # a host at least as large, not yet absorbed
            if j not in host_of and leaves[i] & ~leaves[j] == 0:
                host_of[i] = j
                groups[j].extend([i] + groups.pop(i))
                break
    hosts = [i for i in range(len(leaves)) if i not in host_of]
    return hosts, {h: groups[h] for h in hosts}


def _expanded(reduced_tree, hosts, groups, count):
    """The Tree over all operands of a tree over the hosts: each host's absorptions first."""
    children, node_of = [], {}
    for position, host in enumerate(hosts):
        node = host
        for other in groups[host]:
            children.append((node, other))
            node = count + len(children) - 1
        node_of[position] = node
    for i, (a, b) in enumerate(reduced_tree.children):
        children.append((node_of[a], node_of[b]))
        node_of[len(hosts) + i] = count + len(children) - 1
    return Tree(count, children)


def _candidates(problem, settings, sc_target):
    """Every trial's start and annealed tree, over all of problem's operands."""
    hosts, groups = _absorbed(problem)
    if len(hosts) < len(problem.leaves) and len(hosts) >= 3:
        reduced = Problem([_union(problem.leaves, [h] + groups[h]) for h in hosts], problem.output,
                          problem.log2_sizes)
        return [_expanded(tree, hosts, groups, len(problem.leaves)) for tree in _candidates(reduced, settings,
                                                                                               sc_target)]
    start = greedy(problem)
    if len(problem.leaves) < 3:
        return [start]
    trials = range(settings.trials)
    if settings.processes > 1 and settings.trials > 1:
        # fork: the children run pure Python (no device, no framework), and need no importable __main__.
        import concurrent.futures
        import multiprocessing
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(min(settings.processes, settings.trials), context) as pool:
            found = list(pool.map(_anneal, *zip(*[(problem, settings, sc_target, t, start) for t in trials])))
    else:
        found = [_anneal(problem, settings, sc_target, t, start) for t in trials]
    return [tree for pair in found for tree in pair]


def treesa(problem, settings=None, sc_target=math.inf, key=None):
    """The best Tree of the settings' anneals (a TreeSA; None: the defaults): the least space above the target,
    then the least time, or the least key(tree) if given (the planner's cost after slicing); sc_target applies
    where the settings leave it None."""
    settings = settings or TreeSA()
    if settings.sc_target is not None:
        sc_target = settings.sc_target
    if key is None:
        def key(tree):
            tc, sc, _ = tree.cost(problem)
            return (max(sc - sc_target, 0.0), tc)
    return min(_candidates(problem, settings, sc_target), key=key)


def _union(leaves, members):
    mask = 0
    for i in members:
        mask |= leaves[i]
    return mask
