"""The Python faces against the C ABI underneath, side by side in one run (issue 23's benchmarks).

  python3 bench/python_bench.py overhead   per-call cost at 64^3 f32 (host time per call, launches queued)
  python3 bench/python_bench.py large      8192^3 f32 MaxPlus rate: tropical.torch vs the bare C call
  python3 bench/python_bench.py first      first product in fresh processes after import torch + context:
                                           cold (empty cache, CUDA_CACHE_DISABLE=1) and warm, 5 each
  python3 bench/python_bench.py compile    torch.compile of the broadcast expression (cold and warm first
                                           call in fresh processes, steady rate) vs eager and tropical
  python3 bench/python_bench.py all        every part in turn

Needs torch with a CUDA device (and CuPy for its row); libtropical through TROPICAL_LIBRARY or the package's
install. Medians with their spread (min-max); recorded in bench/RESULTS.md."""

import ctypes
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


def per_call_us(fn, sync, calls=200, rounds=25):
    """Median host time per call over rounds of `calls` queued calls (the device drains between rounds)."""
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
        sync()
    return times


def overhead():
    import torch
    import tropical
    import tropical.torch as tt
    from tropical import _lib
    dll = _lib.lib()
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    c = torch.empty(64, 64, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    raw = dll.tropical_gemm
    args = (0, 0, 0, 0, 64, 64, 64, None, a.data_ptr(), 64, b.data_ptr(), 64, None, c.data_ptr(), 64, stream)

    @torch.library.custom_op("bench::empty", mutates_args=())
    def empty_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    rows = {
        "C ABI through ctypes (the C++ call + ~0.35 us)": lambda: raw(*args),
        "tropical.matmul(torch tensors)": lambda: tropical.matmul(a, b),
        "tropical.torch.maxplus_matmul (custom op)": lambda: tt.maxplus_matmul(a, b),
        "empty torch custom op allocating its output": lambda: empty_op(a, b),
        "torch.add 64x64": lambda: torch.add(a, b),
    }
    results = {name: per_call_us(fn, torch.cuda.synchronize) for name, fn in rows.items()}
    try:
        import cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        results["tropical.matmul(CuPy arrays)"] = per_call_us(lambda: tropical.matmul(ca, cb),
                                                              cupy.cuda.Device().synchronize)
    except ImportError:
        pass
    assert torch.equal(tt.maxplus_matmul(a, b), (a[:, :, None] + b[None]).amax(1))
    base = statistics.median(results["C ABI through ctypes (the C++ call + ~0.35 us)"])
    print(f"\n64^3 f32 MaxPlus, host time per call (us), median (min-max) of 25 rounds of 200 queued calls")
    for name, times in results.items():
        print(f"  {name:48s} {spread(times)}   over the C ABI: {statistics.median(times) - base:+.2f}")
    return results


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
    parts = {"overhead": overhead, "large": large, "first": first, "compile": compile_bench}
    for name, fn in parts.items():
        if what in (name, "all"):
            fn()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
