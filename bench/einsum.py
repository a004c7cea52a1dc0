#!/usr/bin/env python3
"""tropical.einsum on the maximum independent set of random 3-regular graphs (fixed seeds), side by side with a
baseline that executes the same contraction path with torch broadcast-and-reduce per pair.

For each n: planning time and the order's log2 time/space complexity (greedy and TreeSA), then with the TreeSA
order: the contraction (einsum), einsum_argmax (one optimal set) and counting_einsum (the number of optimal
sets), their ratios to the contraction, the baseline's time, the share of GPU time in tropical's product
kernels (torch profiler), and the contraction captured in one CUDA graph and replayed (no Python, no launch
overhead: what a C++ plan object would approach). n >= 250 runs under memory_limit = 2^27 elements (sliced;
the baseline is skipped). Times are the best of `--repeats` warm runs (CUDA synchronized).

Usage: einsum.py [--backend torch|numpy] [--sizes 100 150 200 250] [--repeats 5] [--no-baseline]
                 [--sliced-from 250] [--memory-limit 134217728]
(torch: CUDA when there is a GPU; numpy: the CPU backend, a smoke check on small graphs)."""

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))

import tropical  # noqa: E402
from independent_set import counting_network, network, random_regular_graph  # noqa: E402
from tropical import _einsum_parse, _einsum_path  # noqa: E402


