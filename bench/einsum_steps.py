#!/usr/bin/env python3
"""Where one tropical.einsum contraction's GPU time goes, step by step: the maximum independent set network of
bench/einsum.py (random 3-regular graph, seed n, TreeSA order), run once under torch.profiler; each product
launch is paired, in order, with the shape it was given (batch, m, k, n), and the kernel time is split into
tropical's products, copies (permutes, contiguous) and the rest.

Usage: einsum_steps.py [n (200)] [--top 15] [--trials 16]   (torch with a CUDA device)."""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))

import tropical  # noqa: E402
from independent_set import network, random_regular_graph  # noqa: E402
from tropical import _fast  # noqa: E402


def recorded_launches():
    """Wraps the fast path's product launchers so each call appends (batch, m, k, n); returns the list."""
    shapes = []
    plain, batched = _fast._launch, _fast._launch_batched

    def launch(s, t, la, lb, m, n, k, *rest):
        shapes.append((1, m, k, n))
        return plain(s, t, la, lb, m, n, k, *rest)

    def launch_batched(s, t, oa, ob, m, n, k, batch, *rest):
        shapes.append((batch, m, k, n))
        return batched(s, t, oa, ob, m, n, k, batch, *rest)

    _fast._launch, _fast._launch_batched = launch, launch_batched
    return shapes


def main(argv):
    import torch
    from torch.profiler import DeviceType, ProfilerActivity, profile
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", type=int, nargs="?", default=200)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--trials", type=int, default=16)
    options = parser.parse_args(argv[1:])
    n = options.n
    args = network(n, random_regular_graph(n, seed=n), np.float32)
    shapes_only = [x if i % 2 or i == len(args) - 1 else x.shape for i, x in enumerate(args)]
    start = time.perf_counter()
    annealer = tropical.TreeSA(trials=options.trials, processes=min(options.trials, os.cpu_count() or 1))
    path, info = tropical.einsum_path(*shapes_only, optimize=annealer)
    print(f"n = {n}: TreeSA plan in {time.perf_counter() - start:.1f} s, log2 time {info.log2_time:.1f}, "
          f"space {info.log2_space:.1f}")
    operands = [x if i % 2 or i == len(args) - 1 else torch.tensor(x, device="cuda") for i, x in enumerate(args)]
    for _ in range(3):
        tropical.einsum(*operands, optimize=path)
    torch.cuda.synchronize()
    shapes = recorded_launches()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        tropical.einsum(*operands, optimize=path)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    kernels = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)
    products = [e for e in kernels if e.name.startswith("tropical_") and "permute" not in e.name]
    total = sum(e.time_range.elapsed_us() for e in kernels)
    ours = sum(e.time_range.elapsed_us() for e in products)
    copies = sum(e.time_range.elapsed_us() for e in kernels if "permute" in e.name or
                 ("copy" in e.name.lower() or "elementwise" in e.name.lower()))
    print(f"one contraction: {wall * 1e3:.1f} ms wall (profiled), {len(kernels)} kernels, {total / 1e3:.1f} ms of "
          f"kernel time: products {ours / 1e3:.1f} ms ({len(products)} launches, {len(shapes)} recorded), copies "
          f"{copies / 1e3:.1f} ms, other {(total - ours - copies) / 1e3:.1f} ms")
    rows = []
    if not shapes:  # the library's plan ran the steps (no Python launches to pair with): kernel names only
        shapes = [("?",)] * len(products)
    for event, shape in zip(products, shapes):
        if len(shape) != 4:
            rows.append((event.time_range.elapsed_us(), shape, event.name, 0.0))
            continue
        batch, m, k, nn = shape
        us = event.time_range.elapsed_us()
        out_bytes = batch * m * nn * 4
        rows.append((us, shape, event.name, out_bytes / (us * 1e-6) / 1e9 if us else 0.0))
    rows.sort(reverse=True)
    print(f"top {options.top} products by time (batch, m, k, n; kernel; us; GB/s of C written):")
    for us, shape, name, rate in rows[:options.top]:
        print(f"  {str(shape):28s} {name:52s} {us:9.1f} {rate:8.1f}")
    by_name = {}
    for us, _, name, _ in rows:
        by_name[name] = by_name.get(name, 0.0) + us
    print("product time by kernel:")
    for name, us in sorted(by_name.items(), key=lambda x: -x[1])[:10]:
        print(f"  {name:52s} {us / 1e3:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
