"""tropical.einsum on torch tensors (CPU and CUDA) and CuPy arrays, equal to the NumPy results of the CPU backend;
tropical.torch.einsum's gradients equal to the subgradient along the traced optimal configuration, and under
torch.compile(fullgraph=True). Each part skips cleanly where its framework (or a GPU) is absent."""

import numpy as np
import pytest

import tropical
from test_einsum import CASES, brute_force, counting_brute_force, draw, networks


def _torch():
    torch = pytest.importorskip("torch")
    return torch


def _torch_devices(torch):
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() and tropical.device_count() > 0 else [])


def _tropical_torch(torch):
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 4):
        pytest.skip(f"tropical.torch needs torch >= 2.4, this is {torch.__version__}")
    import tropical.torch as tt
    return tt


@pytest.mark.parametrize("semiring", sorted(CASES))
def test_torch_operands_give_the_numpy_results(semiring):
    torch = _torch()
    cases, rng = networks(21, 15)
    for device in _torch_devices(torch):
        for equation, shapes in cases:
            dtype = CASES[semiring][0]
            operands = [draw(rng, semiring, dtype, s) for s in shapes]
            want = brute_force(semiring, equation, operands)
            tensors = [torch.from_numpy(np.array(x)).to(device) for x in operands]
            got = tropical.einsum(equation, *tensors, semiring=semiring, memory_limit=None)
            assert isinstance(got, torch.Tensor) and got.device.type == device
            np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"{equation} on {device}")
            value, assignment = tropical.einsum_argmax(equation, *tensors, semiring=semiring)
            np.testing.assert_array_equal(value.cpu().numpy(), want)
            # The same winners as on NumPy (the same tie rule on every backend), not only the same value.
            _, want_assignment = tropical.einsum_argmax(equation, *operands, semiring=semiring)
            assert sorted(assignment) == sorted(want_assignment), equation
            for label, index in assignment.items():
                assert isinstance(index, int) or (index.device.type == device and tuple(index.shape) == want.shape)
                got_index = index if isinstance(index, int) else index.cpu().numpy()
                np.testing.assert_array_equal(got_index, want_assignment[label], err_msg=f"{equation} {label}")


def test_torch_counting_einsum_equals_brute_force():
    torch = _torch()
    cases, rng = networks(22, 20)
    for device in _torch_devices(torch):
        for equation, shapes in cases:
            pairs = [(np.asarray(rng.integers(-1, 2, s)).astype("float64"),
                      np.asarray(rng.integers(0, 3, s)).astype("float64")) for s in shapes]
            want_v, want_c = counting_brute_force(equation, pairs)
            tensors = [(torch.from_numpy(v).to(device), torch.from_numpy(c).to(device)) for v, c in pairs]
            v, c = tropical.counting_einsum(equation, *tensors)
            np.testing.assert_array_equal(v.cpu().numpy(), want_v)
            np.testing.assert_array_equal(c.cpu().numpy(), want_c)


def _counting_cases(seed):
    """(equation, pairs, memory_limit, NumPy's (values, counts)) over random networks, float32 and float64, sliced
    (a limit of 2 elements) and not."""
    cases, rng = networks(seed, 15)
    for equation, shapes in cases:
        for dtype in ("float32", "float64"):
            pairs = [(np.asarray(rng.integers(-1, 2, s)).astype(dtype),
                      np.asarray(rng.integers(0, 3, s)).astype(dtype)) for s in shapes]
            for limit in (None, 2):
                try:
                    want = tropical.counting_einsum(equation, *pairs, memory_limit=limit)
                except tropical.InvalidArgument:
                    continue  # the limit cannot be met
                yield equation, pairs, limit, want


def _same_counting(got, want, message, to_numpy):
    """got (arrays of a GPU framework) holds NumPy's values and counts: the same bits, dtype and shape."""
    for g, w in zip(got, want):
        g = to_numpy(g)
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, message
        assert g.tobytes() == w.tobytes(), message


def test_torch_cuda_counting_einsum_gives_the_numpy_bits():
    torch = _torch()
    if "cuda" not in _torch_devices(torch):
        pytest.skip("no CUDA device: counting on torch CUDA tensors needs a GPU")
    sliced = 0
    for equation, pairs, limit, want in _counting_cases(26):
        tensors = [(torch.from_numpy(v).cuda(), torch.from_numpy(c).cuda()) for v, c in pairs]
        got = tropical.counting_einsum(equation, *tensors, memory_limit=limit)
        assert all(isinstance(x, torch.Tensor) and x.device.type == "cuda" for x in got), equation
        _same_counting(got, want, f"{equation} limit {limit}", lambda x: x.cpu().numpy())
        sliced += limit is not None
    assert sliced > 5


