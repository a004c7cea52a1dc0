"""The Python faces against the C ABI underneath, side by side in one run.

  python3 bench/python_bench.py overhead   per-call cost at 64^3 f32 (host time per call, launches queued), each
                                           path paired round by round with the bare C call: one process
  python3 bench/python_bench.py overhead-fresh [N]
                                           the same in N (5) fresh processes: the median of their medians
  python3 bench/python_bench.py large      8192^3 f32 MaxPlus rate: tropical.torch vs the bare C call
  python3 bench/python_bench.py first      first product in fresh processes after import torch + context:
                                           cold (empty cache, CUDA_CACHE_DISABLE=1) and warm, 5 each
  python3 bench/python_bench.py compile    torch.compile of the broadcast expression (cold and warm first
                                           call in fresh processes, steady rate) vs eager and tropical
  python3 bench/python_bench.py all        every part in turn (overhead-fresh for the overhead)

Needs torch with a CUDA device (and CuPy for its row); libtropical through TROPICAL_LIBRARY or the package's
install. Medians with their spread (min-max); recorded in bench/RESULTS.md."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

EXPR = "(a[i:i+64, :, None] + b[None]).amax(1)"


def spread(values, scale=1.0, digits=2):
    values = sorted(v * scale for v in values)
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f}-{values[-1]:.{digits}f})"


def signed_spread(values):
    values = sorted(values)
    return f"{statistics.median(values):+.2f} ({values[0]:+.2f} to {values[-1]:+.2f})"


CALLS, ROUNDS = 200, 31


def paired_rounds(fn, base, sync, calls=CALLS, rounds=ROUNDS):
    """Host time per call (us) of fn and of base, one block of `calls` queued calls of each per round (base
    first in even rounds, fn first in odd ones), the device drained after each block: (fn's times, base's
    times, fn - base per round). Pairing within a round cancels the host's drift between rounds."""
    for _ in range(3):
        fn()
        base()
    sync()
    fn_times, base_times = [], []
    for r in range(rounds):
        blocks = [(base, base_times), (fn, fn_times)]
        for f, times in (blocks if r % 2 == 0 else blocks[::-1]):
            start = time.perf_counter()
            for _ in range(calls):
                f()
            times.append((time.perf_counter() - start) / calls * 1e6)
            sync()
    return fn_times, base_times, [x - y for x, y in zip(fn_times, base_times)]


C_ABI = "C ABI through ctypes (vs itself: the noise)"
TORCH_FLOOR, CUPY_FLOOR = "floor: torch.empty + the C ABI call", "floor: cupy.empty + the C ABI call"
# path: (its limit over the C ABI call in us, the row of the framework's allocation + the C call)
TARGETS = {"tropical.torch.maxplus_matmul (custom op)": (20.0, TORCH_FLOOR),
           "tropical.matmul(CuPy arrays)": (10.0, CUPY_FLOOR)}


