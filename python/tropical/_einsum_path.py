"""Planning an einsum: the contraction order (greedy, TreeSA, or a given opt_einsum-format path), the labels
to slice under a memory limit, and the order's cost; ``tropical.einsum_path``."""

import math
import time

from . import _einsum_parse, _einsum_slicing, _einsum_tree
from ._einsum_greedy import greedy
from ._einsum_treesa import TreeSA, treesa
from ._errors import InvalidArgument

OPTIMIZERS = ("greedy", "treesa")


class PathInfo:
    """What einsum_path found: log2_time (log2 of the multiply-adds, all slices together), log2_space (log2 of the
    largest tensor made), largest_intermediate (its element count), sliced (the labels sliced), slices (how
    many), optimizer, planning_seconds, and the equation's labels and sizes."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        sliced = f", sliced {list(self.sliced)} into {self.slices}" if self.sliced else ""
        return (f"PathInfo({self.optimizer}: log2 time {self.log2_time:.2f}, log2 space {self.log2_space:.2f}, "
                f"largest intermediate {self.largest_intermediate} elements{sliced}, planned in "
                f"{self.planning_seconds:.3f} s)")


class Plan:
    """A network, its contraction tree and sliced labels: what the executor runs. keeps[node]: the labels node
    keeps (sliced labels excluded: a slice fixes them); steps: the executor's memo; native: the library's plans of
    it, per (semiring, dtype) (_einsum_native)."""

    __slots__ = ("network", "problem", "labels", "tree", "sliced", "info", "keeps", "steps", "native",
                 "memory_limit")

    def __init__(self, network, problem, labels, tree, sliced, info):
        self.network, self.problem, self.labels, self.tree = network, problem, labels, tree
        self.sliced, self.info = sliced, info
        self.steps = {}  # the executor's classification of each step, made on first use
        self.native = {}
        self.memory_limit = None  # what plan() sliced under
        self.keeps = [frozenset(_bit_labels(mask & ~sliced, labels)) for mask in tree.outputs(problem)]

    def sliced_labels(self):
        return [label for i, label in enumerate(self.labels) if self.sliced >> i & 1]

    def __getstate__(self):
        """The plan without its library handles (ctypes, one process's): what tropical.distributed broadcasts."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "native"}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)
        self.native = {}


def _tree(problem, optimize, memory_limit, count):
    if isinstance(optimize, str):
        name = optimize.lower()
        if name == "greedy":
            return greedy(problem), "greedy"
        if name == "treesa":
            optimize = TreeSA()
        else:
            raise InvalidArgument(f"tropical: optimize={optimize!r}: one of {', '.join(OPTIMIZERS)}, a TreeSA, or a "
                                  "path (a list of tuples of operand positions, opt_einsum's format)")
    if isinstance(optimize, TreeSA):
        # No space penalty unless the settings ask for one: on graph problems it costs time (MIS n = 200: 2^34
        # with omeco's 2^20 target, 2^31.3 without, at 2^26 and 2^27 elements); memory_limit is met by slicing,
        # and then the trial fastest once sliced wins.
        if memory_limit is None:
            return treesa(problem, optimize, sc_target=math.inf), "treesa"

        def sliced_time(tree):
            try:
                sliced = _einsum_slicing.choose(problem, tree, memory_limit)
            except InvalidArgument:  # this tree cannot be sliced to fit; plan() says so if none can
                return (math.inf,)
            return (tree.cost(problem.without(sliced))[0] + problem.log2_size(sliced),)
        return treesa(problem, optimize, sc_target=math.inf, key=sliced_time), "treesa"
    if optimize is None or isinstance(optimize, bool):
        raise InvalidArgument(f"tropical: optimize={optimize!r}: one of {', '.join(OPTIMIZERS)}, or a path")
    path = list(optimize)
    if path and isinstance(path[0], str) and path[0] == "einsum_path":  # numpy.einsum_path's own format
        path = path[1:]
    return _einsum_tree.from_path(path, count), "path"


def plan(network, optimize="greedy", memory_limit=None, timed=True):
    """The Plan of a parsed network (timed: measure planning_seconds; torch.compile traces without it)."""
    start = time.perf_counter() if timed else 0.0
    problem, labels = _einsum_tree.problem_of(network)
    tree, name = _tree(problem, optimize, memory_limit, len(network.inputs))
    if memory_limit is not None:
        out_size = math.prod(network.sizes[label] for label in network.output)
        if out_size > memory_limit:
            raise InvalidArgument(f"tropical: memory_limit {memory_limit} is smaller than the output "
                                  f"({out_size} elements)")
    sliced = _einsum_slicing.choose(problem, tree, memory_limit)
    sliced_problem = problem.without(sliced)
    log2_time, log2_space, largest = tree.cost(sliced_problem)
    slices = _einsum_slicing.slice_count(problem, sliced)
    info = PathInfo(optimizer=name, log2_time=log2_time + math.log2(slices), log2_space=log2_space,
                    largest_intermediate=round(2.0 ** largest) if tree.children else 0,
                    sliced=tuple(label for i, label in enumerate(labels) if sliced >> i & 1), slices=slices,
                    planning_seconds=time.perf_counter() - start if timed else 0.0, sizes=dict(network.sizes),
                    inputs=list(network.inputs), output=network.output)
    made = Plan(network, problem, labels, tree, sliced, info)
    made.memory_limit = memory_limit
    return made


def _bit_labels(mask, labels):
    found = []
    while mask:
        low = mask & -mask
        found.append(labels[low.bit_length() - 1])
        mask ^= low
    return found


_CACHE = {}
_CACHE_SIZE = 64


def cached_plan(equation, shapes, sublists, output, optimize="greedy", memory_limit=None, timed=True):
    """plan() of the parsed network, remembered for the same equation, shapes, optimize and memory_limit (a
    TreeSA plan is deterministic and costs seconds; an executor called in a loop plans once)."""
    try:
        opt = optimize if isinstance(optimize, (str, TreeSA)) else tuple(
            step if isinstance(step, str) else tuple(int(i) for i in step) for step in optimize)
        key = (equation, tuple(tuple(s) for s in shapes),
               None if sublists is None else tuple(tuple(s) for s in sublists),
               None if output is None else tuple(output), opt, memory_limit)
        hash(key)
    except TypeError:
        key = None
    found = _CACHE.get(key) if key is not None else None
    if found is not None:
        return found
    p = plan(_einsum_parse.parse(equation, shapes, sublists, output), optimize, memory_limit, timed)
    if key is not None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = p
    return p


def _shape_of(x, position):
    if hasattr(x, "shape"):
        return tuple(int(d) for d in x.shape)
    try:
        return tuple(int(d) for d in x)
    except (TypeError, ValueError):
        raise InvalidArgument(f"tropical: operand {position} is neither an array nor a shape") from None


def einsum_path(*args, optimize="greedy", memory_limit=None):
    """(path, info) for einsum_path(equation, *operands_or_shapes) or the interleaved form: path in opt_einsum's
    format (pass it back as optimize=), info a PathInfo with the order's log2 time and space, its largest
    intermediate and the sliced labels under memory_limit (elements)."""
    equation, operands, sublists, output = _einsum_parse.split_arguments(args)
    shapes = [_shape_of(x, i) for i, x in enumerate(operands)]
    network = _einsum_parse.parse(equation, shapes, sublists, output)
    p = plan(network, optimize, memory_limit)
    path = _einsum_tree.to_path(p.tree)
    p.info.path = path
    return path, p.info
