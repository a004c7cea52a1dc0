"""tropical.distributed: one sliced tensor-network contraction spread over the ranks of a torch.distributed
process group. Every rank calls the same function with the same arguments; rank 0 plans and broadcasts the
plan, so that every rank has the same slices; slice s goes to rank s mod world_size (the slices of one plan
cost the same, so round robin balances them, each rank taking its slices in index order); each rank contracts
its slices and merges them with the semiring's addition (values: the library's plan, tropical_einsum_plan_run_part,
on the rank's device or the CPU backend; argmax, counting and bool operands: the einsum executor); then one
collective:
all_reduce MAX or MIN for values, all_gather for results that carry more than a value (argmax, counting),
merged with the library's tie rule (the smallest slice index wins), so that the result does not depend on the
number of ranks. Every rank returns the whole result.

Operands: NumPy arrays or CPU torch tensors (contracted on the CPU backend as NumPy views; collectives over the
gloo backend; torch >= 1.13), or CUDA tensors (torch >= 2.4, one GPU a rank, NCCL). Needs only torch and
torch.distributed, not tropical.torch."""

import numpy as np

from . import (_einsum, _einsum_arrays, _einsum_exec, _einsum_native, _einsum_parse, _einsum_path,
               _einsum_trace)
from ._einsum_arrays import MINIMIZING
from ._errors import InvalidArgument


def _torch():
    import torch
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise InvalidArgument("tropical: tropical.distributed needs an initialized torch.distributed process group "
                              "(torch.distributed.init_process_group)")
    return torch, dist


class _Operands:
    """The operands as the executor takes them (CPU tensors as their NumPy views) and how to hand results
    back in the caller's framework."""

    def __init__(self, operands):
        self.torch_cpu = False
        converted = []
        for x in operands:
            if type(x).__module__.startswith("torch") and x.device.type == "cpu":
                self.torch_cpu = True
                x = x.detach().numpy()
            converted.append(x)
        self.arrays = converted

    def back(self, x):
        """x (an executor result) in the caller's framework."""
        if self.torch_cpu and isinstance(x, (np.ndarray, np.generic)):
            import torch
            return torch.from_numpy(np.array(x, order="C"))  # ascontiguousarray would make 0-d arrays 1-d
        return x


def _source(dist, group):
    """The global rank of the group's rank 0 (broadcast takes global ranks)."""
    if group is None or group is dist.group.WORLD:
        return 0
    find = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
    return find(group, 0)


def _shared_plan(dist, group, equation, shapes, sublists, output, optimize, memory_limit):
    """Rank 0's plan (or the error it raised), on every rank."""
    box = [None]
    if dist.get_rank(group) == 0:
        try:
            box[0] = _einsum_path.cached_plan(equation, shapes, sublists, output, optimize, memory_limit)
        except Exception as error:  # every rank raises it, instead of the others waiting for a plan forever
            box[0] = error
    dist.broadcast_object_list(box, src=_source(dist, group), group=group)
    if isinstance(box[0], Exception):
        raise box[0]
    return box[0]


def _mine(dist, group, plan):
    """[(slice index, fixed)] of this rank: slice s goes to rank s mod world size."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    return [(s, fixed) for s, fixed in enumerate(_einsum._slices(plan)) if s % world == rank]


def _prepare(args, semiring, counting=False):
    """(equation, operands (or values, counts), sublists, output, semiring, _Operands) of the call's arguments,
    checked as einsum checks them."""
    equation, operands, sublists, output = _einsum_parse.split_arguments(args)
    if not operands:
        raise InvalidArgument("tropical: a contraction needs at least one operand")
    if counting:
        return equation, operands, sublists, output, "maxplus", None
    semiring = _einsum._semiring(semiring)
    held = _Operands(operands)
    described = _einsum._checked(held.arrays, semiring)
    held.arrays = [d.obj for d in described]
    return equation, held.arrays, sublists, output, semiring, held


def _zero(ad, like, plan, semiring):
    """The semiring zero in the output's shape: what a rank without slices contributes."""
    shape = tuple(plan.network.sizes[label] for label in plan.network.output)
    zero = ad.zero_like(like, semiring)
    if isinstance(zero, np.ndarray):
        return np.full(shape, zero, dtype=zero.dtype)
    return zero.expand(shape).contiguous()


def _as_tensor(torch, x):
    if isinstance(x, (np.ndarray, np.generic)):  # a sliced scalar comes out of NumPy's fmax as a NumPy scalar
        return torch.from_numpy(np.array(x, order="C"))  # ascontiguousarray would make 0-d arrays 1-d
    return x.contiguous()


def _like_one_process(ad, semiring, x, slices):
    """x as one process returns it: merged slices come out of the semiring's addition (idempotent, so x (+) x
    has x's values), which gives NumPy scalars for scalar outputs and 0/1 for AndOr."""
    return _einsum_trace.add(ad, semiring, x, x) if slices > 1 else x