def overhead_rounds():
    """{path: (times per call, differences over the C ABI call per round)} at 64^3 f32 MaxPlus in this process;
    every path is paired with the bare C call on its own operands and stream."""
    import torch
    import tropical
    import tropical.torch as tt
    from tropical import _lib
    raw = _lib.lib().tropical_gemm
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    c = torch.empty(64, 64, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    c_abi = lambda: raw(0, 0, 0, 0, 64, 64, 64, None, a.data_ptr(), 64, b.data_ptr(), 64, None,  # noqa: E731
                        c.data_ptr(), 64, stream)

    def torch_floor():
        out = a.new_empty((64, 64))
        raw(0, 0, 0, 0, 64, 64, 64, None, a.data_ptr(), 64, b.data_ptr(), 64, None, out.data_ptr(), 64, stream)
        return out

    @torch.library.custom_op("bench::empty", mutates_args=())
    def empty_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    rows = {
        C_ABI: (c_abi, c_abi),
        TORCH_FLOOR: (torch_floor, c_abi),
        "tropical.matmul(torch tensors)": (lambda: tropical.matmul(a, b), c_abi),
        "tropical.torch.maxplus_matmul (custom op)": (lambda: tt.maxplus_matmul(a, b), c_abi),
        "empty torch custom op allocating its output": (lambda: empty_op(a, b), c_abi),
        "torch.add 64x64": (lambda: torch.add(a, b), c_abi),
    }
    expect = (a[:, :, None] + b[None]).amax(1)
    assert torch.equal(tt.maxplus_matmul(a, b), expect) and torch.equal(tropical.matmul(a, b), expect)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.empty((64, 64), cupy.float32)
        cupy_stream = cupy.cuda.get_current_stream().ptr
        cupy_c_abi = lambda: raw(0, 0, 0, 0, 64, 64, 64, None, ca.data.ptr, 64, cb.data.ptr, 64, None,  # noqa: E731
                                 cc.data.ptr, 64, cupy_stream)

        def cupy_floor():
            out = cupy.empty((64, 64), cupy.float32)
            raw(0, 0, 0, 0, 64, 64, 64, None, ca.data.ptr, 64, cb.data.ptr, 64, None, out.data.ptr, 64, cupy_stream)
            return out

        assert (cupy.asnumpy(tropical.matmul(ca, cb)) == expect.cpu().numpy()).all()
        rows[CUPY_FLOOR] = (cupy_floor, cupy_c_abi)
        rows["tropical.matmul(CuPy arrays)"] = (lambda: tropical.matmul(ca, cb), cupy_c_abi)
    results = {}
    for name, (fn, base) in rows.items():
        times, _, over = paired_rounds(fn, base, torch.cuda.synchronize)
        results[name] = (times, over)
    return results


def print_overhead(rows, how):
    """One table; rows: {path: (per call, over the C ABI call)}, each already a spread string."""
    print(f"\n64^3 f32 MaxPlus, host time per call (us, launches queued): {how}")
    print(f"  {'path':48s} {'per call':22s} over the C ABI call (paired rounds)")
    for name, (per_call, over) in rows.items():
        print(f"  {name:48s} {per_call:22s} {over}")


def verdicts(over):
    """One line per target from {path: median overhead in us}, with the part that is the framework's
    own allocation (its floor row) and the rest (the Python of tropical and of the framework's dispatch)."""
    for name, (limit, floor) in TARGETS.items():
        if name in over:
            print(f"  {name}: {over[name]:+.2f} us over the C ABI call (target <= {limit:.0f}: "
                  f"{'met' if over[name] <= limit else 'missed'}); the output's allocation (its floor row) "
                  f"{over[floor]:+.2f}, the rest {over[name] - over[floor]:+.2f}")


def overhead(json_line=False):
    results = overhead_rounds()
    if json_line:  # for overhead_fresh: the medians of this process
        print(json.dumps({name: [statistics.median(times), statistics.median(over)]
                          for name, (times, over) in results.items()}))
        return results
    print_overhead({name: (spread(times), signed_spread(over)) for name, (times, over) in results.items()},
                   f"median (min-max) over {ROUNDS} rounds of {CALLS} calls, each round timing the path and the "
                   "bare C call alternately")
    verdicts({name: statistics.median(over) for name, (_, over) in results.items()})
    return results


def overhead_fresh(processes=5):
    """overhead() in `processes` fresh processes: the median of their medians, with the spread over processes."""
    runs = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "overhead", "--json"], capture_output=True,
                             text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    names = list(runs[0])
    print_overhead({name: (spread([r[name][0] for r in runs]), signed_spread([r[name][1] for r in runs]))
                    for name in names},
                   f"median (min-max) over {processes} fresh processes of each one's median over {ROUNDS} rounds "
                   f"of {CALLS} calls (each round timing the path and the bare C call alternately)")
    verdicts({name: statistics.median(r[name][1] for r in runs) for name in names})


def cuda_time_ms(fn, reps=5):
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def large():
    import torch
    import tropical.torch as tt
    from tropical import _lib
    n = 8192
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    raw = _lib.lib().tropical_gemm
    stream = torch.cuda.current_stream().cuda_stream
    rate = lambda ms: n ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
    rows = {}
    for rnd in range(2):  # interleaved, twice
        rows.setdefault("C ABI", []).extend(cuda_time_ms(lambda: raw(0, 0, 0, 0, n, n, n, None, a.data_ptr(), n,
                                                                           b.data_ptr(), n, None, c.data_ptr(), n,
                                                                           stream)))
        rows.setdefault("tropical.torch.maxplus_matmul", []).extend(cuda_time_ms(lambda: tt.maxplus_matmul(a, b)))
    print(f"\n8192^3 f32 MaxPlus, T MAC/s, median (min-max) of 10 (CUDA events)")
    for name, ms in rows.items():
        print(f"  {name:32s} {spread([rate(x) for x in ms])}")
    ratio = statistics.median(rows["C ABI"]) / statistics.median(rows["tropical.torch.maxplus_matmul"])
    print(f"  tropical.torch / C ABI rate: {ratio:.4f}")


