"""The array operations the einsum executor needs, on the operands' own framework: NumPy and CuPy share one
adapter (CuPy mirrors NumPy's API), torch has its own. Products go through tropical's kernels; everything
else (permutes, diagonals, reductions inside one operand, gathers of the traceback) through the framework.
The semiring addition of the reductions follows include/tropical/reference.hpp: a NaN never wins."""

import sys

from . import _counting, _ops

MINIMIZING = ("minplus", "minmax")
# A product with more rows than this (and fewer columns) runs as its transpose, Cᵀ = Bᵀ Aᵀ (free: transposes
# and strides are passed, not copied): a launch covers at most 65535 row tiles but 2^31 column tiles, and graph
# networks make products of millions of rows and a few columns.
TALL = 1 << 18


def _tall(a, b):
    return a.shape[-2] > TALL and b.shape[-1] < a.shape[-2]


class NumpyLike:
    """NumPy (host) or CuPy (device) arrays: `xp` is the module."""

    compiling = False  # True while torch.compile traces (no memo is kept then)

    def __init__(self, xp, differentiable=False):
        self.xp = xp
        self.differentiable = differentiable

    # layout
    def permute(self, x, perm):
        return x.transpose(perm)

    def swap_last(self, x):
        return x.swapaxes(-1, -2)

    def contiguous(self, x):
        if x.ndim == 0:  # ascontiguousarray makes 0-d arrays 1-d
            return self.xp.asarray(x)
        return self.xp.ascontiguousarray(x)

    def strides(self, x):
        return tuple(s // x.itemsize for s in x.strides)

    def numel(self, x):
        return x.size

    # elementwise
    def is_float(self, x):
        return x.dtype.kind == "f"

    def zero_like(self, x, semiring):
        """The semiring zero of x's element type, as a 0-d array of it."""
        xp, dtype = self.xp, x.dtype
        if semiring in ("maxmul", "andor"):
            return xp.zeros((), dtype)
        low = semiring not in MINIMIZING
        if dtype.kind == "f":
            return xp.asarray(-xp.inf if low else xp.inf, dtype=dtype)
        info = xp.iinfo(dtype)
        return xp.asarray(info.min if low else info.max, dtype=dtype)

    def where(self, cond, a, b):
        return self.xp.where(cond, a, b)

    def isnan(self, x):
        return self.xp.isnan(x)

    def fmax(self, a, b):
        return self.xp.fmax(a, b)

    def fmin(self, a, b):
        return self.xp.fmin(a, b)

    def logical_or(self, a, b, dtype_of):
        return self.xp.logical_or(a != 0, b != 0).astype(dtype_of.dtype)

    # reductions (axes: a tuple)
    def amax(self, x, axes, keepdims=False):
        return x.max(axis=axes, keepdims=keepdims)

    def amin(self, x, axes, keepdims=False):
        return x.min(axis=axes, keepdims=keepdims)

    def any(self, x, axes):
        return (x != 0).any(axis=axes).astype(x.dtype)

    def sum(self, x, axes, keepdims=False):
        return x.sum(axis=axes, keepdims=keepdims)

    def argbest_last(self, x, minimize):
        return (x.argmin(-1) if minimize else x.argmax(-1)).astype("int64")

    # indices
    def arange(self, n, like):
        return self.xp.arange(n, dtype="int64")

    def zeros_index(self, like):
        return self.xp.zeros((), dtype="int64")

    def zeros_indices(self, shape, like):
        return self.xp.zeros(shape, dtype="int64")

    def index_array(self, values, like):
        return self.xp.asarray(values, dtype="int64")

    def take_flat(self, x, flat):
        return x.reshape(-1)[flat].astype("int64")

    def gather_last(self, x, index):
        return self.xp.take_along_axis(x, index[..., None], -1)[..., 0]

    def clamp_min0(self, x):
        return self.xp.maximum(x, 0)

    def element(self, x, position):
        """The element at flat position of a contiguous integer array, as a Python int."""
        return int(x.reshape(-1)[position])

    def elements(self, reads):
        """[element(x, position) for (x, position) in reads], read together (one transfer on a GPU)."""
        if not reads or self.xp.__name__ == "numpy":
            return [self.element(x, position) for x, position in reads]
        return [int(v) for v in self.xp.stack([x.reshape(-1)[position] for x, position in reads]).get()]

    # products
    def matmul(self, a, b, semiring):
        if _tall(a, b):
            return self.swap_last(self.matmul(self.swap_last(b), self.swap_last(a), semiring))
        return _ops.matmul(a, b, semiring)

    def matmul_argmax(self, a, b, semiring):
        if _tall(a, b):
            c, arg = _ops.matmul_argmax(self.swap_last(b), self.swap_last(a), semiring)
            return self.swap_last(c), self.swap_last(arg)
        return _ops.matmul_argmax(a, b, semiring)

    def counting_matmul(self, va, ca, vb, cb):
        if _tall(va, vb):
            t = self.swap_last
            v, c = _counting.counting_matmul(t(vb), t(cb), t(va), t(ca))
            return t(v), t(c)
        return _counting.counting_matmul(va, ca, vb, cb)


class Torch(NumpyLike):
    """torch tensors (CPU or CUDA); differentiable: products through tropical.torch's autograd ops."""

    def __init__(self, differentiable=False):
        self.torch = sys.modules["torch"]
        compiler = getattr(self.torch, "compiler", None)  # torch < 2.1 has none (and compiles nothing of ours)
        self.compiling = bool(compiler is not None and compiler.is_compiling())
        self.differentiable = differentiable

    def permute(self, x, perm):
        return x.permute(*perm) if perm else x

    def swap_last(self, x):
        return x.transpose(-1, -2)

    def contiguous(self, x):
        return x.contiguous()

    def strides(self, x):
        return tuple(x.stride())

    def numel(self, x):
        return x.numel()

    def is_float(self, x):
        return x.dtype.is_floating_point

    def zero_like(self, x, semiring):
        torch, dtype = self.torch, x.dtype
        if semiring in ("maxmul", "andor"):
            value = 0
        else:
            low = semiring not in MINIMIZING
            if dtype.is_floating_point:
                value = -float("inf") if low else float("inf")
            else:
                info = torch.iinfo(dtype)
                value = info.min if low else info.max
        return torch.full((), value, dtype=dtype, device=x.device)

    def where(self, cond, a, b):
        return self.torch.where(cond, a, b)

    def isnan(self, x):
        return self.torch.isnan(x)

    def fmax(self, a, b):
        return self.torch.fmax(a, b)

    def fmin(self, a, b):
        return self.torch.fmin(a, b)

    def logical_or(self, a, b, dtype_of):
        return self.torch.logical_or(a != 0, b != 0).to(dtype_of.dtype)

    def amax(self, x, axes, keepdims=False):
        return x.amax(dim=axes, keepdim=keepdims)

    def amin(self, x, axes, keepdims=False):
        return x.amin(dim=axes, keepdim=keepdims)

    def any(self, x, axes):
        y = x != 0
        for axis in sorted(axes, reverse=True):
            y = y.any(dim=axis)
        return y.to(x.dtype)

    def sum(self, x, axes, keepdims=False):
        return x.sum(dim=axes, keepdim=keepdims)

    def argbest_last(self, x, minimize):
        if x.dtype == self.torch.bool:
            x = x.to(self.torch.uint8)
        return x.argmin(-1) if minimize else x.argmax(-1)

    def arange(self, n, like):
        return self.torch.arange(n, dtype=self.torch.int64, device=like.device)

    def zeros_index(self, like):
        return self.torch.zeros((), dtype=self.torch.int64, device=like.device)

    def zeros_indices(self, shape, like):
        return self.torch.zeros(shape, dtype=self.torch.int64, device=like.device)

    def index_array(self, values, like):
        return self.torch.tensor(values, dtype=self.torch.int64, device=like.device)

    def take_flat(self, x, flat):
        return x.reshape(-1)[flat].long()

    def gather_last(self, x, index):
        return x.gather(-1, index.unsqueeze(-1)).squeeze(-1)

    def clamp_min0(self, x):
        return x.clamp(min=0)

    def element(self, x, position):
        return int(x.reshape(-1)[position].item())

    def elements(self, reads):
        if not reads:
            return []
        return self.torch.stack([x.reshape(-1)[position] for x, position in reads]).tolist()

    def matmul(self, a, b, semiring):
        if self.differentiable:
            from . import torch as tropical_torch
            if _tall(a, b):
                return tropical_torch.matmul(b.mT, a.mT, semiring).mT
            return tropical_torch.matmul(a, b, semiring)
        return NumpyLike.matmul(self, a, b, semiring)


def adapter(x, differentiable=False):
    """The adapter of operand x's framework."""
    module = type(x).__module__
    if module.startswith("torch"):
        return Torch(differentiable)
    if module.startswith("cupy"):
        return NumpyLike(sys.modules["cupy"])
    return NumpyLike(sys.modules["numpy"])
