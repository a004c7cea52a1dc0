"""The CuPy shortcut (_fast.cupy_product) against a fake cupy module, so that it runs without CuPy or a GPU:
which operands it takes, the C call it makes, where it allocates, and which operands it leaves to the
general path (returns None, launches nothing)."""

import sys
import types

import numpy as np
import pytest

import tropical
from tropical import _fast

STREAM = 0x5000


class FakeCuPy:
    """What a shortcut may touch: ndarray (shape, ndim, strides, dtype, itemsize, data.ptr, data.device_id),
    empty, dtype, int32, cuda.runtime.getDevice, cuda.Device and cuda.get_current_stream; host buffers."""

    def __init__(self):
        self.device = 0
        self.entered = []
        self.stream = types.SimpleNamespace(ptr=0)
        fake = self

        class ndarray:
            def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C", device=None):
                self.dtype = np.dtype(dtype)
                self.buffer = np.zeros(shape, self.dtype)
                self.shape, self.ndim, self.itemsize = tuple(shape), len(shape), self.dtype.itemsize
                self.strides = self.buffer.strides if strides is None else tuple(strides)
                self.data = types.SimpleNamespace(ptr=self.buffer.ctypes.data,
                                                  device_id=fake.device if device is None else device)
                self.device = types.SimpleNamespace(id=self.data.device_id)

        ndarray.__module__ = "cupy._core.core"

        class Device:
            def __init__(self, device):
                self.id = device

            def __enter__(self):
                self.previous, fake.device = fake.device, self.id
                fake.entered.append(self.id)

            def __exit__(self, *exc):
                fake.device = self.previous

        self.module = types.ModuleType("cupy")
        self.module.ndarray = ndarray
        self.module.dtype = np.dtype
        self.module.int32 = np.int32
        self.module.empty = lambda shape, dtype=float, order="C": ndarray(shape, dtype, order=order)
        self.module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: fake.device),
                                                 Device=Device, get_current_stream=lambda: fake.stream)


@pytest.fixture
def cupy(monkeypatch):
    fake = FakeCuPy()
    monkeypatch.setitem(sys.modules, "cupy", fake.module)
    monkeypatch.delitem(_fast._cache, "cupy", raising=False)  # a real CuPy's pieces, if an earlier test used it
    return fake


@pytest.fixture
def launches(monkeypatch):
    calls = []
    monkeypatch.setattr(_fast, "_launch", lambda *args: calls.append(args))
    monkeypatch.setattr(_fast, "_launch_batched", lambda *args: calls.append(("batched",) + args))
    return calls


def test_batches_go_to_one_batched_call_with_their_strides(cupy, launches):
    """A 3-D operand is one batched launch; a 2-D one (or a batch of 1) broadcasts with batch stride 0."""
    a = cupy.module.ndarray((3, 4, 5), "float32")
    b = cupy.module.ndarray((5, 2), "float32", strides=(4, 20))  # column-major
    cupy.stream.ptr = STREAM
    c, arg = _fast.cupy_product(a, b, 0, False, True)
    assert c.shape == arg.shape == (3, 4, 2) and arg.dtype == np.int32
    assert launches == [("batched", 0, 0, (3, 20, 4, 5, 0, 5), (1, 0, 5, 2, 1, 5), 4, 2, 5, 3, a.data.ptr,
                         b.data.ptr, c.data.ptr, arg.data.ptr, STREAM)]


def test_row_and_column_major_operands_go_straight_to_one_c_call(cupy, launches):
    a = cupy.module.ndarray((3, 4), "float32")
    b = cupy.module.ndarray((4, 5), "float32", strides=(4, 16))  # column-major
    cupy.stream.ptr = STREAM
    c = _fast.cupy_product(a, b, 1, False, False)
    assert type(c) is cupy.module.ndarray and c.shape == (3, 5) and c.dtype == np.float32
    assert launches == [(1, 0, (0, 4), (1, 4), 3, 5, 4, a.data.ptr, b.data.ptr, c.data.ptr, 0, STREAM)]
    a = cupy.module.ndarray((5, 3), "uint8", strides=(1, 5))
    c, arg = _fast.cupy_product(a, cupy.module.ndarray((3, 2), "uint8"), 5, True, True)
    assert arg.dtype == np.int32 and arg.shape == c.shape == (5, 2) and c.dtype == np.uint8
    assert launches[1][:7] == (5, 4, (1, 5), (0, 2), 5, 2, 3) and launches[1][9:] == (c.data.ptr, arg.data.ptr, STREAM)


def test_the_output_is_allocated_on_the_operands_device(cupy, launches):
    a = cupy.module.ndarray((2, 2), "float64", device=1)
    c = _fast.cupy_product(a, a, 0, False, False)
    assert cupy.entered == [1] and cupy.device == 0
    assert c.data.device_id == 1 and len(launches) == 1 and launches[0][1] == 1


