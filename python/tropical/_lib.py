"""libtropical through ctypes: finding the library, the prototypes of the C ABI
(include/tropical/tropical.h), and turning a status into an exception."""

import ctypes
import os
import sys
import threading

from ._errors import Unavailable, from_status

ABI_VERSION = 1

SEMIRINGS = {"maxplus": 0, "minplus": 1, "maxmul": 2, "maxmin": 3, "minmax": 4, "andor": 5, "counting": 6}
DTYPES = {"float32": 0, "float64": 1, "int32": 2, "int64": 3, "uint8": 4, "int16": 5}
OPS = {"gemm": 0, "gemm_argmax": 1, "backward_a": 2, "backward_b": 3, "gemm_batched": 4,
       "gemm_batched_argmax": 5, "backward_a_batched": 6, "backward_b_batched": 7}

_i64, _p, _i32p, _i = ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int
_E = ctypes.c_int  # enums

# name: argument types (the result is a tropical_status unless listed in _RESULTS).
_PROTOTYPES = {
    "tropical_last_error": [],
    "tropical_version": [],
    "tropical_abi_version": [],
    "tropical_device_count": [],
    "tropical_device_arch": [_i, ctypes.POINTER(ctypes.c_int)],
    "tropical_has_kernel": [_E, _E, _E],
    "tropical_cpu_has_kernel": [_E, _E, _E],
    "tropical_kernel_count": [],
    "tropical_cpu_set_num_threads": [_i],
    "tropical_cpu_num_threads": [],
    "tropical_cpu_isa": [],
    "tropical_kernel_name": [ctypes.c_uint32],
    "tropical_kernel_id": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)],
    "tropical_find_kernel": [_E, _E, _E, ctypes.POINTER(ctypes.c_uint32)],
    "tropical_warm": [ctypes.POINTER(ctypes.c_uint32), ctypes.c_size_t, _i, ctypes.c_uint,
                      ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
    "tropical_publish_cached": [ctypes.POINTER(ctypes.c_uint32), ctypes.c_size_t, _i,
                                ctypes.POINTER(ctypes.c_size_t)],
}
_GEMM = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _p, _i64]
_ARGMAX = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _i64, _p, _i64, _p, _i64, _i32p, _i64]
_BACKWARD = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _i64, _i32p, _i64, _p, _i64, _p, _i64]
_GEMM_BATCHED = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _p, _i64, _i64, _p, _i64, _i64, _p, _p, _i64, _i64, _i64]
_ARGMAX_BATCHED = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _i64, _i64, _p, _i64, _i64, _p, _i64, _i64, _i32p, _i64,
                   _i64, _i64]
_BACKWARD_BATCHED = [_E, _E, _E, _E, _i64, _i64, _i64, _p, _i64, _i64, _i32p, _i64, _i64, _p, _i64, _i64, _p, _i64,
                     _i64, _i64]
_COUNTING = [_E, _E, _E, _i64, _i64, _i64] + [_p, _i64] * 6
_COUNTING_BATCHED = [_E, _E, _E, _i64, _i64, _i64] + [_p, _i64, _i64] * 6 + [_i64]
for _prefix, _extra in (("tropical_", [_p]), ("tropical_cpu_", [])):
    _PROTOTYPES[_prefix + "gemm"] = _GEMM + _extra
    _PROTOTYPES[_prefix + "gemm_argmax"] = _ARGMAX + _extra
    _PROTOTYPES[_prefix + "backward_a"] = _BACKWARD + _extra
    _PROTOTYPES[_prefix + "backward_b"] = _BACKWARD + _extra
    _PROTOTYPES[_prefix + "gemm_batched"] = _GEMM_BATCHED + _extra
    _PROTOTYPES[_prefix + "gemm_batched_argmax"] = _ARGMAX_BATCHED + _extra
    _PROTOTYPES[_prefix + "backward_a_batched"] = _BACKWARD_BATCHED + _extra
    _PROTOTYPES[_prefix + "backward_b_batched"] = _BACKWARD_BATCHED + _extra
    _PROTOTYPES[_prefix + "counting_gemm"] = _COUNTING + _extra
    _PROTOTYPES[_prefix + "counting_gemm_batched"] = _COUNTING_BATCHED + _extra

_RESULTS = {
    "tropical_last_error": ctypes.c_char_p,
    "tropical_version": ctypes.c_char_p,
    "tropical_abi_version": ctypes.c_int,
    "tropical_device_count": ctypes.c_int,
    "tropical_has_kernel": ctypes.c_int,
    "tropical_cpu_has_kernel": ctypes.c_int,
    "tropical_kernel_count": ctypes.c_uint32,
    "tropical_cpu_num_threads": ctypes.c_int,
    "tropical_cpu_isa": ctypes.c_char_p,
    "tropical_kernel_name": ctypes.c_char_p,
}


