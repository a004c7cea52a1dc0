"""The common case of a product, fast: two 2-D torch tensors (or CuPy arrays) of one dtype on one device,
row- or column-major. Everything here is a shortcut of _ops (same checks, same calls); anything unusual
returns None and _ops takes the general path, which also words the errors."""

import sys

from . import _lib

_FLOATS_INTS = ("float32", "float64", "int32", "int64")
_CODES = {"float32": 0, "float64": 1, "int32": 2, "int64": 3, "uint8": 4, "bool": 4}
_torch_types = {}  # torch dtype -> C dtype code for the ordered semirings, or for andor (keyed by andor flag)
_cache = {}


def _torch():
    torch = _cache.get("torch")
    if torch is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        _cache["torch"] = torch
        _cache["tensor"] = torch.Tensor
        _cache["raw_stream"] = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _cache["int32"] = torch.int32
        for name in ("float32", "float64", "int32", "int64", "uint8", "bool"):
            _torch_types[getattr(torch, name)] = name
    return torch


def _matrix(rows, cols, s0, s1):
    """(trans, ld) of a non-empty row- or column-major matrix, or None."""
    if s1 == 1 and (s0 >= cols or rows == 1):
        return 0, (s0 if rows > 1 else cols)
    if s0 == 1 and (s1 >= rows or cols == 1):
        return 1, (s1 if cols > 1 else rows)
    return None


def torch_product(a, b, s, andor, want_argmax):
    """C (and argmax) of two plain 2-D torch tensors, or None for the general path."""
    if _torch() is None:
        return None
    tensor = _cache["tensor"]
    if type(a) is not tensor or type(b) is not tensor or a.dtype != b.dtype or a.dim() != 2 or b.dim() != 2:
        return None
    name = _torch_types.get(a.dtype)
    if name is None or (name in ("uint8", "bool")) != andor:
        return None
    device = a.get_device()
    if device != b.get_device() or (device < 0 and not (a.is_cpu and b.is_cpu)):
        return None
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or m == 0 or n == 0 or k == 0:
        return None
    sa, sb = a.stride(), b.stride()
    la, lb = _matrix(m, k, sa[0], sa[1]), _matrix(k, n, sb[0], sb[1])
    if la is None or lb is None:
        return None
    t = _CODES[name]
    c = a.new_empty((m, n))
    dll = _lib.library.load()
    if want_argmax:
        arg = a.new_empty((m, n), dtype=_cache["int32"])
        if device >= 0:
            status = dll.tropical_gemm_argmax(s, t, la[0], lb[0], m, n, k, a.data_ptr(), la[1], b.data_ptr(), lb[1],
                                              c.data_ptr(), n, arg.data_ptr(), n, _stream(device))
        else:
            status = dll.tropical_cpu_gemm_argmax(s, t, la[0], lb[0], m, n, k, a.data_ptr(), la[1], b.data_ptr(),
                                                  lb[1], c.data_ptr(), n, arg.data_ptr(), n)
        _lib.check(status)
        return c, arg
    if device >= 0:
        status = dll.tropical_gemm(s, t, la[0], lb[0], m, n, k, None, a.data_ptr(), la[1], b.data_ptr(), lb[1], None,
                                   c.data_ptr(), n, _stream(device))
    else:
        status = dll.tropical_cpu_gemm(s, t, la[0], lb[0], m, n, k, None, a.data_ptr(), la[1], b.data_ptr(), lb[1],
                                       None, c.data_ptr(), n)
    _lib.check(status)
    return c


def _stream(device):
    raw = _cache["raw_stream"]
    if raw is not None:
        return raw(device)
    return _cache["torch"].cuda.current_stream(device).cuda_stream


def _cupy_names(cupy):
    """CuPy's dtype objects -> our element type names (made once)."""
    names = _cache.get("cupy_names")
    if names is None:
        names = {cupy.dtype(name): name for name in _CODES}
        _cache["cupy_names"] = names
    return names


def cupy_product(a, b, s, andor, want_argmax):
    """C (and argmax) of two 2-D CuPy arrays, or None for the general path."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    ndarray = cupy.ndarray
    if type(a) is not ndarray or type(b) is not ndarray or a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype:
        return None
    name = _cupy_names(cupy).get(a.dtype)  # dtype.name costs ~3 us a call, this dict lookup ~0.1
    if name is None or (name in ("uint8", "bool")) != andor:
        return None
    device = a.data.device_id
    if device != b.data.device_id:
        return None
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or m == 0 or n == 0 or k == 0:
        return None
    size = a.itemsize
    sa, sb = a.strides, b.strides
    la = _matrix(m, k, sa[0] // size, sa[1] // size) if sa[0] % size == 0 and sa[1] % size == 0 else None
    lb = _matrix(k, n, sb[0] // size, sb[1] // size) if sb[0] % size == 0 and sb[1] % size == 0 else None
    if la is None or lb is None:
        return None
    if cupy.cuda.runtime.getDevice() != device:
        with cupy.cuda.Device(device):
            return cupy_product(a, b, s, andor, want_argmax)
    t = _CODES[name]
    c = cupy.empty((m, n), dtype=a.dtype)
    stream = cupy.cuda.get_current_stream().ptr
    dll = _lib.library.load()
    if want_argmax:
        arg = cupy.empty((m, n), dtype=cupy.int32)
        _lib.check(dll.tropical_gemm_argmax(s, t, la[0], lb[0], m, n, k, a.data.ptr, la[1], b.data.ptr, lb[1],
                                            c.data.ptr, n, arg.data.ptr, n, stream))
        return c, arg
    _lib.check(dll.tropical_gemm(s, t, la[0], lb[0], m, n, k, None, a.data.ptr, la[1], b.data.ptr, lb[1], None,
                                 c.data.ptr, n, stream))
    return c