def operands(cupy, case):
    """(a, b, andor) of one case that the shortcut must leave to the general path."""
    nd = cupy.module.ndarray
    f32 = lambda shape, **kw: nd(shape, "float32", **kw)  # noqa: E731
    return {
        "numpy operands": (np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), False),
        "mixed dtypes": (f32((2, 2)), nd((2, 2), "float64"), False),
        "float16": (nd((2, 2), "float16"), nd((2, 2), "float16"), False),
        "andor over float32": (f32((2, 2)), f32((2, 2)), True),
        "maxplus over uint8": (nd((2, 2), "uint8"), nd((2, 2), "uint8"), False),
        "1-d": (f32((2,)), f32((2, 2)), False),
        "4-d": (f32((1, 1, 2, 2)), f32((2, 2)), False),
        "batch sizes 2 and 3": (f32((2, 2, 2)), f32((3, 2, 2)), False),
        "two devices": (f32((2, 2)), f32((2, 2), device=1), False),
        "k mismatch": (f32((2, 3)), f32((2, 2)), False),
        "empty": (f32((0, 2)), f32((2, 2)), False),
        "byte stride of half an element": (f32((2, 2), strides=(8, 2)), f32((2, 2)), False),
        "inner stride of two elements": (f32((2, 2)), f32((2, 2), strides=(16, 8)), False),
        "negative stride": (f32((2, 2), strides=(-8, 4)), f32((2, 2)), False),
    }[case]


@pytest.mark.parametrize("case", ["numpy operands", "mixed dtypes", "float16", "andor over float32",
                                  "maxplus over uint8", "1-d", "4-d", "batch sizes 2 and 3", "two devices", "k mismatch", "empty",
                                  "byte stride of half an element", "inner stride of two elements",
                                  "negative stride"])
def test_unusual_operands_are_left_to_the_general_path(cupy, launches, case):
    a, b, andor = operands(cupy, case)
    assert _fast.cupy_product(a, b, 5 if andor else 0, andor, False) is None
    assert _fast.cupy_product(a, b, 5 if andor else 0, andor, True) is None
    assert launches == [] and cupy.entered == []


def test_without_cupy_imported_nothing_is_taken(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.delitem(_fast._cache, "cupy", raising=False)
    assert _fast.cupy_product(np.ones((2, 2)), np.ones((2, 2)), 0, False, False) is None


def test_a_failing_c_call_raises_the_library_error(cupy):
    """Host buffers: no GPU is Unavailable (or InvalidArgument), a GPU refuses host memory."""
    a = cupy.module.ndarray((2, 2), "float32")
    with pytest.raises(tropical.Error, match="^tropical:"):
        _fast.cupy_product(a, a, 0, False, False)


@pytest.mark.parametrize("call", ["matmul", "matmul_argmax"])
def test_operands_of_two_kinds_or_two_devices_are_one_clear_error(cupy, launches, call):
    """Mixed kinds (NumPy with a device array) and mixed devices reach the general path's check, which names
    both operands; nothing is launched."""
    nd = cupy.module.ndarray
    host = np.ones((2, 2), np.float32)
    run = getattr(tropical, call)
    with pytest.raises(tropical.InvalidArgument, match="b is a cupy array but a is a numpy array"):
        run(host, nd((2, 2), "float32"))
    with pytest.raises(tropical.InvalidArgument, match="b is a numpy array but a is a cupy array"):
        run(nd((2, 2), "float32"), host)
    with pytest.raises(tropical.InvalidArgument, match="b is in CUDA device 1 but a is in CUDA device 0"):
        run(nd((2, 2), "float32"), nd((2, 2), "float32", device=1))
    assert launches == []


def test_a_gradient_of_another_kind_than_the_operands_is_one_clear_error(cupy, launches):
    nd = cupy.module.ndarray
    a, b = nd((2, 3), "float32"), nd((3, 2), "float32")
    with pytest.raises(tropical.InvalidArgument, match="grad_c is a numpy array but a is a cupy array"):
        tropical.backward_a(np.ones((2, 2), np.float32), nd((2, 2), "int32"), a, b)
    with pytest.raises(tropical.InvalidArgument, match="argmax is a numpy array but a is a cupy array"):
        tropical.backward_b(nd((2, 2), "float32"), np.zeros((2, 2), np.int32), a, b)
    assert launches == []


def test_cupy_gradients_are_one_backward_call_into_a_new_array(cupy, monkeypatch):
    """dA and dB of plain CuPy operands: one _launch_backward each with the mapped layouts; a broadcast operand
    (its gradient a sum over the batch) and a column-major dC are left to the general path."""
    calls = []
    monkeypatch.setattr(_fast, "_launch_backward", lambda *args: calls.append(args))
    nd = cupy.module.ndarray
    a, b = nd((3, 4), "float32"), nd((4, 5), "float32", strides=(4, 16))
    gc, arg = nd((3, 5), "float32"), nd((3, 5), "int32")
    cupy.stream.ptr = STREAM
    ga = _fast.cupy_backward(True, gc, arg, a, b, 0)
    gb = _fast.cupy_backward(False, gc, arg, a, b, 2)
    assert ga.shape == (3, 4) and gb.shape == (4, 5) and ga.dtype == gb.dtype == np.float32
    assert calls[0][:9] == (True, 0, 0, (1, 0, 3, 4, 0, 4), (1, 0, 4, 5, 1, 4), 3, 5, 4, 1)
    assert calls[0][9:] == (gc.data.ptr, (0, 5), arg.data.ptr, (0, 5), b.data.ptr, ga.data.ptr, STREAM)
    assert calls[1][0] is False and calls[1][13] == a.data.ptr and calls[1][14] == gb.data.ptr
    a3 = nd((2, 3, 4), "float32")
    g3, arg3 = nd((2, 3, 5), "float32"), nd((2, 3, 5), "int32")
    assert _fast.cupy_backward(False, g3, arg3, a3, b, 0) is None  # b broadcast over the batch
    assert _fast.cupy_backward(True, nd((3, 5), "float32", strides=(4, 12)), arg, a, b, 0) is None
    assert len(calls) == 2
