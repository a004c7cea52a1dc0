"""tropical.distributed over torch.distributed's gloo backend on the CPU: 1, 2 and 3 processes contract the same
sliced networks (every semiring, argmax and counting, scalar and vector outputs, and an unsliced one that
leaves ranks without slices; with 3, also a group of ranks 1 and 2) and every rank's result must have the same
bits as one process's tropical.einsum, einsum_argmax and counting_einsum; a planning error reaches every rank.
The same over NCCL with 1, 2 and 4 processes, one GPU each, the operands CUDA tensors, against one process's
results on a GPU (skipped where the machine has fewer GPUs). Skipped without torch, torch.distributed or gloo."""

import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

import tropical

torch = pytest.importorskip("torch")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with the gloo backend is not available", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import distributed_worker  # noqa: E402

# Seconds for a whole group: a hung collective fails the test instead of hanging CI. NCCL groups also compile
# their kernels (cold, several processes at once) and run one process's results on rank 0.
TIMEOUT = {"gloo": 120, "nccl": 300}


def _single(kind, args, kwargs):
    if kind == "value":
        return tropical.einsum(*args, **kwargs)
    if kind == "argmax":
        return tropical.einsum_argmax(*args, **kwargs)
    return tropical.counting_einsum(*args, **kwargs)


def _same(got, want, where):
    """Same types, shapes, dtypes and bits, through tuples and dicts."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for key in want:
            _same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert (got.dtype, got.shape) == (want.dtype, want.shape), \
            f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
        assert got.tobytes() == want.tobytes(), f"{where}: {got} vs {want}"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} vs {want!r}"


def _run_group(world, tmp_path, backend="gloo"):
    """Every rank's pickled results of a group of `world` processes over `backend`."""
    env = dict(os.environ)
    env["TROPICAL_CACHE_DIR"] = str(tmp_path / "cache")
    env["TROPICAL_CACHE_LAYERS"] = ""
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(tropical.__file__))] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"  # several ranks share a small machine
    store = tmp_path / "store"
    worker = os.path.join(HERE, "distributed_worker.py")
    procs = [subprocess.Popen([sys.executable, worker, str(rank), str(world), str(store), str(tmp_path), backend],
                              env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(world)]
    logs = []
    deadline = time.monotonic() + TIMEOUT[backend]
    try:
        for p in procs:
            logs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, p in enumerate(procs):
        assert p.returncode == 0, f"rank {rank} of {world} exited with {p.returncode}:\n" + "\n".join(logs)
    results = []
    for rank in range(world):
        with open(tmp_path / f"rank-{rank}.pickle", "rb") as f:
            results.append(pickle.load(f))
    return results


@pytest.mark.parametrize("world", [1, 2, 3])
def test_same_bits_as_one_process(world, tmp_path):
    cases = distributed_worker.cases()
    assert tropical.einsum_path(*cases[0][2], memory_limit=distributed_worker.LIMIT)[1].slices >= 8
    results = _run_group(world, tmp_path)
    for name, kind, args, kwargs in cases:
        want = _single(kind, args, kwargs)
        for rank, found in enumerate(results):
            _same(found[name], want, f"{name} on rank {rank} of {world}")
    want = tropical.einsum(*cases[0][2], **cases[0][3])
    for rank, found in enumerate(results):
        module, value = found["torch-operands"]
        assert module.startswith("torch")
        _same(value, np.asarray(want), f"torch operands on rank {rank} of {world}")
        assert "smaller than the output" in (found["planning-error"] or ""), f"rank {rank} of {world}"
    if world == 3:
        for rank in (1, 2):
            name, got = results[rank]["subgroup"]
            _same(got, _single("argmax", *[case[2:] for case in cases if case[0] == name][0]),
                  f"{name} on rank {rank} of the group of ranks 1 and 2")


def _gpus():
    """GPUs a group over NCCL can use here (0 without CUDA or NCCL)."""
    try:
        return torch.cuda.device_count() if torch.distributed.is_nccl_available() else 0
    except (AttributeError, RuntimeError):
        return 0


@pytest.mark.parametrize("world", [1, 2, 4])
def test_nccl_same_bits_as_one_process_on_a_gpu(world, tmp_path):
    if _gpus() < world:
        pytest.skip(f"needs {world} GPU(s) and torch.distributed's NCCL backend; {_gpus()} here")
    results = _run_group(world, tmp_path, "nccl")
    with open(tmp_path / "single.pickle", "rb") as f:
        single = pickle.load(f)
    cases = distributed_worker.cases()
    for name, _, _, _ in cases:
        for rank, found in enumerate(results):
            _same(found[name], single[name], f"{name} on rank {rank} of {world} GPUs")
    for rank, found in enumerate(results):
        module, device, value = found["torch-operands"]
        assert module.startswith("torch") and device == f"cuda:{rank}", (module, device)
        _same(value, single[cases[0][0]], f"torch operands on rank {rank} of {world} GPUs")
        assert "smaller than the output" in (found["planning-error"] or ""), f"rank {rank} of {world}"
    if world >= 3:
        for rank in (1, 2):
            name, got = results[rank]["subgroup"]
            _same(got, single[name], f"{name} on rank {rank} of the group of ranks 1 and 2")


def test_needs_a_process_group():
    import tropical.distributed as td
    with pytest.raises(tropical.InvalidArgument, match="init_process_group"):
        td.contract("ij,jk->ik", np.zeros((2, 2)), np.zeros((2, 2)))
