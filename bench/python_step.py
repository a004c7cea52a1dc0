"""A training step and each op alone through the Python faces, side by side in one run with torch's own
expressions (the targets of DESIGN.md's Python row; results in bench/RESULTS.md).

  python3 bench/python_step.py step [N]     forward + sum().backward() at 64^3, 256^3, 1024^3 f32: tropical.torch,
                                            the naive broadcast expression, torch's (a @ b).sum().backward(),
                                            torch.add; host time per call over blocks of 300 calls synchronized
                                            once, rounds interleaved; N (5) fresh processes, median of medians
  python3 bench/python_step.py ops          each op alone at 64^3 (and a batch of 8) from torch and CuPy, paired
                                            round by round with the bare C ABI call on the same operands
  python3 bench/python_step.py parts        the host time of each piece of a 64^3 step, torch's alike
  python3 bench/python_step.py kernels      1024^3: one step (CUDA events) against the sum of its kernels
  python3 bench/python_step.py argmax       8192^3 gemm_argmax rate: tropical.torch against the bare C call
  python3 bench/python_step.py profile [N]  torch.profiler of the N^3 (64) step: host time per op, kernel times
  python3 bench/python_step.py all          every part

Needs torch with a CUDA device (CuPy for its rows); libtropical through TROPICAL_LIBRARY or the package's
install."""

import json
import os
import statistics
import subprocess
import sys
import time

CALLS, ROUNDS = 300, 7


def spread(values, digits=1):
    values = sorted(values)
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f}-{values[-1]:.{digits}f})"