class Backend:
    """Arrays and synchronization of one framework."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            self.torch = torch
            self.device = "cuda" if torch.cuda.is_available() and tropical.device_count() > 0 else "cpu"

    def array(self, x, dtype):
        if self.name == "numpy":
            return np.ascontiguousarray(x, dtype=dtype)
        return self.torch.tensor(np.asarray(x, dtype=dtype), device=self.device)

    def sync(self):
        if self.name == "torch" and self.device == "cuda":
            self.torch.cuda.synchronize()

    def where(self):
        return f"torch on {self.device}" if self.name == "torch" else "NumPy on the CPU backend"


def timed(backend, fn, repeats):
    """(best seconds, result) of warm runs."""
    result = fn()
    backend.sync()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        backend.sync()
        best = min(best, time.perf_counter() - start)
    return best, result


def to_backend(backend, args, dtype):
    out = []
    for i, x in enumerate(args):
        if i % 2 == 1 or i == len(args) - 1:
            out.append(x)
        elif isinstance(x, tuple):
            out.append((backend.array(x[0], dtype), backend.array(x[1], dtype)))
        else:
            out.append(backend.array(x, dtype))
    return out


def baseline(backend, plan, operands):
    """The plan's pairwise steps by broadcast-and-reduce (torch or NumPy, no tropical kernels): every pair is
    expanded to the union of its labels, added, and max-reduced over the contracted labels."""
    network, tree = plan.network, plan.tree
    labels_of = plan.labels
    outs = tree.outputs(plan.problem)

    def names(mask):
        return [labels_of[i] for i in range(mask.bit_length()) if mask >> i & 1]

    def amax(x, axes):
        if not axes:
            return x
        return x.amax(dim=tuple(axes)) if backend.name == "torch" else x.max(axis=tuple(axes))

    def expand(x, labels, union):
        perm = [labels.index(label) for label in union if label in labels]
        if perm:
            x = x.permute(*perm) if backend.name == "torch" else x.transpose(perm)
        shape = [network.sizes[label] if label in labels else 1 for label in union]
        return x.reshape(shape)

    nodes = {}
    for leaf, term in enumerate(network.inputs):
        keep = set(names(outs[leaf]))
        nodes[leaf] = (amax(operands[leaf], [i for i, label in enumerate(term) if label not in keep]),
                       [label for label in term if label in keep])
    n = tree.count
    for i, (a, b) in enumerate(tree.children):
        (xa, la), (xb, lb) = nodes.pop(a), nodes.pop(b)
        union = la + [label for label in lb if label not in la]
        keep = set(names(outs[n + i]))
        summed = expand(xa, la, union) + expand(xb, lb, union)
        nodes[n + i] = (amax(summed, [j for j, label in enumerate(union) if label not in keep]),
                        [label for label in union if label in keep])
    return nodes[tree.root()][0]


def graph_replay(backend, fn, repeats, want):
    """Best seconds of replaying fn captured in one CUDA graph (torch on a GPU; None elsewhere), checked to give
    `want`; a capture that fails reports its reason instead."""
    if backend.name != "torch" or backend.device != "cuda":
        return None
    torch = backend.torch
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()  # warm on the capture stream
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn()
        best = math.inf
        for _ in range(repeats + 1):
            start = time.perf_counter()
            graph.replay()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
        if float(out) != want:
            return f"replay gave {float(out)}, not {want}"
        return best
    except Exception as e:  # the row says why; the other columns stand
        return f"capture failed: {type(e).__name__}: {e}"


def product_share(backend, fn):
    """The share of CUDA kernel time in tropical's product kernels (not its permutes) during one run of fn (None
    off the GPU)."""
    if backend.name != "torch" or backend.device != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        backend.sync()
    total = ours = 0.0
    for event in prof.key_averages():
        spent = getattr(event, "self_device_time_total", None)
        if spent is None:
            spent = getattr(event, "self_cuda_time_total", 0.0)
        total += spent
        if "tropical" in event.key and "permute" not in event.key:
            ours += spent
    return ours / total if total else None


def run(backend, n, repeats, with_baseline, memory_limit, annealer):
    edges = random_regular_graph(n, seed=n)
    args = network(n, edges, np.float32)
    shapes = [x if i % 2 or i == len(args) - 1 else x.shape for i, x in enumerate(args)]
    row = {"n": n}
    for name, optimize in (("greedy", "greedy"), ("treesa", annealer)):
        start = time.perf_counter()
        path, info = tropical.einsum_path(*shapes, optimize=optimize, memory_limit=memory_limit)
        row[name] = (time.perf_counter() - start, info.log2_time, info.log2_space, info.slices)
    operands = to_backend(backend, args, "float32")
    kwargs = {"optimize": path, "memory_limit": memory_limit}
    t_plain, size = timed(backend, lambda: tropical.einsum(*operands, **kwargs), repeats)
    t_argmax, (_, chosen) = timed(backend, lambda: tropical.einsum_argmax(*operands, **kwargs), repeats)
    pairs = to_backend(backend, counting_network(n, edges, np.float32), "float32")
    t_count, (_, count) = timed(backend, lambda: tropical.counting_einsum(*pairs, **kwargs), repeats)
    selected = [v for v in range(n) if chosen[v] == 1]
    assert all(not (u in selected and v in selected) for u, v in edges) and len(selected) == float(size)
    row.update(size=float(size), count=float(count), plain=t_plain, argmax=t_argmax, counting=t_count,
               share=product_share(backend, lambda: tropical.einsum(*operands, **kwargs)), baseline=None,
               graph=graph_replay(backend, lambda: tropical.einsum(*operands, **kwargs), repeats, float(size)))
    if with_baseline and memory_limit is None:
        network_ = _einsum_parse.parse(None, [x.shape for x in operands[0:-1:2]], args[1::2], [])
        plan = _einsum_path.plan(network_, path)
        t_base, base = timed(backend, lambda: baseline(backend, plan, operands[0:-1:2]), repeats)
        assert float(base) == float(size), (float(base), float(size))
        row["baseline"] = t_base
    return row


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("torch", "numpy"), default=None)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--sliced-from", type=int, default=250, help="graphs of this many vertices or more run "
                        "under --memory-limit")
    parser.add_argument("--memory-limit", type=int, default=2 ** 27, help="elements (default 2^27)")
    cpus = os.cpu_count() or 1
    parser.add_argument("--trials", type=int, default=max(4, min(16, cpus)), help="TreeSA trials (default: one a "
                        "core, 4 to 16), run in min(trials, cores) processes")
    options = parser.parse_args(argv[1:])
    if options.backend is None:
        try:
            import torch  # noqa: F401  (present: the default backend)
            options.backend = "torch"
        except ImportError:
            options.backend = "numpy"
    backend = Backend(options.backend)
    sizes = options.sizes or ([100, 150, 200, 250] if options.backend == "torch" and backend.device == "cuda"
                              else [60, 100])
    annealer = tropical.TreeSA(trials=options.trials, processes=min(options.trials, cpus))
    print(f"maximum independent set of random 3-regular graphs (seed n), float32, {backend.where()}; {annealer}")
    print("     n | plan greedy: s, log2 tc, sc | plan treesa: s, log2 tc, sc, slices | MIS, count | "
          "einsum ms | argmax ms (x) | counting ms (x) | baseline ms (x) | product share")
    for n in sizes:
        limit = options.memory_limit if n >= options.sliced_from else None
        r = run(backend, n, options.repeats, not options.no_baseline, limit, annealer)
        g, t = r["greedy"], r["treesa"]
        base = f"{r['baseline'] * 1e3:9.2f} ({r['baseline'] / r['plain']:5.1f})" if r["baseline"] else "      n/a"
        share = f"{r['share']:.0%}" if r["share"] is not None else "n/a"
        print(f"{n:6d} | {g[0]:6.2f} {g[1]:6.1f} {g[2]:5.1f} | {t[0]:6.2f} {t[1]:6.1f} {t[2]:5.1f} {t[3]:5d} | "
              f"{r['size']:4.0f} {r['count']:8.0f} | {r['plain'] * 1e3:9.2f} | "
              f"{r['argmax'] * 1e3:8.2f} ({r['argmax'] / r['plain']:4.2f}) | "
              f"{r['counting'] * 1e3:8.2f} ({r['counting'] / r['plain']:4.2f}) | {base} | {share}", flush=True)
        if isinstance(r["graph"], float):
            print(f"{'':6s}   the contraction captured in one CUDA graph: {r['graph'] * 1e3:.2f} ms a replay")
        elif r["graph"] is not None:
            print(f"{'':6s}   CUDA graph: {r['graph']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
