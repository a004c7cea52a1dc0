"""Bit-packed booleans in Python: tropical.pack_bits / unpack_bits round trips and layout, bits_matmul's three
outputs against NumPy's integer matmul (odd sizes, batches), closure against a breadth-first search; torch on
the CPU where installed, and the GPU path (torch or CuPy) against the CPU one where a GPU is present."""

import collections

import numpy as np
import pytest

import tropical


def random_bool(rng, shape, density):
    return rng.random(shape) < density


def test_pack_layout_is_bit_j_mod_32_of_word_j_div_32():
    a = np.zeros((2, 70), dtype=np.uint8)
    a[0, 0] = a[0, 33] = a[1, 69] = 1
    words = tropical.pack_bits(a)
    assert words.dtype == np.uint32 and words.shape == (2, tropical.bits_ld(70)) == (2, 8)
    assert words[0, 0] == 1 and words[0, 1] == 2 and words[1, 2] == 1 << 5
    assert words.sum() == 1 + 2 + 32


@pytest.mark.parametrize("k", [1, 31, 32, 33, 255, 256, 257, 1000])
def test_pack_and_unpack_round_trip(k):
    rng = np.random.default_rng(k)
    a = rng.integers(0, 3, (3, 5, k)).astype(np.uint8)  # any non-zero byte is true
    back = tropical.unpack_bits(tropical.pack_bits(a), k)
    assert back.dtype == np.uint8 and np.array_equal(back, (a != 0).astype(np.uint8))
    assert tropical.unpack_bits(tropical.pack_bits(a != 0), k, bool).dtype == bool


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (3, 5, 31), (13, 33, 255), (33, 13, 257), (70, 65, 300),
                                   (67, 90, 513), (4, 5, 0)])
@pytest.mark.parametrize("density", [0.02, 0.5])
def test_products_equal_numpy(m, n, k, density):
    rng = np.random.default_rng(m * 1000 + n + k)
    a, b = random_bool(rng, (m, k), density), random_bool(rng, (k, n), density)
    pa, pbt = tropical.pack_bits(a), tropical.pack_bits(b.T)
    counts = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(tropical.bits_matmul(pa, pbt, k, out="counts"), counts)
    assert np.array_equal(tropical.bits_matmul(pa, pbt, k, out="bytes"), (counts > 0).astype(np.uint8))
    packed = tropical.bits_matmul(pa, pbt, k)
    assert packed.shape == (m, tropical.bits_ld(n))
    assert np.array_equal(tropical.unpack_bits(packed, n), (counts > 0).astype(np.uint8))
    assert np.array_equal(packed, tropical.pack_bits(counts > 0))  # padding bits are zero


def test_batched_products_and_a_shared_operand():
    rng = np.random.default_rng(7)
    a, b = random_bool(rng, (4, 9, 70), 0.1), random_bool(rng, (4, 70, 11), 0.1)
    counts = tropical.bits_matmul(tropical.pack_bits(a), tropical.pack_bits(b.transpose(0, 2, 1)), 70, out="counts")
    assert np.array_equal(counts, a.astype(np.int64) @ b.astype(np.int64))
    shared = tropical.bits_matmul(tropical.pack_bits(a[0]), tropical.pack_bits(b.transpose(0, 2, 1)), 70,
                                  out="bytes")
    assert shared.shape == (4, 9, 11)
    assert np.array_equal(shared, ((a[0].astype(np.int64) @ b.astype(np.int64)) > 0).astype(np.uint8))


def test_bad_arguments_raise():
    words = tropical.pack_bits(np.ones((3, 40), dtype=bool))
    with pytest.raises(tropical.InvalidArgument):
        tropical.bits_matmul(words, words, 40, out="floats")
    with pytest.raises(tropical.InvalidArgument):
        tropical.bits_matmul(words[:, :1], words, 40)
    with pytest.raises(tropical.InvalidArgument):
        tropical.bits_matmul(words.astype(np.float32), words, 40)
    with pytest.raises(tropical.InvalidArgument):
        tropical.closure(np.ones((3, 4), dtype=bool))


