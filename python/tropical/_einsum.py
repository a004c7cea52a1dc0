"""tropical.einsum, einsum_argmax and counting_einsum: a tensor network contracted over a semiring, on the
operands' framework (NumPy on the CPU backend, torch or CuPy on their GPU), with its optimal assignment traced
back or its optimal values counted; under a memory limit, slice by slice, merged with the semiring's addition."""

import collections
import itertools
import sys

from . import _arrays, _einsum_arrays, _einsum_exec, _einsum_native, _einsum_parse, _einsum_path, _einsum_trace, _ops
from ._einsum_path import einsum_path  # noqa: F401  (re-exported by the package)
from ._einsum_treesa import TreeSA  # noqa: F401  (re-exported by the package)
from ._errors import InvalidArgument


_Plain = collections.namedtuple("_Plain", "obj shape dtype")


def _plain_torch(operands):
    """The operands as _Plain (the tensor, its shape, its dtype's name) where every one is a plain torch tensor of
    one supported dtype on one device, the common case, checked without describing each operand (a network has
    hundreds; describing one costs microseconds); None otherwise (then each is described and the errors worded)."""
    torch = sys.modules.get("torch")
    first = operands[0]
    if torch is None or type(first) is not torch.Tensor:
        return None
    tensor, dtype, device = torch.Tensor, first.dtype, first.get_device()
    for x in operands:
        if type(x) is not tensor or x.dtype is not dtype or x.get_device() != device:
            return None
    name = str(dtype)[6:]  # "torch.float32" -> "float32"
    if name not in _arrays.DTYPE_CODES or (device < 0 and first.device.type != "cpu"):
        return None
    return [_Plain(x, tuple(x.shape), name) for x in operands]


def _checked(operands, semiring, counting=False):
    """The operands described and checked (one framework, one device, one dtype the semiring takes)."""
    described = _plain_torch(operands)
    if described is None:
        described = [_arrays.describe(x, f"operand {i}") for i, x in enumerate(operands)]
        _ops._check_together([(f"operand {i}", d) for i, d in enumerate(described)])
    dtypes = {d.dtype for d in described}
    if len(dtypes) > 1:
        raise InvalidArgument(f"tropical: the operands have dtypes {sorted(dtypes)}; pass one dtype")
    if not counting:
        _ops._dtype_code(semiring, described[0].dtype)
    return described


def _setup(args, semiring, optimize, memory_limit):
    equation, operands, sublists, output = _einsum_parse.split_arguments(args)
    if not operands:
        raise InvalidArgument("tropical: einsum needs at least one operand")
    semiring = _semiring(semiring)
    described = _checked(operands, semiring)
    shapes = [tuple(d.shape) for d in described]
    operands = [d.obj for d in described]  # DLPack and CUDA-array-interface objects as their NumPy/CuPy views
    return operands, _einsum_path.cached_plan(equation, shapes, sublists, output, optimize, memory_limit), semiring


def _semiring(semiring):
    _ops.semiring_code(semiring)
    semiring = semiring.lower()
    if semiring == "counting":
        raise InvalidArgument("tropical: count optimal configurations with tropical.counting_einsum(equation, "
                              "*(values, counts) pairs)")
    return semiring


def _slices(plan):
    """Every slice as a dict sliced label -> index, in lexicographic order (an unsliced plan: one empty dict); a
    list, not a generator, so that torch.compile traces it."""
    labels = plan.sliced_labels()
    sizes = plan.network.sizes
    return [dict(zip(labels, index)) for index in itertools.product(*(range(sizes[label]) for label in labels))]


def contract(ad, plan, operands, semiring):
    """The values of a plan, slice by slice, merged with the semiring's addition."""
    result = None
    for fixed in _slices(plan):
        part = _einsum_exec.run(ad, plan, operands, None, semiring, "value", fixed, None).values
        result = part if result is None else _einsum_trace.add(ad, semiring, result, part)
    return result