def _subgradients(semiring, equation, operands, weights, assignment, result):
    """d(sum(weights * result))/d(operand): each output element's weight routed to the entries of its optimal
    configuration (times the other factors' product for maxmul)."""
    left, output = equation.split("->")
    terms = left.split(",")
    grads = [np.zeros_like(x) for x in operands]
    for position in np.ndindex(*result.shape):
        point = dict(zip(output, position))
        for label, index in assignment.items():
            point[label] = int(index) if isinstance(index, int) else int(index[position])
        entries = [x[tuple(point[label] for label in term)] for term, x in zip(terms, operands)]
        for i, term in enumerate(terms):
            factor = np.prod([e for j, e in enumerate(entries) if j != i]) if semiring == "maxmul" else 1.0
            grads[i][tuple(point[label] for label in term)] += weights[position] * factor
    return grads


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul"])
def test_torch_einsum_gradients_follow_the_optimal_configuration(semiring):
    torch = _torch()
    tt = _tropical_torch(torch)
    rng = np.random.default_rng(23)
    # b: batch; j: a hyperedge; z: reduced inside one operand; no ties (continuous values)
    equation = "bij,bjz,bjk,ki->bk"
    shapes = [(2, 3, 4), (2, 4, 3), (2, 4, 5), (5, 3)]
    for device in _torch_devices(torch):
        operands = [rng.random(s) + (0.5 if semiring == "maxmul" else -0.5) for s in shapes]
        tensors = [torch.tensor(x, device=device, requires_grad=True) for x in operands]
        result = tt.einsum(equation, *tensors, semiring=semiring)
        weights = rng.random(tuple(result.shape))
        (result * torch.tensor(weights, device=device)).sum().backward()
        _, assignment = tropical.einsum_argmax(equation, *operands, semiring=semiring)
        want = _subgradients(semiring, equation, operands, weights, assignment, result.detach().cpu().numpy())
        for t, g in zip(tensors, want):
            np.testing.assert_allclose(t.grad.cpu().numpy(), g, rtol=1e-12, atol=1e-12)


def test_torch_einsum_under_torch_compile():
    torch = _torch()
    tt = _tropical_torch(torch)
    rng = np.random.default_rng(24)
    equation = "ij,jk,kl->il"
    operands = [rng.standard_normal(s) for s in ((3, 4), (4, 5), (5, 2))]
    path, _ = tropical.einsum_path(equation, *operands)
    for device in _torch_devices(torch):
        tensors = [torch.tensor(x, device=device, requires_grad=True) for x in operands]
        compiled = torch.compile(lambda *xs: tt.einsum(equation, *xs, optimize=path), fullgraph=True)
        got = compiled(*tensors)
        np.testing.assert_array_equal(got.detach().cpu().numpy(), tropical.einsum(equation, *operands))
        got.sum().backward()
        assert all(t.grad is not None for t in tensors)


def test_cupy_operands_give_the_numpy_results():
    cupy = pytest.importorskip("cupy")
    if tropical.device_count() == 0:
        pytest.skip("CuPy is here but tropical sees no CUDA device: the CuPy einsum tests need a GPU")
    cases, rng = networks(25, 15)
    for semiring in sorted(CASES):
        for equation, shapes in cases:
            operands = [draw(rng, semiring, CASES[semiring][0], s) for s in shapes]
            want = brute_force(semiring, equation, operands)
            arrays = [cupy.asarray(x) for x in operands]
            got = tropical.einsum(equation, *arrays, semiring=semiring)
            assert isinstance(got, cupy.ndarray)
            np.testing.assert_array_equal(cupy.asnumpy(got), want, err_msg=equation)
            value, assignment = tropical.einsum_argmax(equation, *arrays, semiring=semiring, memory_limit=None)
            np.testing.assert_array_equal(cupy.asnumpy(value), want)
            _, want_assignment = tropical.einsum_argmax(equation, *operands, semiring=semiring)
            assert sorted(assignment) == sorted(want_assignment), equation
            for label, index in assignment.items():
                got_index = index if isinstance(index, int) else cupy.asnumpy(index)
                np.testing.assert_array_equal(got_index, want_assignment[label], err_msg=f"{equation} {label}")


def test_cupy_counting_einsum_gives_the_numpy_bits():
    cupy = pytest.importorskip("cupy")
    if tropical.device_count() == 0:
        pytest.skip("CuPy is here but tropical sees no CUDA device: the CuPy einsum tests need a GPU")
    for equation, pairs, limit, want in _counting_cases(27):
        arrays = [(cupy.asarray(v), cupy.asarray(c)) for v, c in pairs]
        got = tropical.counting_einsum(equation, *arrays, memory_limit=limit)
        assert all(isinstance(x, cupy.ndarray) for x in got), equation
        _same_counting(got, want, f"{equation} limit {limit}", cupy.asnumpy)