def per_call(fn, sync, calls=CALLS):
    """Host time per call (us) of `calls` calls queued, synchronized once at the end."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def steps(n):
    """{name: step function} at n^3 f32, every one a forward and a sum().backward()."""
    import torch
    import tropical.torch as tt
    a = torch.randn(n, n, device="cuda", requires_grad=True)
    b = torch.randn(n, n, device="cuda", requires_grad=True)
    x, y = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")

    def tropical_step():
        tt.maxplus_matmul(a, b).sum().backward()

    def naive_step():  # chunks of 64 rows keep the broadcast's n^3 intermediate in memory at 1024
        torch.cat([(a[i:i + 64, :, None] + b[None]).amax(1) for i in range(0, n, 64)]).sum().backward()

    def real_step():
        (a @ b).sum().backward()

    rows = {"tropical.torch.maxplus_matmul": tropical_step, "torch (a @ b), real arithmetic": real_step}
    if n <= 256:
        rows["naive (a[:, :, None] + b[None]).amax(1)"] = naive_step
    rows["torch.add (no backward)"] = lambda: torch.add(x, y)
    return rows, (a, b)


def step_rounds(n):
    import torch
    rows, (a, b) = steps(n)
    for fn in rows.values():  # warm: kernels compiled/loaded, allocator primed
        for _ in range(5):
            fn()
    torch.cuda.synchronize()
    times = {name: [] for name in rows}
    names = list(rows)
    for r in range(ROUNDS):
        for name in (names if r % 2 == 0 else names[::-1]):
            a.grad = b.grad = None
            times[name].append(per_call(rows[name], torch.cuda.synchronize))
    return {name: statistics.median(t) for name, t in times.items()}


def step(processes=5):
    if processes == 0:  # a child: one process's medians as a JSON line
        print(json.dumps({str(n): step_rounds(n) for n in (64, 256, 1024)}))
        return
    runs = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "step", "0"], capture_output=True, text=True,
                             timeout=600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"\nforward + sum().backward(), f32, host us per call ({CALLS} calls, one sync), median (min-max) over "
          f"{processes} fresh processes of each one's median of {ROUNDS} interleaved rounds")
    for n in runs[0]:
        print(f"  {n}^3")
        for name in runs[0][n]:
            print(f"    {name:42s} {spread([r[n][name] for r in runs])}")
        ratios = [r[n]["tropical.torch.maxplus_matmul"] / r[n]["torch (a @ b), real arithmetic"] for r in runs]
        print(f"    ratio tropical / torch real step: {spread(ratios, 2)} (target <= 1.3 at 64 and 256)")


def paired(fn, base, sync, calls=200, rounds=21):
    """Per call (us) of fn, and fn minus base per round, alternating which goes first."""
    for _ in range(3):
        fn()
        base()
    sync()
    fn_times, over = [], []
    for r in range(rounds):
        pair = [base, fn] if r % 2 == 0 else [fn, base]
        got = {}
        for f in pair:
            got[f] = per_call(f, sync, calls)
        fn_times.append(got[fn])
        over.append(got[fn] - got[base])
    return fn_times, over


def ops():
    import torch
    import tropical
    import tropical.torch as tt
    from tropical import _lib
    dll = _lib.lib()
    n = 64
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    c, arg = tt.matmul_argmax(a, b)
    g = torch.randn(n, n, device="cuda")
    out, out_arg = torch.empty(n, n, device="cuda"), torch.empty(n, n, device="cuda", dtype=torch.int32)
    stream = torch.cuda.current_stream().cuda_stream
    p = lambda t: t.data_ptr()  # noqa: E731
    bare = {
        "matmul": lambda: dll.tropical_gemm(0, 0, 0, 0, n, n, n, None, p(a), n, p(b), n, None, p(out), n, stream),
        "matmul_argmax": lambda: dll.tropical_gemm_argmax(0, 0, 0, 0, n, n, n, p(a), n, p(b), n, p(out), n,
                                                          p(out_arg), n, stream),
        "backward_a": lambda: dll.tropical_backward_a(0, 0, 0, 0, n, n, n, p(g), n, p(arg), n, p(b), n, p(out), n,
                                                      stream),
        "backward_b": lambda: dll.tropical_backward_b(0, 0, 0, 0, n, n, n, p(g), n, p(arg), n, p(a), n, p(out), n,
                                                      stream),
    }
    a8, b8 = torch.randn(8, n, n, device="cuda"), torch.randn(8, n, n, device="cuda")
    c8, arg8 = tt.matmul_argmax(a8, b8)
    g8 = torch.randn(8, n, n, device="cuda")
    out8, arg8_out = torch.empty(8, n, n, device="cuda"), torch.empty(8, n, n, device="cuda", dtype=torch.int32)
    s = n * n
    bare["matmul batched 8"] = lambda: dll.tropical_gemm_batched(0, 0, 0, 0, n, n, n, None, p(a8), n, s, p(b8), n, s,
                                                                 None, p(out8), n, s, 8, stream)
    bare["matmul_argmax batched 8"] = lambda: dll.tropical_gemm_batched_argmax(
        0, 0, 0, 0, n, n, n, p(a8), n, s, p(b8), n, s, p(out8), n, s, p(arg8_out), n, s, 8, stream)
    bare["backward_a batched 8"] = lambda: dll.tropical_backward_a_batched(
        0, 0, 0, 0, n, n, n, p(g8), n, s, p(arg8), n, s, p(b8), n, s, p(out8), n, s, 8, stream)
    paths = {
        "torch: tropical.torch.maxplus_matmul": ("matmul", lambda: tt.maxplus_matmul(a, b)),
        "torch: tropical.torch.matmul_argmax": ("matmul_argmax", lambda: tt.matmul_argmax(a, b)),
        "torch: tropical.backward_a": ("backward_a", lambda: tropical.backward_a(g, arg, a, b)),
        "torch: tropical.backward_b": ("backward_b", lambda: tropical.backward_b(g, arg, a, b)),
        "torch: torch.ops.tropical.backward_a": ("backward_a",
                                                 lambda: torch.ops.tropical.backward_a(g, arg, a, b, "maxplus")),
        "torch: batched maxplus_matmul (8)": ("matmul batched 8", lambda: tt.maxplus_matmul(a8, b8)),
        "torch: batched matmul_argmax (8)": ("matmul_argmax batched 8", lambda: tt.matmul_argmax(a8, b8)),
        "torch: batched backward_a (8)": ("backward_a batched 8", lambda: tropical.backward_a(g8, arg8, a8, b8)),
    }
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        ca, cb, cg, carg = cupy.asarray(a), cupy.asarray(b), cupy.asarray(g), cupy.asarray(arg)
        paths["cupy: tropical.matmul"] = ("matmul", lambda: tropical.matmul(ca, cb))
        paths["cupy: tropical.matmul_argmax"] = ("matmul_argmax", lambda: tropical.matmul_argmax(ca, cb))
        paths["cupy: tropical.backward_a"] = ("backward_a", lambda: tropical.backward_a(cg, carg, ca, cb))
        paths["cupy: tropical.backward_b"] = ("backward_b", lambda: tropical.backward_b(cg, carg, ca, cb))
    print("\neach op alone at 64^3 f32 MaxPlus (us per call, 200 queued calls a block, 21 rounds paired with the "
          "bare C ABI call on the same operands): per call, over the C call (targets: torch <= 20, CuPy <= 10)")
    for name, (base, fn) in paths.items():
        times, over = paired(fn, bare[base], torch.cuda.synchronize)
        print(f"  {name:42s} {spread(times)}  over C: {spread(over)}")


def kernels():
    import torch
    import tropical.torch as tt
    from tropical import _lib
    dll = _lib.lib()
    n = 1024
    a = torch.randn(n, n, device="cuda", requires_grad=True)
    b = torch.randn(n, n, device="cuda", requires_grad=True)
    c, arg = tt.matmul_argmax(a.detach(), b.detach())
    g = torch.ones(n, n, device="cuda")
    ga, gb = torch.empty(n, n, device="cuda"), torch.empty(n, n, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    p = lambda t: t.data_ptr()  # noqa: E731

    def kernels_only():
        dll.tropical_gemm_argmax(0, 0, 0, 0, n, n, n, p(a), n, p(b), n, p(c), n, p(arg), n, stream)
        dll.tropical_backward_a(0, 0, 0, 0, n, n, n, p(g), n, p(arg), n, p(b), n, p(ga), n, stream)
        dll.tropical_backward_b(0, 0, 0, 0, n, n, n, p(g), n, p(arg), n, p(a), n, p(gb), n, stream)

    def step():
        a.grad = b.grad = None
        tt.maxplus_matmul(a, b).sum().backward()

    def timed(fn, reps=20):
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / reps * 1e3

    both = {"kernels (bare C calls)": [], "step": []}
    for _ in range(7):
        both["kernels (bare C calls)"].append(timed(kernels_only))
        both["step"].append(timed(step))
    print("\n1024^3 f32 MaxPlus forward + sum().backward(): us per step (CUDA events over 20, 7 interleaved rounds)")
    for name, t in both.items():
        print(f"  {name:30s} {spread(t)}")
    ratio = statistics.median(both["step"]) / statistics.median(both["kernels (bare C calls)"])
    print(f"  step / its kernels: {ratio:.3f} (target <= 1.3)")


def argmax():
    import torch
    import tropical.torch as tt
    from tropical import _lib
    dll = _lib.lib()
    n = 8192
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    c, arg = torch.empty(n, n, device="cuda"), torch.empty(n, n, device="cuda", dtype=torch.int32)
    stream = torch.cuda.current_stream().cuda_stream
    rate = lambda ms: n ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
    rows = {"C ABI gemm_argmax": [], "tropical.torch.matmul_argmax": []}
    calls = {"C ABI gemm_argmax": lambda: dll.tropical_gemm_argmax(0, 0, 0, 0, n, n, n, a.data_ptr(), n, b.data_ptr(),
                                                                   n, c.data_ptr(), n, arg.data_ptr(), n, stream),
             "tropical.torch.matmul_argmax": lambda: tt.matmul_argmax(a, b)}
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    for _ in range(5):
        for name, fn in calls.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            rows[name].append(rate(start.elapsed_time(end)))
    print("\n8192^3 f32 MaxPlus gemm_argmax, T MAC/s, median (min-max) of 5 interleaved (CUDA events)")
    for name, r in rows.items():
        print(f"  {name:32s} {spread(r, 2)}")
    print(f"  ratio: {statistics.median(rows['tropical.torch.matmul_argmax']) / statistics.median(rows['C ABI gemm_argmax']):.4f}")


def parts_bench():
    """Host time of each piece of a 64^3 step, in one process (which pieces a step's time is made of)."""
    import torch
    import tropical.torch as tt
    from tropical import _fast
    n = 64
    a = torch.randn(n, n, device="cuda", requires_grad=True)
    b = torch.randn(n, n, device="cuda", requires_grad=True)
    ad, bd = a.detach(), b.detach()
    c, arg = tt.matmul_argmax(ad, bd)
    g = torch.ones((), device="cuda").expand(n, n)

    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    def clear():
        a.grad = b.grad = None

    pieces = {
        "matmul_argmax, no autograd": lambda: tt.matmul_argmax(ad, bd),
        "maxplus_matmul with grad (forward only)": lambda: tt.maxplus_matmul(a, b),
        "forward + sum": lambda: tt.maxplus_matmul(a, b).sum(),
        "step (forward + sum + backward)": lambda: (clear(), tt.maxplus_matmul(a, b).sum().backward()),
        "paired backward (_fast.torch_gradients)": lambda: _fast.torch_gradients(g, arg, ad, bd, 0, True, True),
        "broadcast dC .contiguous()": lambda: g.contiguous(),
        "torch a @ b with grad (forward only)": lambda: a @ b,
        "torch (a @ b).sum()": lambda: (a @ b).sum(),
        "torch step": lambda: (clear(), (a @ b).sum().backward()),
        "identity autograd.Function step": lambda: (clear(), Identity.apply(a).sum().backward()),
        "a.sum().backward() (no product)": lambda: (clear(), a.sum().backward()),
    }
    times = {name: [] for name in pieces}
    for fn in pieces.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    for r in range(7):
        for name, fn in pieces.items():
            times[name].append(per_call(fn, torch.cuda.synchronize))
    print("\nthe pieces of a 64^3 step, host us per call (300 calls, one sync), median (min-max) of 7 rounds")
    for name, t in times.items():
        print(f"  {name:44s} {spread(t)}")


def profile(n=64):
    """torch.profiler of the n^3 step: host time per op, and (CUDA activity) each kernel's device time."""
    import torch
    rows, (a, b) = steps(n)
    fn = rows["tropical.torch.maxplus_matmul"]
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(100):
            a.grad = b.grad = None
            fn()
        torch.cuda.synchronize()
    print(f"\ntorch.profiler, 100 steps at {n}^3 (self CPU and CUDA time per op, us over the 100 steps)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=44))
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=44))


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    if what == "step":
        step(int(argv[2]) if len(argv) > 2 else 5)
        return 0
    if what == "profile" and len(argv) > 2:
        profile(int(argv[2]))
        return 0
    parts = {"step": step, "ops": ops, "parts": parts_bench, "kernels": kernels, "argmax": argmax, "profile": profile}
    for name, fn in parts.items():
        if what in (name, "all"):
            fn()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