def contract_argmax(ad, plan, operands, semiring):
    """(values, assignment) of a plan by the Python executor, slice by slice: each slice traced back, the slices
    merged with the semiring's addition and the assignment of the first slice that wins each element kept."""
    like = operands[0]
    output = plan.network.output
    result = assign = None
    for fixed in _slices(plan):
        trace = _einsum_exec.Trace()
        part = _einsum_exec.run(ad, plan, operands, None, semiring, "argmax", fixed, trace).values
        if not output:  # a scalar: the walk on Python integers
            found = _einsum_trace.scalar_traceback(ad, plan, trace, fixed)
            if result is None or bool(_einsum_trace.better(ad, semiring, part, result)):
                assign = found
            result = part if result is None else _einsum_trace.add(ad, semiring, result, part)
            continue
        found = _einsum_trace.traceback(ad, plan, trace, like, fixed)
        if result is None:
            result, assign = part, found
            continue
        win = _einsum_trace.better(ad, semiring, part, result)
        result = _einsum_trace.add(ad, semiring, result, part)
        assign = ad.where(win[None], found, assign)
    if not output:
        return result, {label: assign[label] for label in plan.labels}
    rows = [(label, i) for i, label in enumerate(plan.labels) if label not in output]
    return result, {label: ad.contiguous(assign[i]) for label, i in rows}


def einsum(*args, semiring="maxplus", optimize="greedy", memory_limit=None):
    """The contraction of einsum(equation, *operands) (or the interleaved form op0, sublist0, ..., out_sublist)
    over `semiring`: a labels' product of the operands' elements with the semiring's multiplication, summed
    with its addition over the labels not in the output. optimize: "greedy", "treesa" (or a TreeSA with its
    settings) or an opt_einsum-format path; memory_limit: the most elements an intermediate may have (labels are
    sliced until it holds). Returns an array of the operands' kind (0-d for a scalar output)."""
    operands, plan, semiring = _setup(args, semiring, optimize, memory_limit)
    if _einsum_native.usable(operands, plan, semiring):
        return _einsum_native.contract(plan, operands, semiring)
    return contract(_einsum_arrays.adapter(operands[0]), plan, operands, semiring)


def einsum_argmax(*args, semiring="maxplus", optimize="greedy", memory_limit=None):
    """(result, assignment): einsum's result and, for every label not in the output, the index that wins, an
    integer array of the output's shape (a Python int for a scalar output). Ties go to the smallest index of
    each step's contracted labels (and, when sliced, to the first slice); where an output element is the
    semiring zero nothing wins and the assignment is arbitrary. Traced back through every step's argmax."""
    operands, plan, semiring = _setup(args, semiring, optimize, memory_limit)
    if _einsum_native.usable(operands, plan, semiring):
        return _einsum_native.contract_argmax(plan, operands, semiring)
    return contract_argmax(_einsum_arrays.adapter(operands[0]), plan, operands, semiring)


