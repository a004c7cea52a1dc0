"""The library's version, devices and catalog, and warming kernels ahead of their first use."""

import ctypes
import operator

from . import _abi, _lib
from ._errors import InvalidArgument


def _c_int(value, name, low, high):
    """value as an int in [low, high] (what the C parameter holds without wrapping), else InvalidArgument."""
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgument(f"tropical: {name} = {value!r} is not an integer") from None
    if isinstance(value, bool) or not low <= number <= high:
        raise InvalidArgument(f"tropical: {name} = {value!r} is out of range [{low}, {high}]")
    return number


def version():
    """The version of the loaded libtropical ("0.1.0")."""
    return _lib.lib().tropical_version().decode()


def abi_version():
    """The C ABI version of the loaded libtropical."""
    return _lib.lib().tropical_abi_version()


def device_count():
    """Number of CUDA devices the library can use: 0 without a driver or a GPU."""
    return _lib.lib().tropical_device_count()


def has_kernel(semiring, dtype, op="gemm"):
    """True if the catalog has (semiring, dtype, op); dtype a name ("float32"), op one of
    gemm, gemm_argmax, backward_a, backward_b and their _batched forms."""
    dll = _lib.lib()
    s, t, o = _abi.SEMIRINGS.get(str(semiring).lower()), _abi.DTYPES.get(str(dtype)), _abi.OPS.get(op)
    if s is None or t is None or o is None:
        return False
    return bool(dll.tropical_has_kernel(s, t, o))


def kernels():
    """The names of every kernel of the catalog, in id order."""
    dll = _lib.lib()
    return [dll.tropical_kernel_name(i).decode() for i in range(dll.tropical_kernel_count())]


def _kernel_ids(dll, names, what, none_does):
    """The catalog ids of kernel names (a name, a list of names, or None: [], the whole catalog)."""
    if isinstance(names, str):
        names = [names]
    ids = []
    for name in names or []:
        if not isinstance(name, str) or "\0" in name:
            raise InvalidArgument(f"tropical: kernel name {name!r} is not a string without NUL bytes")
        kid = ctypes.c_uint32()
        _lib.check(dll.tropical_kernel_id(name.encode(), ctypes.byref(kid)))
        ids.append(kid.value)
    if names is not None and not ids:
        raise InvalidArgument(f"tropical: {what}() got an empty list of kernels (None {none_does} all)")
    return ids


def warm(names=None, *, arch=0, threads=0):
    """Compiles kernels (names from kernels(), or every kernel if None) for sm_<arch> (0: device 0's) into
    memory and the disk cache, so that their first use in this and later processes is a cache hit; needs
    NVRTC, not a GPU (give arch). Returns (compiled now, already ready)."""
    dll = _lib.lib()
    ids = _kernel_ids(dll, names, "warm", "warms")
    arch = _c_int(arch, "arch", 0, 2**31 - 1)
    threads = _c_int(threads, "threads", 0, 2**32 - 1)
    array = (ctypes.c_uint32 * len(ids))(*ids)
    compiled, ready = ctypes.c_size_t(), ctypes.c_size_t()
    _lib.check(dll.tropical_warm(array, len(ids), arch, threads, ctypes.byref(compiled), ctypes.byref(ready)))
    return compiled.value, ready.value


def publish_cached(names=None, *, arch=0):
    """Publishes to the fleet cache the kernels (names, or every kernel if None) that the disk cache holds
    for sm_<arch> (0: device 0's), that this process did not compile and the fleet lacks: each is compiled
    again and that compile signed and published, never the cached entry. Returns how many were published
    (0 where this node may not publish: no TROPICAL_REMOTE_CACHE or no signing key); needs NVRTC, not a GPU."""
    dll = _lib.lib()
    ids = _kernel_ids(dll, names, "publish_cached", "publishes")
    arch = _c_int(arch, "arch", 0, 2**31 - 1)
    array = (ctypes.c_uint32 * len(ids))(*ids)
    published = ctypes.c_size_t()
    _lib.check(dll.tropical_publish_cached(array, len(ids), arch, ctypes.byref(published)))
    return published.value


def cpu_isa():
    """The instruction set the CPU backend runs on ("avx512", "avx2", "sse4", "scalar", ...)."""
    return _lib.lib().tropical_cpu_isa().decode()


def cpu_threads():
    """The CPU backend's thread count per call."""
    return _lib.lib().tropical_cpu_num_threads()


def set_cpu_threads(n):
    """Sets the CPU backend's thread count (n >= 1), or back to TROPICAL_NUM_THREADS / every core (0)."""
    _lib.check(_lib.lib().tropical_cpu_set_num_threads(_c_int(n, "threads", 0, 2**31 - 1)))
