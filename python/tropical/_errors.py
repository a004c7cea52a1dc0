"""The exceptions of the tropical package: one class per status of the C ABI, mirroring
tropical::Error's hierarchy in C++ (include/tropical/error.hpp)."""

from . import _abi


class Error(RuntimeError):
    """Base of every error the library reports; ``str(e)`` is the library's message."""

    status = -1


class InvalidArgument(Error, ValueError):
    """An argument was rejected before any work was queued: shape, dtype, layout, device."""

    status = _abi.ERROR_INVALID_ARGUMENT


class Unavailable(Error):
    """A run-time library (libcuda, libnvrtc, libtropical) or a device the call needs is missing."""

    status = _abi.ERROR_UNAVAILABLE


class CompileError(Error):
    """NVRTC rejected a kernel; the message holds its log."""

    status = _abi.ERROR_COMPILE


class CudaError(Error):
    """A CUDA driver call failed."""

    status = _abi.ERROR_CUDA


class NotInCatalog(Error, TypeError):
    """The catalog has no kernel for this semiring x element type x operation."""

    status = _abi.ERROR_NOT_IN_CATALOG


class OutOfMemory(Error, MemoryError):
    """A host allocation inside the library failed."""

    status = _abi.ERROR_OUT_OF_MEMORY


class InternalError(Error):
    """Anything else: a bug in tropical (please report the message)."""

    status = _abi.ERROR_INTERNAL


_BY_STATUS = {cls.status: cls for cls in (InvalidArgument, Unavailable, CompileError, CudaError, NotInCatalog,
                                          OutOfMemory, InternalError)}


def from_status(status, message):
    """The exception for a non-zero C status with the library's message."""
    return _BY_STATUS.get(status, InternalError)(message or f"tropical: status {status}")