CHILD_FIRST = r"""
import time, torch
torch.cuda.init(); x = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda"); torch.cuda.synchronize()
t0 = time.perf_counter()
import tropical.torch as tt
t1 = time.perf_counter()
c = tt.maxplus_matmul(a, b); torch.cuda.synchronize()
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def fresh(code, env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return [float(x) for x in out.stdout.strip().splitlines()[-1].split()]


def first():
    cold, warm = [], []
    warm_dir = tempfile.mkdtemp(prefix="tropical-bench-warm-")
    for _ in range(5):
        env = dict(os.environ, TROPICAL_CACHE_DIR=tempfile.mkdtemp(prefix="tropical-bench-cold-"),
                   CUDA_CACHE_DISABLE="1", TROPICAL_CACHE_LAYERS="")
        cold.append(fresh(CHILD_FIRST, env))
    env = dict(os.environ, TROPICAL_CACHE_DIR=warm_dir, CUDA_CACHE_DISABLE="1", TROPICAL_CACHE_LAYERS="")
    fresh(CHILD_FIRST, env)  # fills the cache
    for _ in range(5):
        warm.append(fresh(CHILD_FIRST, env))
    print("\nfirst tropical.torch.maxplus_matmul (1024^3 f32) in a fresh process, after import torch and the "
          "context (ms), median (min-max) of 5 processes")
    for name, runs in (("cold (empty cache, CUDA_CACHE_DISABLE=1)", cold), ("warm (cache filled before)", warm)):
        print(f"  {name:42s} import tropical.torch {spread([r[0] for r in runs])}, first product "
              f"{spread([r[1] for r in runs])}, both {spread([r[0] + r[1] for r in runs])}")


CHILD_COMPILE = r"""
import time, torch
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
n = 1024
a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
def f(a, b):
    return torch.cat([(a[i:i+64, :, None] + b[None]).amax(1) for i in range(0, a.shape[0], 64)])
g = torch.compile(f)
t0 = time.perf_counter(); c = g(a, b); torch.cuda.synchronize(); t1 = time.perf_counter()
print((t1 - t0) * 1e3)
"""


def compile_bench():
    import torch
    import tropical.torch as tt
    cache = tempfile.mkdtemp(prefix="tropical-bench-inductor-")
    cold, warm = [], []
    for _ in range(5):
        d = tempfile.mkdtemp(prefix="tropical-bench-inductor-cold-")
        cold.append(fresh(CHILD_COMPILE, dict(os.environ, TORCHINDUCTOR_CACHE_DIR=d, TRITON_CACHE_DIR=d + "/triton"))[0])
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=cache + "/triton")
    fresh(CHILD_COMPILE, env)
    for _ in range(5):
        warm.append(fresh(CHILD_COMPILE, env)[0])
    n = 1024
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")

    def f(a, b):
        return torch.cat([(a[i:i + 64, :, None] + b[None]).amax(1) for i in range(0, a.shape[0], 64)])

    g = torch.compile(f)
    expect = f(a, b)
    assert torch.equal(g(a, b), expect) and torch.equal(tt.maxplus_matmul(a, b), expect)
    rate = lambda ms: n ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
    print(f"\nbroadcast {EXPR} at 1024^3 f32 (fresh processes, 5 each; rates: CUDA events, 5 reps)")
    print(f"  torch.compile first call, cold Inductor/Triton caches (s): {spread(cold, 1e-3)}")
    print(f"  torch.compile first call, warm caches (s):                 {spread(warm, 1e-3)}")
    print(f"  torch.compile steady (T MAC/s): {spread([rate(x) for x in cuda_time_ms(lambda: g(a, b))])}")
    print(f"  eager broadcast (T MAC/s):      {spread([rate(x) for x in cuda_time_ms(lambda: f(a, b))])}")
    print(f"  tropical.torch (T MAC/s):       {spread([rate(x) for x in cuda_time_ms(lambda: tt.maxplus_matmul(a, b))])}")


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    if what == "overhead":
        overhead(json_line="--json" in argv[2:])
    elif what == "overhead-fresh":
        overhead_fresh(int(argv[2]) if len(argv) > 2 else 5)
    else:
        parts = {"overhead-fresh": overhead_fresh, "large": large, "first": first, "compile": compile_bench}
        for name, fn in parts.items():
            if what in (name, "all"):
                fn()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
