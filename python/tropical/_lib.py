"""libtropical through ctypes: finding the library, the prototypes of the C ABI
(include/tropical/tropical.h), and turning a status into an exception."""

import ctypes
import os
import sys
import threading

from . import _abi
from ._errors import Unavailable, from_status

ABI_VERSION = _abi.ABI_VERSION
SEMIRINGS, DTYPES, OPS = _abi.SEMIRINGS, _abi.DTYPES, _abi.OPS

# name: (argument types, result type) of every function the package needs the library to have; packed
# booleans are bound on first use (tropical._bits).
_PROTOTYPES = {name: proto for name, proto in _abi.PROTOTYPES.items() if name not in _abi.BITS_FUNCTIONS}


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
            for name, (args, result) in _PROTOTYPES.items():
                fn = getattr(dll, name)
                fn.argtypes, fn.restype = args, result
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