def _candidates():
    """Where libtropical may be, in order: $TROPICAL_LIBRARY, the wheel's own copy inside the package, the
    install's libdir, the loader's path."""
    explicit = os.environ.get("TROPICAL_LIBRARY")
    if explicit:
        return [explicit]
    found = []
    try:
        from . import _install  # written by meson at install time
    except ImportError:
        _install = None
    here = os.path.dirname(os.path.abspath(__file__))
    if _install is not None and getattr(_install, "PACKAGE_LIBDIR", ""):
        candidate = os.path.join(here, _install.PACKAGE_LIBDIR, _install.LIBRARY)
        if os.path.exists(candidate):
            found.append(candidate)
    elif _install is not None:
        # Walk up from the package: <prefix>/<purelib>/tropical -> <prefix>/<libdir>/<name>, so a moved
        # prefix still finds its own library.
        parent = here
        while True:
            parent, tail = os.path.split(parent)
            candidate = os.path.join(parent, _install.LIBDIR, _install.LIBRARY)
            if os.path.exists(candidate):
                found.append(candidate)
                break
            if not tail:
                break
    found.append("libtropical.so.0")
    return found


# Where the nvidia-cuda-nvrtc wheel puts libnvrtc under a site directory: CUDA 13's wheels share
# nvidia/cu13/lib, earlier ones had a directory per component.
_NVRTC_WHEEL_PATHS = (("nvidia", "cu13", "lib", "libnvrtc.so.13"), ("nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.13"))


def _wheel_nvrtc(paths=None):
    """The libnvrtc.so.13 of an installed nvidia-cuda-nvrtc wheel on the import path (sys.path), or None; the
    current directory ("" on the path) is not searched: no library is loaded from wherever Python was started."""
    for entry in sys.path if paths is None else paths:
        if not entry:
            continue
        for parts in _NVRTC_WHEEL_PATHS:
            candidate = os.path.join(entry, *parts)
            if os.path.isfile(candidate):
                return os.path.abspath(candidate)
    return None


def _use_wheel_nvrtc():
    """Points the library at a pip-installed NVRTC when $TROPICAL_NVRTC is unset: the library reads
    $TROPICAL_NVRTC on its first compile and otherwise looks in the CUDA toolkit it was built against, which a
    machine with only pip's CUDA wheels (torch's, say) lacks. Sets os.environ, so child processes agree."""
    if os.environ.get("TROPICAL_NVRTC"):
        return
    found = _wheel_nvrtc()
    if found is not None:
        os.environ["TROPICAL_NVRTC"] = found


class _Library:
    """The loaded libtropical with its prototypes; load() raises Unavailable with every place tried."""

    def __init__(self):
        self._lock = threading.Lock()
        self._dll = None

    def load(self):
        dll = self._dll
        if dll is not None:
            return dll
        with self._lock:
            if self._dll is None:
                self._dll = self._open()
            return self._dll

    @staticmethod
    def _open():
        _use_wheel_nvrtc()
        errors = []
        for path in _candidates():
            try:
                dll = ctypes.CDLL(path)
            except OSError as e:
                errors.append(f"{path}: {e}")
                continue
            missing = [name for name in _PROTOTYPES if not hasattr(dll, name)]
            if missing:
                errors.append(f"{path}: not libtropical (no {', '.join(missing[:3])}"
                              + (f" and {len(missing) - 3} more" if len(missing) > 3 else "") + ")")
                continue
            for name, args in _PROTOTYPES.items():
                fn = getattr(dll, name)
                fn.argtypes = args
                fn.restype = _RESULTS.get(name, ctypes.c_int)
            abi = dll.tropical_abi_version()
            if abi != ABI_VERSION:
                raise Unavailable(f"tropical: {path} has C ABI version {abi}, this package needs {ABI_VERSION}")
            return dll
        raise Unavailable("tropical: cannot load libtropical (set TROPICAL_LIBRARY to its path); tried "
                          + "; ".join(errors))


library = _Library()


def lib():
    """The loaded library (raises Unavailable if it cannot be found)."""
    return library.load()


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def path():
    """The file of the loaded libtropical, resolved (the loader's answer where it was found by soname)."""
    dll = lib()
    for libc in (None, "libdl.so.2"):
        try:
            dladdr = ctypes.CDLL(libc).dladdr
        except (OSError, AttributeError):
            continue
        info = _DlInfo()
        if dladdr(ctypes.cast(dll.tropical_version, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    return os.path.realpath(dll._name)


def check(status):
    """Raises the exception of a non-zero status with the thread's message from the library."""
    if status:
        message = library.load().tropical_last_error()
        raise from_status(status, message.decode("utf-8", "replace") if message else "")
