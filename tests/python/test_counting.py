"""CountingTropical in Python: tropical.counting_matmul (CountingTropical) against a brute-force NumPy count, and int16
products against reference.py's oracle, on the CPU path (NumPy arrays); the same on the GPU through CuPy or torch
where they and a GPU are present."""

import ctypes

import numpy as np
import pytest

import reference as ref
import tropical
from tropical import _lib


def brute_force(va, ca, vb, cb):
    """(values, counts): max over k of va + vb, and the sum of ca * cb over the k that reach it."""
    with np.errstate(invalid="ignore"):
        s = va[..., :, :, None] + vb[..., None, :, :]
    finite = np.where(np.isnan(s), -np.inf, s)
    best = finite.max(axis=-2) if s.shape[-2] else np.full(s.shape[:-2] + s.shape[-1:], -np.inf, va.dtype)
    tie = s == best[..., None, :]
    counts = np.where(tie, ca[..., :, :, None] * cb[..., None, :, :], 0).sum(axis=-2).astype(va.dtype)
    return best.astype(va.dtype), counts


def tied(rng, shape, dtype):
    return rng.integers(-2, 3, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_counting_matmul_counts_ties(dtype):
    rng = np.random.default_rng(3)
    for m, k, n in ((1, 1, 1), (5, 7, 4), (17, 40, 9), (3, 0, 2)):
        va, vb = tied(rng, (m, k), dtype), tied(rng, (k, n), dtype)
        ca, cb = rng.integers(0, 4, (m, k)).astype(dtype), rng.integers(0, 4, (k, n)).astype(dtype)
        if m > 2 and k:
            va[1] = -np.inf  # a row of -inf with counts: the -inf products tie
            va[2], ca[2] = -np.inf, 0  # a row of the zero
        v, c = tropical.counting_matmul(va, ca, vb, cb)
        want_v, want_c = brute_force(va, ca, vb, cb)
        assert v.dtype == np.dtype(dtype) and c.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(v, want_v)
        np.testing.assert_array_equal(c, want_c)


def test_counting_matmul_batches_layouts_and_out():
    rng = np.random.default_rng(4)
    va, ca = tied(rng, (3, 6, 8), np.float32), rng.integers(1, 3, (3, 6, 8)).astype(np.float32)
    vb, cb = tied(rng, (8, 5), np.float32), rng.integers(1, 3, (8, 5)).astype(np.float32)
    want_v, want_c = brute_force(va, ca, vb, cb)
    v, c = tropical.counting_matmul(va, ca, vb, cb)  # B broadcast over the batch
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(c, want_c)
    # Column-major B (values and counts alike), into given outputs.
    out = (np.empty((3, 6, 5), np.float32), np.empty((3, 6, 5), np.float32))
    r = tropical.counting_matmul(va, ca, np.asfortranarray(vb), np.asfortranarray(cb), out=out)
    assert r[0] is out[0] and r[1] is out[1]
    np.testing.assert_array_equal(out[1], want_c)


def test_counting_operands_of_any_layout_give_the_brute_force():
    """Values and counts laid out differently, negative and non-unit strides: copied once, same answer."""
    rng = np.random.default_rng(5)
    va, ca = tied(rng, (6, 8), np.float64), rng.integers(1, 3, (6, 8)).astype(np.float64)
    vb, cb = tied(rng, (8, 5), np.float64), rng.integers(1, 3, (8, 5)).astype(np.float64)
    want_v, want_c = brute_force(va, ca, vb, cb)
    wide = np.zeros((8, 10))
    wide[:, ::2] = vb
    for args in [(va, np.asfortranarray(ca), vb, cb), (va[::-1].copy()[::-1], ca, wide[:, ::2], cb),
                 (np.asfortranarray(va), ca, vb, np.asfortranarray(cb))]:
        v, c = tropical.counting_matmul(*args)
        np.testing.assert_array_equal(v, want_v)
        np.testing.assert_array_equal(c, want_c)


def test_counting_matmul_refuses_mismatched_operands():
    a = np.zeros((2, 3), np.float32)
    b = np.zeros((3, 4), np.float32)
    with pytest.raises(tropical.InvalidArgument, match="shape"):
        tropical.counting_matmul(a, np.zeros((2, 2), np.float32), b, b)
    with pytest.raises(tropical.InvalidArgument, match="one dtype"):
        tropical.counting_matmul(a, a.astype(np.float64), b, b)
    with pytest.raises(tropical.NotInCatalog, match="float32 or float64"):
        tropical.counting_matmul(a.astype(np.int32), a.astype(np.int32), b.astype(np.int32), b.astype(np.int32))
    with pytest.raises(tropical.InvalidArgument, match="counting_matmul"):
        tropical.matmul(a, b, "counting")


def test_the_c_abi_names_counting_and_int16():
    dll = _lib.lib()
    assert dll.tropical_has_kernel(6, 0, 0) == 1 and dll.tropical_has_kernel(6, 1, 4) == 1
    assert dll.tropical_has_kernel(6, 0, 1) == 0  # no argmax
    assert dll.tropical_has_kernel(0, 5, 1) == 1  # int16 argmax
    kid = ctypes.c_uint32()
    assert dll.tropical_find_kernel(6, 1, 4, ctypes.byref(kid)) == 0
    assert tropical.kernels()[kid.value] == "tropical_gemm_batched_counting_f64"
    assert dll.tropical_find_kernel(6, 2, 0, ctypes.byref(kid)) == 5  # counting over int32: not in catalog


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul", "maxmin", "minmax"])
def test_int16_products_saturate_on_full_range_data(semiring):
    rng = np.random.default_rng(5)
    info = np.iinfo(np.int16)
    for small in (True, False):
        lo, hi = (-(1 << 13), 1 << 13) if small else (info.min, info.max + 1)
        a = rng.integers(lo, hi, (9, 33)).astype(np.int16)
        b = rng.integers(lo, hi, (33, 7)).astype(np.int16)
        if not small:
            a[0, :3], b[:3, 0] = info.min, info.max
        c_ref, arg_ref = ref.matmul_argmax(semiring, a, b)
        c = tropical.matmul(a, b, semiring)
        assert c.dtype == np.int16
        np.testing.assert_array_equal(c, c_ref)
        c2, arg = tropical.matmul_argmax(a, b, semiring)
        np.testing.assert_array_equal(c2, c_ref)
        np.testing.assert_array_equal(arg, arg_ref)


def _gpu_modules():
    found = []
    if tropical.device_count() == 0:
        return found
    try:
        import cupy
        found.append(("cupy", cupy.asarray, cupy.asnumpy))
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            found.append(("torch", lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda(),
                          lambda x: x.cpu().numpy()))
    except ImportError:
        pass
    return found


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_counting_matmul_on_the_gpu_equals_the_cpu(dtype):
    modules = _gpu_modules()
    if not modules:
        pytest.skip("no GPU, or neither CuPy nor torch with CUDA")
    rng = np.random.default_rng(6)
    va, vb = tied(rng, (70, 130), dtype), tied(rng, (130, 33), dtype)
    ca, cb = rng.integers(0, 3, (70, 130)).astype(dtype), rng.integers(0, 3, (130, 33)).astype(dtype)
    want = tropical.counting_matmul(va, ca, vb, cb)
    for name, to_device, to_host in modules:
        v, c = tropical.counting_matmul(to_device(va), to_device(ca), to_device(vb), to_device(cb))
        np.testing.assert_array_equal(to_host(v), want[0], err_msg=name)
        np.testing.assert_array_equal(to_host(c), want[1], err_msg=name)
        a16 = rng.integers(-32768, 32768, (70, 130)).astype(np.int16)
        b16 = rng.integers(-32768, 32768, (130, 33)).astype(np.int16)
        np.testing.assert_array_equal(to_host(tropical.matmul(to_device(a16), to_device(b16))),
                                      tropical.matmul(a16, b16), err_msg=name)
