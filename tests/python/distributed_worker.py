"""One rank of test_distributed (gloo, NumPy operands on the CPU) or test_distributed_nccl (NCCL, the operands as
CUDA tensors on the rank's GPU): joins a process group through a file store, runs every case of cases() with
tropical.distributed and pickles the results (as NumPy) to OUT/rank-R.pickle; with NCCL, rank 0 also pickles one
process's tropical.einsum, einsum_argmax and counting_einsum of every case on its GPU to OUT/single.pickle. Also
the cases' definitions, so that the test computes the single-process results of the same networks.

Usage: python3 distributed_worker.py RANK WORLD STORE_FILE OUT_DIR [gloo|nccl]"""

import datetime
import os
import pickle
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python"))

import independent_set  # noqa: E402

N, SEED, LIMIT = 24, 1, 16  # greedy slices this network into 8 under 16 elements


def _random_network(rng, edges, dtype, low, high, output):
    """The independent-set network's labels with random small-integer operands (many ties)."""
    args = []
    for v in range(N):
        args += [rng.integers(low, high, 2).astype(dtype), [v]]
    for u, v in edges:
        args += [rng.integers(low, high, (2, 2)).astype(dtype), [u, v]]
    return args + [output]


def cases():
    """[(name, kind, args, kwargs)]: kind "value" (einsum), "argmax" or "counting"; every semiring, scalar and
    vector outputs, sliced (8 slices) and unsliced (one slice: some ranks hold none)."""
    edges = independent_set.random_regular_graph(N, SEED)
    rng = np.random.default_rng(7)
    found = []
    mis = independent_set.network(N, edges)
    for kind in ("value", "argmax"):
        found.append((f"mis-{kind}", kind, mis, {"memory_limit": LIMIT}))
        found.append((f"mis-unsliced-{kind}", kind, mis, {}))
    found.append(("mis-counting", "counting", independent_set.counting_network(N, edges), {"memory_limit": LIMIT}))
    vector = independent_set.counting_network(N, edges)[:-1] + [[0, 5]]
    found.append(("mis-counting-vector", "counting", vector, {"memory_limit": LIMIT}))
    settings = [("maxplus", np.float64, -2, 3), ("minplus", np.float64, -2, 3), ("maxplus", np.int32, -2, 3),
                ("maxmul", np.float64, 0, 3), ("maxmin", np.float32, 0, 4), ("minmax", np.float32, 0, 4),
                ("andor", np.uint8, 0, 2), ("andor", np.bool_, 0, 2)]
    for semiring, dtype, low, high in settings:
        for output in ([], [0, 5]):
            args = _random_network(rng, edges, dtype, low, high, output)
            shape = "scalar" if not output else "vector"
            name = f"{semiring}-{np.dtype(dtype).name}-{shape}"
            for kind in ("value", "argmax"):
                found.append((f"{name}-{kind}", kind, args, {"semiring": semiring, "memory_limit": LIMIT}))
    return found


def _on_device(torch, args, device):
    """args with every array (and (values, counts) pair of arrays) as a tensor on `device`."""
    def move(x):
        if isinstance(x, np.ndarray):
            return torch.from_numpy(x).to(device)
        if isinstance(x, tuple):
            return tuple(move(y) for y in x)
        return x
    return [move(x) for x in args]


def _as_numpy(x):
    """A result (tensors, tuples, dicts of them) as NumPy, for pickling and comparing."""
    if isinstance(x, tuple):
        return tuple(_as_numpy(y) for y in x)
    if isinstance(x, dict):
        return {key: _as_numpy(value) for key, value in x.items()}
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return x


def main(argv):
    rank, world, store, out = int(argv[1]), int(argv[2]), argv[3], argv[4]
    backend = argv[5] if len(argv) > 5 else "gloo"
    import torch
    import torch.distributed as dist

    import tropical
    import tropical.distributed as td
    device = None
    if backend == "nccl":  # one GPU a rank
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method="file://" + store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    prepare = (lambda args: _on_device(torch, args, device)) if device is not None else (lambda args: args)
    spread = {"value": td.contract, "argmax": td.contract_argmax, "counting": td.counting_contract}
    alone = {"value": tropical.einsum, "argmax": tropical.einsum_argmax, "counting": tropical.counting_einsum}
    results, single = {}, {}
    for name, kind, args, kwargs in cases():
        results[name] = _as_numpy(spread[kind](*prepare(args), **kwargs))
        if device is not None and rank == 0:
            single[name] = _as_numpy(alone[kind](*prepare(args), **kwargs))
    if device is None:  # CPU torch tensors in, torch tensors out (torch 1.13: contracted as NumPy views).
        args, kwargs = cases()[0][2], cases()[0][3]
        tensors = [torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in args]
        value = td.contract(*tensors, **kwargs)
        results["torch-operands"] = (type(value).__module__, value.numpy())
    else:  # CUDA tensors in, CUDA tensors of this rank's device out
        args, kwargs = cases()[0][2], cases()[0][3]
        value = td.contract(*prepare(args), **kwargs)
        results["torch-operands"] = (type(value).__module__, str(value.device), value.cpu().numpy())
    if world >= 3:  # a group of ranks 1 and 2: its rank 0 (global rank 1) plans
        group = dist.new_group([1, 2])
        if rank in (1, 2):
            name, _, args, kwargs = [case for case in cases() if case[1] == "argmax"][0]
            results["subgroup"] = (name, _as_numpy(td.contract_argmax(*prepare(args), group=group, **kwargs)))
    # A plan rank 0 cannot make: every rank raises its error instead of waiting for a plan.
    vector = cases()[0][2][:-1] + [[0, 5]]
    try:
        td.contract(*prepare(vector), memory_limit=2)
        results["planning-error"] = None
    except tropical.InvalidArgument as error:
        results["planning-error"] = str(error)
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out, f"rank-{rank}.pickle"), "wb") as f:
        pickle.dump(results, f)
    if single:
        with open(os.path.join(out, "single.pickle"), "wb") as f:
            pickle.dump(single, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