def counting_einsum(*args, optimize="greedy", memory_limit=None):
    """(values, counts) of counting_einsum(equation, *pairs) with every operand a (values, counts) pair of
    float32 or float64 arrays of one shape (CountingTropical: max-plus values, and how many configurations
    reach them, counts multiplied along a configuration and summed over the optimal ones)."""
    equation, pairs, sublists, output = _einsum_parse.split_arguments(args)
    if not pairs:
        raise InvalidArgument("tropical: counting_einsum needs at least one (values, counts) pair")
    values, counts = [], []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgument(f"tropical: operand {i} of counting_einsum must be a (values, counts) pair")
        values.append(pair[0])
        counts.append(pair[1])
    described = _checked(values + counts, "counting", counting=True)
    if described[0].dtype not in ("float32", "float64"):
        raise InvalidArgument(f"tropical: counting works on float32 or float64 values and counts, not "
                              f"{described[0].dtype}")
    for i in range(len(values)):
        if tuple(described[i].shape) != tuple(described[len(values) + i].shape):
            raise InvalidArgument(f"tropical: operand {i}'s values have shape {tuple(described[i].shape)} but its "
                                  f"counts {tuple(described[len(values) + i].shape)}")
    count = len(values)
    values, counts = [d.obj for d in described[:count]], [d.obj for d in described[count:]]
    ad = _einsum_arrays.adapter(values[0])
    for i in range(len(values)):  # the counts must follow the values' layout through every view
        if ad.strides(values[i]) != ad.strides(counts[i]):
            values[i], counts[i] = ad.contiguous(values[i]), ad.contiguous(counts[i])
    shapes = [tuple(d.shape) for d in described[:len(values)]]
    plan = _einsum_path.cached_plan(equation, shapes, sublists, output, optimize, memory_limit)
    if _einsum_native.usable(values + counts, plan, "counting"):
        return _einsum_native.contract_counting(plan, values, counts)
    best = total = None
    for fixed in _slices(plan):
        part = _einsum_exec.run(ad, plan, values, counts, "maxplus", "counting", fixed, None)
        if best is None:
            best, total = part.values, part.counts
            continue
        zero = ad.zero_like(total, "maxmul")
        merged = _einsum_trace.add(ad, "maxplus", best, part.values)
        total = ad.where(best == merged, total, zero) + ad.where(part.values == merged, part.counts, zero)
        best = merged
    return best, total


def torch_einsum(*args, semiring="maxplus", optimize="greedy", memory_limit=None):
    """einsum on torch tensors through tropical.torch's differentiable products (tropical.torch.einsum): checked
    from the tensors' metadata only, so that torch.compile can trace it (pass a path as optimize there)."""
    torch = _einsum_arrays.Torch().torch
    equation, operands, sublists, output = _einsum_parse.split_arguments(args)
    if not operands:
        raise InvalidArgument("tropical: einsum needs at least one operand")
    semiring = _semiring(semiring)
    for i, x in enumerate(operands):
        if not isinstance(x, torch.Tensor):
            raise InvalidArgument(f"tropical: operand {i} is a {type(x).__name__}; tropical.torch.einsum takes "
                                  "torch tensors")
        if x.dtype != operands[0].dtype or x.device != operands[0].device:
            raise InvalidArgument(f"tropical: operand {i} is {x.dtype} on {x.device} but operand 0 is "
                                  f"{operands[0].dtype} on {operands[0].device}")
    names = {getattr(torch, name): name for name in _arrays.DTYPE_CODES}  # no str(dtype): torch.compile traces this
    if operands[0].dtype not in names:
        raise InvalidArgument(f"tropical: the operands are {operands[0].dtype}; supported: " + ", ".join(names.values()))
    _ops._dtype_code(semiring, names[operands[0].dtype])
    shapes = tuple(tuple(int(d) for d in x.shape) for x in operands)
    if getattr(torch, "compiler", None) is not None and torch.compiler.is_compiling():
        # Planning is plain Python on constants (equation, shapes, path): run it as such at trace time and keep
        # the plan as a constant of the graph, instead of tracing the planner.
        plan = COMPILE_PLANNER(equation, shapes, _frozen(sublists), _frozen(output), _frozen(optimize),
                               memory_limit)
    else:
        plan = _einsum_path.cached_plan(equation, shapes, sublists, output, optimize, memory_limit, timed=False)
    return contract(_einsum_arrays.Torch(differentiable=True), plan, operands, semiring)


def _frozen(x):
    """Lists (a path, sublists) as tuples, so that they are constants a compiler can hold."""
    return tuple(_frozen(y) for y in x) if isinstance(x, (list, tuple)) else x


def plan_of(equation, shapes, sublists, output, optimize, memory_limit):
    """cached_plan of constants (tuples), as torch.compile calls it at trace time (see COMPILE_PLANNER)."""
    return _einsum_path.cached_plan(equation, shapes, sublists, output, optimize, memory_limit, timed=False)


# plan_of marked by tropical.torch (at its import) as a function of constants whose result is a constant.
COMPILE_PLANNER = plan_of
