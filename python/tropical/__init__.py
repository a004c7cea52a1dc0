"""tropical: tropical-semiring matrix products (max-plus, min-plus, max-times, max-min, min-max, and-or) on
NVIDIA GPUs and CPUs, for NumPy, PyTorch and CuPy arrays.

    import numpy as np, tropical
    c = tropical.matmul(a, b, "maxplus")              # c[i, j] = max_k a[i, k] + b[k, j]
    c, k = tropical.matmul_argmax(a, b, "minplus")     # and the winning k
    v, n = tropical.counting_matmul(va, ca, vb, cb)    # CountingTropical: best values and their counts

Pure Python over libtropical's C ABI (ctypes): device arrays (torch, CuPy) run on their GPU on the
framework's current stream, host arrays (NumPy, CPU tensors) on the CPU, with the same semantics
(include/tropical/reference.hpp). PyTorch autograd and torch.compile: ``import tropical.torch``.
``import tropical`` imports neither torch nor CuPy."""

from . import _abi_path

_abi = _abi_path.load()  # the generated module of the C ABI (build directory or install: _abi_path)

from ._errors import (CompileError, CudaError, Error, InternalError, InvalidArgument, NotInCatalog, OutOfMemory,
                      Unavailable)
from ._bits import bits_ld, bits_matmul, closure, pack_bits, unpack_bits
from ._counting import counting_matmul
from ._einsum import TreeSA, counting_einsum, einsum, einsum_argmax, einsum_path
from ._ops import backward_a, backward_b, matmul, matmul_argmax
from ._runtime import (abi_version, cpu_isa, cpu_threads, device_count, has_kernel, kernels, publish_cached,
                       set_cpu_threads, version, warm)

# The semirings of matmul and its kin (CountingTropical has calls of its own: counting_matmul).
SEMIRINGS = tuple(name for name, code in _abi.SEMIRINGS.items() if code != _abi.COUNTING)

__all__ = ["matmul", "matmul_argmax", "counting_matmul", "backward_a", "backward_b", "warm", "publish_cached", "version", "abi_version",
           "device_count", "has_kernel", "kernels", "cpu_isa", "cpu_threads", "set_cpu_threads", "SEMIRINGS", "Error", "InvalidArgument", "Unavailable",
           "CompileError", "CudaError", "NotInCatalog", "OutOfMemory", "InternalError",
           "einsum", "einsum_argmax", "counting_einsum", "einsum_path", "TreeSA",
           "pack_bits", "unpack_bits", "bits_ld", "bits_matmul", "closure"]