def _from_tensor(like, t):
    return t.numpy() if isinstance(like, (np.ndarray, np.generic)) else t


def _executor_part(ad, dist, group, plan, operands, semiring):
    """This rank's slices through the Python executor (bool operands, and what the library's plans do not take),
    merged; the semiring zero where it holds none."""
    result = None
    for _, fixed in _mine(dist, group, plan):
        part = _einsum_exec.run(ad, plan, operands, None, semiring, "value", fixed, None).values
        result = part if result is None else _einsum_trace.add(ad, semiring, result, part)
    if result is None:
        return _zero(ad, operands[0], plan, semiring)
    if semiring == "andor" and plan.info.slices > 1:
        # One process ORs every slice into 0/1 values; a rank holding a single slice has its raw values.
        return _einsum_trace.add(ad, semiring, result, _zero(ad, operands[0], plan, semiring))
    return result


def contract(*args, semiring="maxplus", optimize="greedy", memory_limit=None, group=None):
    """tropical.einsum(*args, ...) computed by every rank of `group` (default: the world) together; every rank
    returns the whole result, the same bits as one process's tropical.einsum."""
    torch, dist = _torch()
    equation, operands, sublists, output, semiring, held = _prepare(args, semiring)
    shapes = [tuple(int(d) for d in x.shape) for x in operands]
    plan = _shared_plan(dist, group, equation, shapes, sublists, output, optimize, memory_limit)
    ad = _einsum_arrays.adapter(operands[0])
    if _einsum_native.usable(operands, plan, semiring):  # the library's plan runs this rank's share on its device
        result = _einsum_native.contract_part(plan, operands, semiring, dist.get_rank(group),
                                              dist.get_world_size(group))
    else:
        result = _executor_part(ad, dist, group, plan, operands, semiring)
    tensor = _as_tensor(torch, result)
    bool_values = tensor.dtype == torch.bool
    if bool_values or tensor.dtype == torch.int16:  # types gloo and NCCL may not reduce; both widen exactly
        tensor = tensor.to(torch.uint8 if bool_values else torch.int32)
    op = dist.ReduceOp.MIN if semiring in MINIMIZING else dist.ReduceOp.MAX
    dist.all_reduce(tensor, op=op, group=group)
    tensor = tensor.to(_as_tensor(torch, result).dtype)
    return held.back(_like_one_process(ad, semiring, _from_tensor(result, tensor), plan.info.slices))


def _bits(torch, t):
    """t's elements' bits as int64 (an exact round trip through _unbits)."""
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.contiguous().view(width).to(torch.int64)


def _unbits(torch, t, dtype):
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        torch.empty((), dtype=dtype).element_size()]
    if dtype == torch.bool:
        return t.to(torch.int8).view(torch.uint8).to(torch.bool)
    return t.to(width).view(dtype)


def _gather(torch, dist, group, rows):
    """all_gather of this rank's int64 tensor `rows`: (world size, *rows.shape)."""
    parts = [torch.empty_like(rows) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, rows, group=group)
    return torch.stack(parts)


def contract_argmax(*args, semiring="maxplus", optimize="greedy", memory_limit=None, group=None):
    """tropical.einsum_argmax(*args, ...) computed by every rank of `group` together: (result, assignment) on
    every rank, the same as one process's. At each output element the winning slice is the one of smallest
    index among those of best value; the assignment is its sliced labels' indices plus its own traceback."""
    torch, dist = _torch()
    equation, operands, sublists, output, semiring, held = _prepare(args, semiring)
    shapes = [tuple(int(d) for d in x.shape) for x in operands]
    plan = _shared_plan(dist, group, equation, shapes, sublists, output, optimize, memory_limit)
    ad = _einsum_arrays.adapter(operands[0])
    like = operands[0]
    out = plan.network.output
    shape = tuple(plan.network.sizes[label] for label in out)
    none = plan.info.slices  # the slice index of a rank without slices: after every real one
    result = assign = won = None
    for s, fixed in _mine(dist, group, plan):
        trace = _einsum_exec.Trace()
        part = _einsum_exec.run(ad, plan, operands, None, semiring, "argmax", fixed, trace).values
        if out:
            found = _einsum_trace.traceback(ad, plan, trace, like, fixed)
        else:  # the scalar walk, as an array of the same layout as traceback's
            found = _einsum_trace.scalar_traceback(ad, plan, trace, fixed)
            found = ad.index_array([found[label] for label in plan.labels], like)
        index = ad.index_array([s], like).reshape(()) + ad.zeros_indices(shape, like)
        if result is None:
            result, assign, won = part, found, index
            continue
        win = _einsum_trace.better(ad, semiring, part, result)
        result = _einsum_trace.add(ad, semiring, result, part)
        assign = ad.where(win[None], found, assign)
        won = ad.where(win, index, won)
    if result is None:
        result = _zero(ad, like, plan, semiring)
        assign = ad.zeros_indices((len(plan.labels),) + shape, like)
        won = ad.index_array([none], like).reshape(()) + ad.zeros_indices(shape, like)
    values = _as_tensor(torch, result)
    rows = torch.cat([_bits(torch, values)[None], _as_tensor(torch, won)[None], _as_tensor(torch, assign)])
    gathered = _gather(torch, dist, group, rows)
    best_values, best_won, best_assign = None, None, None
    # Rank order over the ranks holding slices; ties go to the smaller slice index, so the order does not matter.
    for r in range(min(gathered.shape[0], none)):
        v = _from_tensor(result, _unbits(torch, gathered[r, 0], values.dtype))
        w = _from_tensor(result, gathered[r, 1])
        a = _from_tensor(result, gathered[r, 2:])
        if best_values is None:
            best_values, best_won, best_assign = v, w, a
            continue
        ahead = _einsum_trace.better(ad, semiring, v, best_values)
        behind = _einsum_trace.better(ad, semiring, best_values, v)
        win = ahead | (~ahead & ~behind & (w < best_won))
        best_values = _einsum_trace.add(ad, semiring, best_values, v)  # as one process merges its slices
        best_won = ad.where(win, w, best_won)
        best_assign = ad.where(win[None], a, best_assign)
    best_values = _like_one_process(ad, semiring, best_values, none)
    if not out:
        return held.back(best_values), {label: int(best_assign[i]) for i, label in enumerate(plan.labels)}
    return held.back(best_values), {label: held.back(ad.contiguous(best_assign[i]))
                                    for i, label in enumerate(plan.labels) if label not in out}


