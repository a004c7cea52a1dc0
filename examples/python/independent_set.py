"""Maximum independent set of a random 3-regular graph as one max-plus tensor network, with tropical.einsum.

Every vertex v has a label (0: out of the set, 1: in it) and a tensor [0, 1] (what putting it in the set adds);
every edge (u, v) a 2 x 2 tensor that is -inf where both ends are in the set. The max-plus contraction of the
whole network is the size of a maximum independent set; einsum_argmax traces one optimal set back through the
contraction, and counting_einsum (CountingTropical) counts the optimal sets. Small graphs are checked by
brute force over all 2^n subsets.

Usage: python3 independent_set.py [n seed [optimize]]   (n even; optimize: greedy or treesa)"""

import random
import sys
import time

import numpy as np

import tropical


def random_regular_graph(n, seed, degree=3):
    """The edges (u < v) of a random simple `degree`-regular graph on n vertices (pairing model, retried until
    no loop and no double edge)."""
    if n * degree % 2 or n <= degree:
        raise ValueError(f"no {degree}-regular graph on {n} vertices")
    rng = random.Random(seed)
    while True:
        stubs = [v for v in range(n) for _ in range(degree)]
        rng.shuffle(stubs)
        edges = {(min(a, b), max(a, b)) for a, b in zip(stubs[::2], stubs[1::2]) if a != b}
        if len(edges) == n * degree // 2:
            return sorted(edges)


def network(n, edges, dtype=np.float64):
    """The interleaved einsum arguments (tensor, [labels], ..., []) of the independent-set network."""
    vertex = np.array([0.0, 1.0], dtype)
    edge = np.array([[0.0, 0.0], [0.0, -np.inf]], dtype)
    args = []
    for v in range(n):
        args += [vertex, [v]]
    for u, v in edges:
        args += [edge, [u, v]]
    return args + [[]]


def counting_network(n, edges, dtype=np.float64):
    """The same network as (values, counts) pairs: a configuration counts 1, a forbidden one 0."""
    args = network(n, edges, dtype)
    out = []
    for i in range(0, len(args) - 1, 2):
        values = args[i]
        out += [(values, np.where(np.isneginf(values), 0.0, 1.0).astype(dtype)), args[i + 1]]
    return out + [[]]


def brute_force(n, edges):
    """(maximum independent set size, number of maximum independent sets) over all 2^n subsets."""
    subsets = np.arange(1 << n, dtype=np.int64)
    independent = np.ones(1 << n, dtype=bool)
    for u, v in edges:
        independent &= ((subsets >> u) & 1) & ((subsets >> v) & 1) == 0
    sizes = np.zeros(1 << n, dtype=np.int64)
    for v in range(n):
        sizes += (subsets >> v) & 1
    sizes = np.where(independent, sizes, -1)
    best = int(sizes.max())
    return best, int((sizes == best).sum())


def main(argv):
    n, seed = (int(argv[1]), int(argv[2])) if len(argv) > 2 else (20, 1)
    optimize = argv[3] if len(argv) > 3 else "greedy"
    edges = random_regular_graph(n, seed)
    args = network(n, edges)
    start = time.perf_counter()
    path, info = tropical.einsum_path(*args, optimize=optimize)
    print(f"random 3-regular graph, n = {n} (seed {seed}); {optimize} order: log2 time {info.log2_time:.1f}, "
          f"log2 space {info.log2_space:.1f}, planned in {time.perf_counter() - start:.2f} s")
    size = float(tropical.einsum(*args, optimize=path))
    value, assignment = tropical.einsum_argmax(*args, optimize=path)
    chosen = sorted(v for v in range(n) if assignment[v] == 1)
    values, counts = tropical.counting_einsum(*counting_network(n, edges), optimize=path)
    print(f"maximum independent set size {size:g}; number of maximum independent sets {float(counts):g}")
    print(f"one of them: {chosen}")
    ok = float(value) == size == len(chosen) == float(values)
    ok = ok and all(not (u in chosen and v in chosen) for u, v in edges)
    if n <= 24:
        want_size, want_count = brute_force(n, edges)
        print(f"brute force over {1 << n} subsets: size {want_size}, {want_count} maximum sets")
        ok = ok and size == want_size and float(counts) == want_count
    if not ok:
        print("MISMATCH")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
