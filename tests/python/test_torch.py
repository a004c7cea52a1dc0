"""tropical.torch: the custom ops on CPU and CUDA tensors, bit-identical to the library's own calls, with
gradients equal to a dense torch expression of the subgradient, opcheck, and torch.compile(fullgraph=True).
Skips where torch >= 2.4 is absent; the CUDA cases skip without a GPU."""

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 4):
    pytest.skip(f"tropical.torch needs torch >= 2.4, this is {torch.__version__}", allow_module_level=True)

import tropical  # noqa: E402
import tropical.torch as tt  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and tropical.device_count() > 0 else [])
DIFFERENTIABLE = ["maxplus", "minplus", "maxmul", "maxmin", "minmax"]


def test_import_tropical_does_not_import_torch():
    import subprocess
    code = "import sys, tropical; tropical.version(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def tied(shape, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-4, 4, shape, generator=g)
    return (x.to(dtype) / 2 if dtype.is_floating_point else x.to(dtype)).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("semiring", DIFFERENTIABLE + ["andor"])
def test_forward_equals_the_cpu_path_bit_for_bit(device, semiring):
    dtype = torch.uint8 if semiring == "andor" else torch.float32
    a, b = tied((33, 70), "cpu", dtype, 1), tied((70, 19), "cpu", dtype, 2)
    if semiring == "andor":
        a, b = (a != 0).to(torch.uint8), (b != 0).to(torch.uint8)
    expect_c, expect_arg = tropical.matmul_argmax(a.numpy(), b.numpy(), semiring)
    c, arg = tt.matmul_argmax(a.to(device), b.to(device), semiring)
    assert c.device.type == device and arg.dtype == torch.int32
    assert np.array_equal(c.cpu().numpy(), expect_c) and np.array_equal(arg.cpu().numpy(), expect_arg)
    assert torch.equal(tt.matmul(a.to(device), b.to(device), semiring), c)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_every_dtype_and_transposed_views(device, dtype):
    a, b = tied((9, 12), device, dtype, 3), tied((12, 7), device, dtype, 4)
    c = tropical.matmul(a, b, "minplus")
    assert c.dtype == dtype and c.device.type == device
    at = a.t().contiguous().t()  # column-major storage: a transpose, not a copy
    assert torch.equal(tropical.matmul(at, b, "minplus"), c)
    assert torch.equal(tropical.matmul(a, b.t().contiguous().t(), "minplus"), c)
    # A non-unit inner stride is copied once: the answer of the contiguous copy.
    assert torch.equal(tropical.matmul(a[:, ::2], b[:6], "minplus"), tropical.matmul(a[:, ::2].contiguous(), b[:6],
                                                                                       "minplus"))


