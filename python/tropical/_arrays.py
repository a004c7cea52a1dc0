"""Arrays from NumPy, PyTorch, CuPy, and anything with ``__dlpack__`` or ``__cuda_array_interface__``: what
the C ABI needs of them (pointer, device, shape, strides in elements, element type), and new arrays of the
same kind for results. Nothing here imports torch or cupy: a framework is used only if its module is
already loaded by the caller (it made the array)."""

import sys

from . import _abi
from ._errors import InvalidArgument

# element type name -> (C ABI dtype code, bytes); bool is stored as bytes (AndOr).
DTYPE_CODES = {name: (code, _abi.DTYPE_BYTES[code]) for name, code in _abi.DTYPES.items()}
DTYPE_CODES["bool"] = DTYPE_CODES["uint8"]


class Array:
    """One operand as the C ABI sees it. kind: "numpy", "torch" or "cupy"; device: -1 for host memory, else
    the CUDA ordinal; strides in elements (None: a byte stride that is no multiple of the element size);
    aligned: the pointer is aligned for the element type; read_only: why the array must not be written (or
    None); obj: the framework's array (kept alive for the call)."""

    __slots__ = ("kind", "device", "ptr", "shape", "strides", "dtype", "obj", "aligned", "read_only")

    def __init__(self, kind, device, ptr, shape, strides, dtype, obj, aligned=True, read_only=None):
        self.kind, self.device, self.ptr, self.shape, self.strides = kind, device, ptr, shape, strides
        self.dtype, self.obj, self.aligned, self.read_only = dtype, obj, aligned, read_only


def _element_strides(byte_strides, itemsize):
    """Byte strides in elements, or None if one is no multiple of the element size (the array is then
    copied where it is read, and refused where it would be written)."""
    strides = []
    for s in byte_strides:
        if s % itemsize:
            return None
        strides.append(s // itemsize)
    return tuple(strides)


def _from_torch(x, name):
    dtype = str(x.dtype)[6:]  # "torch.float32" -> "float32"
    if dtype not in DTYPE_CODES:
        raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}; supported: float32, float64, int32, int64, "
                              "int16, uint8 and bool")
    device = x.device
    if device.type == "cuda":
        ordinal = device.index if device.index is not None else 0
    elif device.type == "cpu":
        ordinal = -1
    else:
        raise InvalidArgument(f"tropical: {name} is on device '{device}'; supported: cpu and cuda")
    read_only = None
    if x.requires_grad and x.is_leaf:
        read_only = "is a leaf tensor that requires grad (autograd forbids writing it in place)"
    elif x.is_inference() and not sys.modules["torch"].is_inference_mode_enabled():
        read_only = "is an inference tensor (written only inside torch.inference_mode)"
    return Array("torch", ordinal, x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype, x,
                 read_only=read_only)


def _from_numpy(x, name):
    dtype = x.dtype.name
    if dtype not in DTYPE_CODES:
        raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}; supported: float32, float64, int32, int64, "
                              "int16, uint8 and bool")
    if not x.dtype.isnative:
        raise InvalidArgument(f"tropical: {name} is not in the machine's byte order")
    flags = x.flags
    return Array("numpy", -1, x.__array_interface__["data"][0], x.shape, _element_strides(x.strides, x.itemsize),
                 dtype, x, aligned=flags.aligned,
                 read_only=None if flags.writeable else "is read-only (its flags.writeable is False)")


def _from_cupy(x, name):
    dtype = x.dtype.name
    if dtype not in DTYPE_CODES:
        raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}; supported: float32, float64, int32, int64, "
                              "int16, uint8 and bool")
    return Array("cupy", x.device.id, x.data.ptr, x.shape, _element_strides(x.strides, x.itemsize), dtype, x,
                 aligned=x.data.ptr % x.itemsize == 0)


def _kind(x):
    module = type(x).__module__
    if module.startswith("torch"):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):
            return "torch"
    elif module.startswith("numpy"):
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(x, numpy.ndarray):
            return "numpy"
    elif module.startswith("cupy"):
        cupy = sys.modules.get("cupy")
        if cupy is not None and isinstance(x, cupy.ndarray):
            return "cupy"
    return None


def describe(x, name):
    """The Array of operand x (NumPy, torch, CuPy; other DLPack or CUDA-array-interface objects are viewed
    through CuPy or NumPy without a copy)."""
    kind = _kind(x)
    if kind == "torch":
        return _from_torch(x, name)
    if kind == "numpy":
        return _from_numpy(x, name)
    if kind == "cupy":
        return _from_cupy(x, name)
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
        return describe(_view(x, name), name)
    raise InvalidArgument(f"tropical: {name} is a {type(x).__module__}.{type(x).__name__}; pass a NumPy, CuPy or "
                          "PyTorch array, or an object with __dlpack__ or __cuda_array_interface__")


def _view(x, name):
    """A zero-copy CuPy (device memory) or NumPy (host memory) view of a DLPack / CUDA-array-interface object."""
    on_host = False
    if hasattr(x, "__dlpack_device__"):
        device_type = int(x.__dlpack_device__()[0])
        on_host = device_type in (1, 3)  # kDLCPU, kDLCUDAHost
    elif not hasattr(x, "__cuda_array_interface__"):
        on_host = True
    if on_host:
        import numpy
        return numpy.from_dlpack(x)
    try:
        import cupy
    except ImportError as e:
        raise InvalidArgument(f"tropical: {name} is device memory of a {type(x).__name__}; viewing it needs CuPy "
                              "(or pass a torch or CuPy array)") from e
    if hasattr(x, "__cuda_array_interface__"):
        return cupy.asarray(x)
    return cupy.from_dlpack(x)


def contiguous(x, name):
    """A row-major, aligned copy of operand x (made once, where its strides or alignment cannot be passed to the
    C ABI: a non-unit inner stride, negative or broadcast strides, a misaligned NumPy view)."""
    if x.kind == "torch":
        copy = x.obj.contiguous()
        if copy.data_ptr() == x.ptr:  # contiguous already: its strides were the problem (e.g. size-1 axes)
            copy = x.obj.clone(memory_format=sys.modules["torch"].contiguous_format)
    elif x.kind == "cupy":
        cupy = sys.modules["cupy"]
        with x.obj.device:
            copy = cupy.array(x.obj, order="C", copy=True)
    else:
        copy = sys.modules["numpy"].array(x.obj, order="C", copy=True)
    return describe(copy, name)


def empty(like, shape, dtype, zero=False):
    """A new row-major array of `like`'s kind and device, with the given shape and element type name
    (filled with zeros if `zero`)."""
    if like.kind == "torch":
        torch = sys.modules["torch"]
        make = torch.zeros if zero else torch.empty
        return make(shape, dtype=getattr(torch, dtype), device=like.obj.device)
    if like.kind == "cupy":
        cupy = sys.modules["cupy"]
        with like.obj.device:
            return (cupy.zeros if zero else cupy.empty)(shape, dtype=dtype)
    numpy = sys.modules["numpy"]
    return (numpy.zeros if zero else numpy.empty)(shape, dtype=dtype)


def stream_of(array):
    """The framework's current stream on the array's device (a CUstream as an int; 0: the default stream)."""
    if array.kind == "torch":
        from ._fast import torch_stream
        return torch_stream(array.device)
    if array.kind == "cupy":
        cupy = sys.modules["cupy"]
        with array.obj.device:
            return cupy.cuda.get_current_stream().ptr
    return 0