def bfs(adjacency):
    n = adjacency.shape[0]
    reach = np.zeros((n, n), dtype=bool)
    out = [np.flatnonzero(row) for row in adjacency]
    for s in range(n):
        reach[s, s] = True
        queue = collections.deque([s])
        while queue:
            v = queue.popleft()
            for w in out[v]:
                if not reach[s, w]:
                    reach[s, w] = True
                    queue.append(w)
    return reach


@pytest.mark.parametrize("n,degree", [(1, 0.0), (40, 1.0), (300, 1.2), (300, 3.0)])
def test_closure_equals_breadth_first_search(n, degree):
    rng = np.random.default_rng(n)
    adjacency = random_bool(rng, (n, n), degree / n)
    reach, iterations = tropical.closure(adjacency)
    assert reach.dtype == bool and np.array_equal(reach, bfs(adjacency))
    assert 1 <= iterations <= 2 + int(np.log2(n))
    reach8, _ = tropical.closure(adjacency.astype(np.uint8))
    assert reach8.dtype == np.uint8 and np.array_equal(reach8, reach.astype(np.uint8))


def test_torch_on_the_cpu():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = random_bool(rng, (17, 100), 0.2), random_bool(rng, (100, 23), 0.2)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    pa, pbt = tropical.pack_bits(ta), tropical.pack_bits(tb.T)
    assert pa.dtype == torch.int32
    assert np.array_equal(pa.numpy().view(np.uint32), tropical.pack_bits(a))
    assert np.array_equal(tropical.unpack_bits(pa, 100).numpy(), a.astype(np.uint8))
    counts = tropical.bits_matmul(pa, pbt, 100, out="counts")
    assert np.array_equal(counts.numpy(), a.astype(np.int64) @ b.astype(np.int64))


def _device_module():
    try:
        import torch
        if torch.cuda.is_available():
            return "torch"
    except ImportError:
        pass
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cupy"
    except Exception:  # noqa: BLE001 (no CuPy, or no driver)
        pass
    return None


@pytest.mark.parametrize("m,n,k", [(3, 5, 31), (70, 65, 300), (129, 200, 1000), (257, 129, 4099)])
@pytest.mark.parametrize("out", ["bits", "bytes", "counts"])
def test_gpu_products_equal_the_cpu(m, n, k, out):
    kind = _device_module()
    if kind is None:
        pytest.skip("no GPU (torch.cuda or CuPy)")
    rng = np.random.default_rng(m + n + k)
    a, b = random_bool(rng, (2, m, k), 0.01), random_bool(rng, (2, k, n), 0.01)
    want = tropical.bits_matmul(tropical.pack_bits(a), tropical.pack_bits(b.transpose(0, 2, 1)), k, out=out)
    if kind == "torch":
        import torch
        da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b.transpose(0, 2, 1).copy()).cuda()
        got = tropical.bits_matmul(tropical.pack_bits(da), tropical.pack_bits(db), k, out=out).cpu().numpy()
    else:
        import cupy
        da, db = cupy.asarray(a), cupy.asarray(b.transpose(0, 2, 1).copy())
        got = cupy.asnumpy(tropical.bits_matmul(tropical.pack_bits(da), tropical.pack_bits(db), k, out=out))
    assert np.array_equal(got.view(want.dtype), want)


def test_gpu_closure_equals_the_cpu():
    kind = _device_module()
    if kind is None:
        pytest.skip("no GPU (torch.cuda or CuPy)")
    rng = np.random.default_rng(11)
    adjacency = random_bool(rng, (1500, 1500), 1.5 / 1500)
    want, _ = tropical.closure(adjacency)
    if kind == "torch":
        import torch
        got, iterations = tropical.closure(torch.from_numpy(adjacency).cuda())
        got = got.cpu().numpy()
    else:
        import cupy
        got, iterations = tropical.closure(cupy.asarray(adjacency))
        got = cupy.asnumpy(got)
    assert iterations >= 1 and np.array_equal(got, want)