@pytest.mark.parametrize("device", DEVICES)
def test_any_strides_give_the_contiguous_answer_and_gradients(device):
    """Non-unit inner strides, broadcast (stride-0) rows and batches, permuted batches: forward and gradients
    equal those of contiguous copies."""
    g = torch.Generator().manual_seed(21)
    base = torch.rand(4, 6, 16, generator=g, dtype=torch.float64).to(device)
    w = torch.rand(8, 5, generator=g, dtype=torch.float64).to(device)
    views = {
        "inner stride 2": lambda: base[0, :, ::2],
        "broadcast rows": lambda: base[0, 0, :8].expand(6, 8),
        "broadcast batch": lambda: base[0, :, :8].expand(3, 6, 8),
        "permuted batch": lambda: base[:, :, :8].permute(1, 0, 2).contiguous().permute(1, 0, 2),
        "batch last": lambda: base[:, :, :8].permute(1, 2, 0).contiguous().permute(2, 0, 1),
    }
    for name, make in views.items():
        x = make().requires_grad_()
        y = w.clone().requires_grad_()
        x2, y2 = make().contiguous().requires_grad_(), w.clone().requires_grad_()
        c, c2 = tt.maxplus_matmul(x, y), tt.maxplus_matmul(x2, y2)
        assert torch.equal(c, c2), name
        weights = torch.randn(c.shape, generator=g, dtype=torch.float64).to(device)
        (c * weights).sum().backward()
        (c2 * weights).sum().backward()
        torch.testing.assert_close(x.grad, x2.grad, msg=name)
        torch.testing.assert_close(y.grad, y2.grad, msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_a_training_step_in_eager_code_takes_only_the_fast_path(device, monkeypatch):
    """Forward with argmax, backward_a and backward_b (2-D and batched, a sum's broadcast dC) never reach the
    general path: each is one call into the library from _fast."""
    from tropical import _ops

    def general(*args, **kwargs):
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(_ops._Product, "__init__", general)
    for shape_a, shape_b in (((64, 48), (48, 32)), ((5, 64, 48), (48, 32)), ((5, 64, 48), (1, 48, 32))):
        a = torch.randn(shape_a, device=device, requires_grad=True)
        b = torch.randn(shape_b, device=device, requires_grad=True)
        tt.maxplus_matmul(a, b).sum().backward()
        dense_a, dense_b = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        DENSE["maxplus"](dense_a, dense_b).sum().backward()
        torch.testing.assert_close(a.grad, dense_a.grad)
        torch.testing.assert_close(b.grad, dense_b.grad)


@pytest.mark.skipif("cuda" not in DEVICES, reason="no CUDA device")
def test_a_training_step_captured_in_a_cuda_graph_replays_the_eager_results():
    torch.manual_seed(3)
    w1 = torch.randn(48, 64, device="cuda", requires_grad=True)
    w2 = torch.randn(64, 16, device="cuda", requires_grad=True)
    x = torch.randn(32, 48, device="cuda")
    target = torch.randn(32, 16, device="cuda")

    def step():
        h = tt.maxplus_matmul(x, w1).relu()
        loss = ((tt.minplus_matmul(h, w2) - target) ** 2).mean()
        loss.backward()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs asks
        for _ in range(3):
            w1.grad = w2.grad = None
            step()
    torch.cuda.current_stream().wait_stream(side)
    w1.grad = w2.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step()
    static_grads = (w1.grad, w2.grad)  # the graph's own gradient tensors, rewritten by every replay
    for seed in (4, 5):
        torch.manual_seed(seed)
        with torch.no_grad():
            x.copy_(torch.randn_like(x))
            target.copy_(torch.randn_like(target))
        graph.replay()
        torch.cuda.synchronize()
        w1.grad = w2.grad = None
        eager = step()
        # The backward's atomics may add three or more terms in another order: close, not bit-equal.
        torch.testing.assert_close(static_loss, eager.detach())
        torch.testing.assert_close(static_grads[0], w1.grad)
        torch.testing.assert_close(static_grads[1], w2.grad)
        assert static_grads[0].abs().sum() > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("semiring", DIFFERENTIABLE)
@pytest.mark.parametrize("batched", [False, True])
def test_gradients_equal_the_dense_subgradient(device, semiring, batched):
    shape_a, shape_b = ((4, 6, 10), (1, 10, 5)) if batched else ((6, 10), (10, 5))
    for seed, values in ((5, "random"), (6, "tied")):
        g = torch.Generator().manual_seed(seed)
        if values == "random":
            a = torch.rand(shape_a, generator=g, dtype=torch.float64) + 0.5
            b = torch.rand(shape_b, generator=g, dtype=torch.float64) + 0.5
        else:
            a, b = tied(shape_a, "cpu", torch.float64, seed).abs(), tied(shape_b, "cpu", torch.float64, seed + 1).abs()
        a, b = a.to(device).requires_grad_(), b.to(device).requires_grad_()
        c = tt.matmul(a, b, semiring)
        weights = torch.randn(c.shape, generator=g, dtype=torch.float64).to(device)
        (c * weights).sum().backward()
        _, arg = tt.matmul_argmax(a.detach(), b.detach(), semiring)
        ga, gb = tt.routed_gradients(weights, arg, a.detach(), b.detach(), semiring)
        torch.testing.assert_close(a.grad, ga, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(b.grad, gb, rtol=1e-12, atol=1e-12)


DENSE = {  # C as a dense torch expression whose autograd is the subgradient (no ties in random data)
    "maxplus": lambda a, b: (a[..., :, :, None] + b[..., None, :, :]).amax(-2),
    "minplus": lambda a, b: (a[..., :, :, None] + b[..., None, :, :]).amin(-2),
    "maxmul": lambda a, b: (a[..., :, :, None] * b[..., None, :, :]).amax(-2),
    "maxmin": lambda a, b: torch.minimum(a[..., :, :, None], b[..., None, :, :]).amax(-2),
    "minmax": lambda a, b: torch.maximum(a[..., :, :, None], b[..., None, :, :]).amin(-2),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("semiring", DIFFERENTIABLE)
@pytest.mark.parametrize("batched", [False, True])
def test_gradients_equal_a_dense_torch_expression(device, semiring, batched):
    g = torch.Generator().manual_seed(11)
    shape_a, shape_b = ((3, 5, 8), (3, 8, 4)) if batched else ((5, 8), (8, 4))
    a = (torch.rand(shape_a, generator=g, dtype=torch.float64) + 0.5).to(device).requires_grad_()
    b = (torch.rand(shape_b, generator=g, dtype=torch.float64) + 0.5).to(device).requires_grad_()
    weights = torch.randn((3, 5, 4) if batched else (5, 4), generator=g, dtype=torch.float64).to(device)
    c = tt.matmul(a, b, semiring)
    (c * weights).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    c2 = DENSE[semiring](a2, b2)
    (c2 * weights).sum().backward()
    torch.testing.assert_close(c, c2)
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_passes_for_every_op(device):
    a = torch.randn(6, 9, device=device, requires_grad=True)
    b = torch.randn(9, 4, device=device, requires_grad=True)
    a3, b3 = torch.randn(3, 6, 9, device=device, requires_grad=True), torch.randn(1, 9, 4, device=device)
    for semiring in ("maxplus", "maxmin"):
        torch.library.opcheck(torch.ops.tropical.matmul.default, (a.detach(), b.detach(), semiring))
        torch.library.opcheck(torch.ops.tropical.matmul_argmax.default, (a, b, semiring))
        torch.library.opcheck(torch.ops.tropical.matmul_argmax.default, (a3, b3, semiring))
    _, arg = tt.matmul_argmax(a.detach(), b.detach())
    grad = torch.randn(6, 4, device=device)
    torch.library.opcheck(torch.ops.tropical.backward_a.default, (grad, arg, a.detach(), b.detach(), "maxplus"))
    torch.library.opcheck(torch.ops.tropical.backward_b.default, (grad, arg, a.detach(), b.detach(), "maxmul"))


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_two_layer_network_runs_forward_and_backward(device):
    torch._dynamo.reset()
    w1 = torch.randn(16, 32, device=device, requires_grad=True)
    w2 = torch.randn(32, 8, device=device, requires_grad=True)

    def net(x):
        return tt.minplus_matmul(tt.maxplus_matmul(x, w1).relu(), w2).sum()

    x = torch.randn(4, 16, device=device)
    compiled = torch.compile(net, fullgraph=True)
    loss = compiled(x)
    loss.backward()
    g1, g2 = w1.grad.clone(), w2.grad.clone()
    w1.grad, w2.grad = None, None
    eager = net(x)
    eager.backward()
    torch.testing.assert_close(loss, eager)
    torch.testing.assert_close(g1, w1.grad)
    torch.testing.assert_close(g2, w2.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_raises_tropical_errors(device):
    a = torch.ones(3, 4, device=device)
    with pytest.raises(tropical.InvalidArgument, match="columns must equal"):
        tt.maxplus_matmul(a, torch.ones(5, 2, device=device))
    with pytest.raises(tropical.InvalidArgument, match="float64"):
        tt.maxplus_matmul(a, torch.ones(4, 2, device=device, dtype=torch.float64))
    with pytest.raises(tropical.InvalidArgument, match="1-D"):
        tropical.matmul(torch.ones(4, device=device), torch.ones(4, 2, device=device))
    with pytest.raises(tropical.InvalidArgument, match="float16"):
        tropical.matmul(a.half(), a.t().half())
    with pytest.raises(tropical.InvalidArgument, match="numpy array"):
        tropical.matmul(a, np.ones((4, 2), np.float32))


@pytest.mark.skipif("cuda" not in DEVICES, reason="no CUDA device")
def test_mixed_devices_and_streams():
    a, b = torch.ones(3, 4), torch.ones(4, 2, device="cuda")
    with pytest.raises(tropical.InvalidArgument, match="host memory|device"):
        tropical.matmul(b.t(), a.t())
    s = torch.cuda.Stream()
    x, y = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    with torch.cuda.stream(s):
        c = tropical.matmul(x, y)
    s.synchronize()
    assert torch.equal(c, (x[:, :, None] + y[None]).amax(1))


def test_fake_tensors_go_through_the_registered_op():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a, b = torch.empty(4, 5), torch.empty(5, 3)
        c = tt.maxplus_matmul(a, b)
        c3, arg3 = tt.matmul_argmax(torch.empty(2, 4, 5), b, "minplus")
    assert c.shape == (4, 3) and c3.shape == (2, 4, 3) and arg3.dtype == torch.int32
