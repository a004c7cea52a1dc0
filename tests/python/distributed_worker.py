"""One rank of test_distributed: joins a gloo process group through a file store, runs every case of cases()
with tropical.distributed and pickles the results to OUT/rank-R.pickle. Also the cases' definitions, so that
the test computes the single-process results of the same networks.

Usage: python3 distributed_worker.py RANK WORLD STORE_FILE OUT_DIR"""

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


def main(argv):
    rank, world, store, out = int(argv[1]), int(argv[2]), argv[3], argv[4]
    import torch
    import torch.distributed as dist

    import tropical
    import tropical.distributed as td
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    results = {}
    for name, kind, args, kwargs in cases():
        if kind == "value":
            results[name] = td.contract(*args, **kwargs)
        elif kind == "argmax":
            results[name] = td.contract_argmax(*args, **kwargs)
        else:
            results[name] = td.counting_contract(*args, **kwargs)
    # CPU torch tensors in, torch tensors out (torch 1.13: contracted as NumPy views).
    args, kwargs = cases()[0][2], cases()[0][3]
    tensors = [torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in args]
    value = td.contract(*tensors, **kwargs)
    results["torch-operands"] = (type(value).__module__, value.numpy())
    if world == 3:  # a group of ranks 1 and 2: its rank 0 (global rank 1) plans
        group = dist.new_group([1, 2])
        if rank in (1, 2):
            name, _, args, kwargs = [case for case in cases() if case[1] == "argmax"][0]
            results["subgroup"] = (name, td.contract_argmax(*args, group=group, **kwargs))
    # A plan rank 0 cannot make: every rank raises its error instead of waiting for a plan.
    vector = cases()[0][2][:-1] + [[0, 5]]
    try:
        td.contract(*vector, memory_limit=2)
        results["planning-error"] = None
    except tropical.InvalidArgument as error:
        results["planning-error"] = str(error)
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out, f"rank-{rank}.pickle"), "wb") as f:
        pickle.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
