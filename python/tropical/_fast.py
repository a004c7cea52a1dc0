"""The common case of a product, fast: two 2-D torch tensors (or CuPy arrays) of one dtype on one device,
row- or column-major. Everything here is a shortcut of _ops (same checks, same calls); anything unusual
returns None and _ops takes the general path, which also words the errors."""

import sys

from . import _lib

_FLOATS_INTS = ("float32", "float64", "int32", "int64", "int16")
_CODES = {"float32": 0, "float64": 1, "int32": 2, "int64": 3, "uint8": 4, "bool": 4, "int16": 5}
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
        for name in ("float32", "float64", "int32", "int64", "int16", "uint8", "bool"):
            _torch_types[getattr(torch, name)] = name
    return torch


def matrix(rows, cols, s0, s1):
    """(trans, ld) of a non-empty matrix with element strides s0, s1: row-major (unit column stride,
    possibly padded rows) as is, column-major as the transpose of a row-major one; else None. A stride
    of an axis of length 1 means nothing."""
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= cols):
        return 0, (s0 if rows > 1 else cols)
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= rows):
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
    la, lb = matrix(m, k, sa[0], sa[1]), matrix(k, n, sb[0], sb[1])
    if la is None or lb is None:
        return None
    c = a.new_empty((m, n))
    arg = a.new_empty((m, n), dtype=_cache["int32"]) if want_argmax else None
    _launch(s, _CODES[name], la, lb, m, n, k, a.data_ptr(), b.data_ptr(), c.data_ptr(),
            arg.data_ptr() if want_argmax else 0, torch_stream(device) if device >= 0 else None)
    return (c, arg) if want_argmax else c


def _launch(s, t, la, lb, m, n, k, a, b, c, arg, stream):
    """One product (with argmax into `arg` if it is not 0) on the GPU (stream not None) or the CPU."""
    dll = _lib.library.load()
    if stream is None:
        if arg:
            status = dll.tropical_cpu_gemm_argmax(s, t, la[0], lb[0], m, n, k, a, la[1], b, lb[1], c, n, arg, n)
        else:
            status = dll.tropical_cpu_gemm(s, t, la[0], lb[0], m, n, k, None, a, la[1], b, lb[1], None, c, n)
    elif arg:
        status = dll.tropical_gemm_argmax(s, t, la[0], lb[0], m, n, k, a, la[1], b, lb[1], c, n, arg, n, stream)
    else:
        status = dll.tropical_gemm(s, t, la[0], lb[0], m, n, k, None, a, la[1], b, lb[1], None, c, n, stream)
    if status:
        _lib.check(status)


def torch_stream(device):
    """torch's current stream on CUDA device `device`, as a CUstream int."""
    if _torch() is None:
        return 0
    raw = _cache["raw_stream"]
    if raw is not None:
        return raw(device)
    return _cache["torch"].cuda.current_stream(device).cuda_stream


def _cupy():
    """(ndarray, {dtype: (C code, andor?, itemsize)}, the int32 dtype, getDevice, get_current_stream) of CuPy,
    looked up once; None while cupy is not imported."""
    found = _cache.get("cupy")
    if found is None:
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return None
        types = {}
        for name, code in _CODES.items():
            dtype = cupy.dtype(name)
            types[dtype] = (code, name in ("uint8", "bool"), dtype.itemsize)
        found = (cupy.ndarray, types, cupy.dtype("int32"), cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream)
        _cache["cupy"] = found
    return found


def cupy_product(a, b, s, andor, want_argmax):
    """C (and argmax) of two 2-D CuPy arrays, or None for the general path."""
    found = _cache.get("cupy") or _cupy()
    if found is None:
        return None
    ndarray, types, int32, get_device, current_stream = found
    if type(a) is not ndarray or type(b) is not ndarray:
        return None
    dtype = a.dtype
    info = types.get(dtype)  # keyed by the dtype object: dtype.name costs ~3 us a call
    if info is None or info[1] != andor or b.dtype != dtype:
        return None
    shape_a, shape_b = a.shape, b.shape
    if len(shape_a) != 2 or len(shape_b) != 2:
        return None
    device = a.data.device_id
    if device != b.data.device_id:
        return None
    m, k = shape_a
    k2, n = shape_b
    if k != k2 or m == 0 or n == 0 or k == 0:
        return None
    size = info[2]
    sa, sb = a.strides, b.strides
    if (sa[0] | sa[1] | sb[0] | sb[1]) % size:  # a byte stride that is no multiple of the (power of 2) itemsize
        return None
    la, lb = matrix(m, k, sa[0] // size, sa[1] // size), matrix(k, n, sb[0] // size, sb[1] // size)
    if la is None or lb is None:
        return None
    if get_device() != device:
        with sys.modules["cupy"].cuda.Device(device):
            return cupy_product(a, b, s, andor, want_argmax)
    c = ndarray((m, n), dtype)  # cupy.empty((m, n), dtype) without its Python frame
    arg = ndarray((m, n), int32) if want_argmax else None
    _launch(s, info[0], la, lb, m, n, k, a.data.ptr, b.data.ptr, c.data.ptr, arg.data.ptr if want_argmax else 0,
            current_stream().ptr)
    return (c, arg) if want_argmax else c
