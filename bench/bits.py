"""Bit-packed AndOr on the GPU, side by side in one run (the targets; results in bench/RESULTS.md):

  python3 bench/bits.py product [N]   N^3 (16384): packed-bit output and int32 witness counts through
                                      tropical.bits_matmul (on sm_90 the wgmma kernel, else the catalog's tuned
                                      mma.sync tensor-core kernel), against the
                                      byte-wise AndOr kernel (tropical.matmul(..., "andor") on uint8) and torch's
                                      fp16 matmul then > 0; booleans/s (N^3 / time, CUDA events, median of
                                      rounds) and ratios; every output checked against the others on a sample
  python3 bench/bits.py closure [N]   transitive closure of a random directed graph of N (65536) vertices, out-degree
                                      4 on average, from a bool adjacency on the GPU: tropical.closure's wall time
                                      (packing and unpacking included), iterations, and a BFS check of 8 sources
  python3 bench/bits.py all

Needs torch with a CUDA device; libtropical through TROPICAL_LIBRARY or the package's install. The first call of
each kernel compiles it (tropical.warm() first would too): the rounds after the first are the ones timed."""

import collections
import statistics
import sys
import time

import numpy as np
import torch

import tropical


def timed(fn, rounds):
    """Median ms of `rounds` calls of fn after one warm-up call (CUDA events)."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def row(name, n, ms, base=None):
    rate = n ** 3 / (ms[0] * 1e-3)
    extra = f"  {base / ms[0]:8.1f}x the uint8 kernel" if base else ""
    print(f"{name:44s} {ms[0]:10.3f} ms ({ms[1]:.3f}-{ms[2]:.3f})  {rate / 1e15:8.3f} P booleans/s{extra}", flush=True)
    return ms[0]


def product(n):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    a = torch.rand((n, n), device=dev) < 0.01
    b = torch.rand((n, n), device=dev) < 0.01
    pa, pbt = tropical.pack_bits(a), tropical.pack_bits(b.T.contiguous())
    print(f"product {n}^3 on {torch.cuda.get_device_name()}; packed operands {tuple(pa.shape)} int32 words",
          flush=True)
    out = {}
    bits_ms = row("tropical.bits_matmul packed bits", n,
                  timed(lambda: out.__setitem__("bits", tropical.bits_matmul(pa, pbt, n)), 10))
    counts_ms = row("tropical.bits_matmul int32 witness counts", n,
                    timed(lambda: out.__setitem__("counts", tropical.bits_matmul(pa, pbt, n, out="counts")), 5))
    bytes_ms = row("tropical.bits_matmul uint8 bytes", n,
                   timed(lambda: out.__setitem__("bytes", tropical.bits_matmul(pa, pbt, n, out="bytes")), 5))
    a8, b8 = a.to(torch.uint8), b.to(torch.uint8)
    u8_ms = row("tropical.matmul andor uint8 (byte kernel)", n,
                timed(lambda: out.__setitem__("u8", tropical.matmul(a8, b8, "andor")), 2))
    ah, bh = a.half(), b.half()
    torch_ms = row("torch fp16 matmul > 0", n, timed(lambda: out.__setitem__("torch", (ah @ bh) > 0), 5))
    print(f"packed bits: {u8_ms / bits_ms:.1f}x the uint8 kernel, {torch_ms / bits_ms:.1f}x torch fp16; "
          f"counts: {u8_ms / counts_ms:.1f}x, {torch_ms / counts_ms:.1f}x", flush=True)
    # Checks: packed bits, bytes, counts > 0, the uint8 kernel and torch agree on rows and columns sampled.
    rows = torch.randint(0, n, (64,), device=dev)
    want = out["torch"][rows]
    got_bits = tropical.unpack_bits(out["bits"][rows], n).bool()
    ok = (torch.equal(got_bits, want) and torch.equal(out["bytes"][rows].bool(), want)
          and torch.equal(out["counts"][rows] > 0, want) and torch.equal(out["u8"][rows].bool(), want))
    exact = (a[rows].float() @ b.float()).round().int()
    ok = ok and torch.equal(out["counts"][rows], exact)
    print(f"check on 64 sampled rows: {'ok' if ok else 'MISMATCH'}", flush=True)
    return ok


def bfs(out_edges, source, n):
    seen = np.zeros(n, dtype=bool)
    seen[source] = True
    queue = collections.deque([source])
    while queue:
        v = queue.popleft()
        for w in out_edges[v]:
            if not seen[w]:
                seen[w] = True
                queue.append(w)
    return seen


def closure(n, degree=4):
    torch.manual_seed(1)
    dev = torch.device("cuda")
    edges = n * degree
    src = torch.randint(0, n, (edges,), device=dev)
    dst = torch.randint(0, n, (edges,), device=dev)
    adjacency = torch.zeros((n, n), dtype=torch.bool, device=dev)
    adjacency[src, dst] = True
    torch.cuda.synchronize()
    tropical.closure(adjacency[:512, :512])  # compiles the kernel: not part of the time
    torch.cuda.synchronize()
    start = time.perf_counter()
    reach, iterations = tropical.closure(adjacency)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"closure of {n} vertices, {edges} edges: {seconds:.3f} s (packing and unpacking included), "
          f"{iterations} squarings; reachable pairs {int(reach.sum()):,}", flush=True)
    out_edges = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist()):
        out_edges[s].append(d)
    ok = True
    for source in torch.randint(0, n, (8,)).tolist():
        ok = ok and np.array_equal(reach[source].cpu().numpy(), bfs(out_edges, source, n))
    print(f"BFS check of 8 sources: {'ok' if ok else 'MISMATCH'}", flush=True)
    return ok


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    size = int(argv[2]) if len(argv) > 2 else None
    ok = True
    if what in ("product", "all"):
        ok = product(size or 16384) and ok
    if what in ("closure", "all"):
        ok = closure(size or 65536) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
