#!/usr/bin/env python3
"""tropical.distributed across the GPUs of one host: the maximum independent set of a random 3-regular graph
(fixed seed) sliced under a memory limit, contracted by every rank of a torch.distributed NCCL group (one GPU a
rank), against the same instance's tropical.einsum on one GPU in the same run.

Rank 0 plans once (TreeSA, seeded; excluded from the times) and every rank gets that plan; then, the median of
--repeats warm runs each (CUDA synchronized, ranks lined up by a barrier): the whole contraction
(tropical.distributed.contract), this rank's share alone (its slices on its device, no collective), and on
rank 0 the single-GPU tropical.einsum of the same plan (the others waiting), and the scaling: one GPU's time over the
whole contraction's. The collective's share is (whole - slowest share) / whole.
Every rank's result must equal the single-GPU result bit for bit (exit 1 otherwise).

Usage: torchrun --nproc-per-node N bench/distributed.py [--vertices 250] [--limit 16777216] [--repeats 3]
       [--trials 8]"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))

import tropical  # noqa: E402
import tropical.distributed as td  # noqa: E402
from independent_set import network, random_regular_graph  # noqa: E402
from tropical import _einsum_native, _einsum_parse, _einsum_path  # noqa: E402


def median_s(torch, dist, fn, repeats):
    """(median seconds, last result) of warm runs, every rank starting together (dist None: this rank alone)."""
    result, times = fn(), []
    for _ in range(repeats):
        if dist is not None:
            dist.barrier()
        torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv):
    import torch
    import torch.distributed as dist
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vertices", type=int, default=250)
    parser.add_argument("--limit", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=8)
    options = parser.parse_args(argv[1:])
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    world = dist.get_world_size()
    args = network(options.vertices, random_regular_graph(options.vertices, seed=options.vertices), np.float32)
    shapes = [x if i % 2 or i == len(args) - 1 else x.shape for i, x in enumerate(args)]
    box = [None]
    if dist.get_rank() == 0:
        start = time.perf_counter()
        annealer = tropical.TreeSA(trials=options.trials, processes=min(options.trials, os.cpu_count() or 1), seed=1)
        box[0] = (tropical.einsum_path(*shapes, optimize=annealer, memory_limit=options.limit),
                  time.perf_counter() - start)
    dist.broadcast_object_list(box, src=0)
    (path, info), plan_s = box[0]
    operands = [x if i % 2 or i == len(args) - 1 else torch.tensor(x, device="cuda") for i, x in enumerate(args)]
    kwargs = {"optimize": path, "memory_limit": options.limit}
    whole_s, got = median_s(torch, dist, lambda: td.contract(*operands, **kwargs), options.repeats)
    equation, ops, sublists, output = _einsum_parse.split_arguments(operands)
    plan = _einsum_path.cached_plan(equation, [tuple(x.shape) for x in ops], sublists, output, path,
                                    options.limit)
    share_s, _ = median_s(torch, dist,
                          lambda: _einsum_native.contract_part(plan, ops, "maxplus", dist.get_rank(), world),
                          options.repeats)
    shares = [None] * world
    dist.all_gather_object(shares, share_s)
    results = [None] * world
    dist.all_gather_object(results, float(got))
    ok = True
    if dist.get_rank() == 0:  # the other ranks wait at the barrier below while rank 0 runs one GPU alone
        single_s, want = median_s(torch, None, lambda: tropical.einsum(*operands, **kwargs), options.repeats)
        ok = all(np.float32(r).tobytes() == np.float32(float(want)).tobytes() for r in results)
        slowest = max(shares)
        print(f"n = {options.vertices}, memory limit {options.limit}: {info.slices} slices, log2 time "
              f"{info.log2_time:.1f}, space {info.log2_space:.1f}, TreeSA plan {plan_s:.1f} s (excluded)")
        print(f"{world} GPU(s): contract {whole_s * 1e3:.1f} ms (median of {options.repeats}), shares "
              f"{', '.join(f'{s * 1e3:.1f}' for s in shares)} ms, collective and the rest "
              f"{(whole_s - slowest) * 1e3:.2f} ms ({100 * (whole_s - slowest) / whole_s:.1f} %); "
              f"tropical.einsum on one GPU {single_s * 1e3:.1f} ms: {single_s / whole_s:.2f}x")
        print(f"MIS size {float(want):g}; every rank's bits equal one GPU's: {ok}")
    dist.barrier()
    ok_box = [ok]
    dist.broadcast_object_list(ok_box, src=0)
    dist.destroy_process_group()
    return 0 if ok_box[0] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