def counting_contract(*args, optimize="greedy", memory_limit=None, group=None):
    """tropical.counting_einsum(*args, ...) computed by every rank of `group` together: (values, counts) on
    every rank. Counts of the best value are summed over the ranks in rank order: the same bits as one process
    while they are integers below 2^53 (float64) or 2^24 (float32), where a sum is exact in any order."""
    torch, dist = _torch()
    equation, pairs, sublists, output, _, _ = _prepare(args, None, counting=True)
    values, counts = [], []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgument(f"tropical: operand {i} of counting_contract must be a (values, counts) pair")
        values.append(pair[0])
        counts.append(pair[1])
    held = _Operands(values + counts)
    described = _einsum._checked(held.arrays, "counting", counting=True)
    if described[0].dtype not in ("float32", "float64"):
        raise InvalidArgument(f"tropical: counting works on float32 or float64 values and counts, not "
                              f"{described[0].dtype}")
    arrays = [d.obj for d in described]
    count = len(values)
    values, counts = arrays[:count], arrays[count:]
    ad = _einsum_arrays.adapter(values[0])
    for i in range(count):
        if tuple(values[i].shape) != tuple(counts[i].shape):
            raise InvalidArgument(f"tropical: operand {i}'s values have shape {tuple(values[i].shape)} but its "
                                  f"counts {tuple(counts[i].shape)}")
        if ad.strides(values[i]) != ad.strides(counts[i]):
            values[i], counts[i] = ad.contiguous(values[i]), ad.contiguous(counts[i])
    shapes = [tuple(int(d) for d in x.shape) for x in values]
    plan = _shared_plan(dist, group, equation, shapes, sublists, output, optimize, memory_limit)
    best = total = None
    for _, fixed in _mine(dist, group, plan):
        part = _einsum_exec.run(ad, plan, values, counts, "maxplus", "counting", fixed, None)
        if best is None:
            best, total = part.values, part.counts
            continue
        best, total = _merge_counts(ad, best, total, part.values, part.counts)
    if best is None:
        best = _zero(ad, values[0], plan, "maxplus")
        total = _zero(ad, values[0], plan, "maxmul")
    v, c = _as_tensor(torch, best), _as_tensor(torch, total)
    gathered = _gather(torch, dist, group, torch.stack([_bits(torch, v), _bits(torch, c)]))
    best = total = None
    for r in range(min(gathered.shape[0], plan.info.slices)):  # the ranks holding slices
        rv = _from_tensor(values[0], _unbits(torch, gathered[r, 0], v.dtype))
        rc = _from_tensor(values[0], _unbits(torch, gathered[r, 1], c.dtype))
        if best is None:
            best, total = rv, rc
            continue
        best, total = _merge_counts(ad, best, total, rv, rc)
    if plan.info.slices > 1:  # as one process's merges leave them (NumPy scalars for a scalar output)
        best, total = _merge_counts(ad, best, total, best, ad.zero_like(total, "maxmul"))
    return held.back(best), held.back(total)


def _merge_counts(ad, best, total, values, counts):
    """(values, counts) of two CountingTropical parts merged: the better value, counts of equal values summed."""
    zero = ad.zero_like(total, "maxmul")
    merged = _einsum_trace.add(ad, "maxplus", best, values)
    total = ad.where(best == merged, total, zero) + ad.where(values == merged, counts, zero)
    return merged, total
