"""PyTorch face of tropical: custom ops (namespace ``tropical``) with fake-tensor and autograd registrations,
so that ``torch.compile(fullgraph=True)`` traces through them and gradients flow.

    import torch, tropical.torch as tt
    c = tt.maxplus_matmul(a, b)          # 2-D, or batched 3-D (a batch of 1 broadcasts)
    c.sum().backward()                   # dC routed through the argmax

Gradients (the subgradient of the winning term, as the reference library's ``tropical_gemm.pytorch``):
maxplus/minplus add dC to the winning a[i, k*] and b[k*, j]; maxmul scales it by the other factor;
maxmin/minmax give it to the operand the min/max selected (b on ties). Ties in k go to the smallest k.
Launches run on torch's current stream; CPU tensors run on the CPU. Needs torch >= 2.4."""

import torch

from . import _abi, _einsum, _fast, _lib, _ops
from ._errors import Unavailable

if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
    raise ImportError(f"tropical.torch needs torch >= 2.4 (torch.library.custom_op); this is torch {torch.__version__}")

_PRODUCT_ROUTED = ("maxplus", "minplus", "maxmul")

# Every op needs libtropical: load it with the ops (as an extension module would be), so that the first
# product does not pay the loader (libstdc++, libcrypto: a few ms). Without it, the first call says why.
try:
    _lib.lib()
except Unavailable:
    pass


def _product_shape(a, b, semiring):
    """The shape of a (x) b, with the same checks as the kernels' (raised while tracing too)."""
    _ops.semiring_code(semiring)
    if a.dim() not in (2, 3) or b.dim() not in (2, 3):
        raise _ops.InvalidArgument(f"tropical: products take 2-D or 3-D tensors, not {a.dim()}-D and {b.dim()}-D")
    m, k = a.shape[-2], a.shape[-1]
    k2, n = b.shape[-2], b.shape[-1]
    if k != k2:
        raise _ops.InvalidArgument(f"tropical: a is {m} x {k} but b is {k2} x {n} (a's columns must equal b's rows)")
    if a.dtype != b.dtype:
        raise _ops.InvalidArgument(f"tropical: a is {a.dtype} but b is {b.dtype}")
    if a.device != b.device:
        raise _ops.InvalidArgument(f"tropical: a is on {a.device} but b is on {b.device}")
    if a.dim() == 2 and b.dim() == 2:
        return (m, n)
    batch_a = a.shape[0] if a.dim() == 3 else 1
    batch_b = b.shape[0] if b.dim() == 3 else 1
    return (_ops._batch_of(batch_a, batch_b), m, n)


@torch.library.custom_op("tropical::matmul", mutates_args=())
def _matmul(a: torch.Tensor, b: torch.Tensor, semiring: str) -> torch.Tensor:
    return _ops.matmul(a, b, semiring)


@_matmul.register_fake
def _(a, b, semiring):
    return a.new_empty(_product_shape(a, b, semiring))


@torch.library.custom_op("tropical::matmul_argmax", mutates_args=())
def _matmul_argmax(a: torch.Tensor, b: torch.Tensor, semiring: str) -> tuple[torch.Tensor, torch.Tensor]:
    return _ops.matmul_argmax(a, b, semiring)


@_matmul_argmax.register_fake
def _(a, b, semiring):
    shape = _product_shape(a, b, semiring)
    return a.new_empty(shape), a.new_empty(shape, dtype=torch.int32)


@torch.library.custom_op("tropical::backward_a", mutates_args=())
def _backward_a(grad_c: torch.Tensor, argmax: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                semiring: str) -> torch.Tensor:
    return _ops.backward_a(grad_c, argmax, a, b, semiring)


@_backward_a.register_fake
def _(grad_c, argmax, a, b, semiring):
    return a.new_empty(a.shape)


@torch.library.custom_op("tropical::backward_b", mutates_args=())
def _backward_b(grad_c: torch.Tensor, argmax: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                semiring: str) -> torch.Tensor:
    return _ops.backward_b(grad_c, argmax, a, b, semiring)


@_backward_b.register_fake
def _(grad_c, argmax, a, b, semiring):
    return b.new_empty(b.shape)


def _reduce_like(grad, operand):
    """A batched gradient (batch, r, c) summed/reshaped to the operand's shape (a broadcast batch sums)."""
    if operand.dim() == 2:
        return grad.sum(0)
    if operand.shape[0] == 1 and grad.shape[0] != 1:
        return grad.sum(0, keepdim=True)
    return grad


def routed_gradients(grad_c, argmax, a, b, semiring):
    """(dA, dB) of C = a (x) b by dense torch operations: dC(i, j) goes to the winning term a(i, k*) (x)
    b(k*, j) (k* = argmax(i, j); -1: nowhere) as the derivative of that term. The backward of maxmin and
    minmax, and the independent expression the tests compare the kernels' backward with."""
    semiring = semiring.lower()
    g = grad_c if grad_c.dim() == 3 else grad_c.unsqueeze(0)
    arg = argmax if argmax.dim() == 3 else argmax.unsqueeze(0)
    a3 = a if a.dim() == 3 else a.unsqueeze(0)
    b3 = b if b.dim() == 3 else b.unsqueeze(0)
    batch, m, n = g.shape
    k = a3.shape[-1]
    a3, b3 = a3.expand(batch, m, k), b3.expand(batch, k, n)
    valid = arg >= 0
    idx = arg.clamp(min=0).long()
    av = a3.gather(2, idx)  # a(i, k*)
    bv = b3.gather(1, idx)  # b(k*, j)
    zero = torch.zeros((), dtype=g.dtype, device=g.device)
    if semiring in ("maxplus", "minplus"):
        to_a, to_b = torch.where(valid, g, zero), torch.where(valid, g, zero)
    elif semiring == "maxmul":
        to_a, to_b = torch.where(valid, g * bv, zero), torch.where(valid, g * av, zero)
    elif semiring in ("maxmin", "minmax"):
        # The product is min(a, b) (maxmin) or max(a, b) (minmax): the operand it returned gets dC; the
        # kernels return a only if a is NaN or strictly wins, so b gets it on ties (include/tropical/reference.hpp).
        take_a = torch.isnan(av) | ((av < bv) if semiring == "maxmin" else (av > bv))
        to_a, to_b = torch.where(valid & take_a, g, zero), torch.where(valid & ~take_a, g, zero)
    else:
        raise _ops.InvalidArgument(f"tropical: {semiring} has no gradient (andor works on booleans)")
    grad_a = torch.zeros((batch, m, k), dtype=g.dtype, device=g.device).scatter_add_(2, idx, to_a)
    grad_b = torch.zeros((batch, k, n), dtype=g.dtype, device=g.device).scatter_add_(1, idx, to_b)
    return _reduce_like(grad_a, a), _reduce_like(grad_b, b)


def _setup_context(ctx, inputs, output):
    a, b, semiring = inputs
    _, argmax = output
    ctx.save_for_backward(a, b, argmax)
    ctx.semiring = semiring.lower()
    ctx.set_materialize_grads(False)  # no zeros for the argmax's (never used) gradient


def _backward(ctx, grad_c, grad_argmax):
    """The registered op's backward (torch.compile, tracing, modes): through torch.ops.tropical, so that a
    compiled graph holds the backward ops."""
    if grad_c is None:
        return None, None, None
    a, b, argmax = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if ctx.semiring in _PRODUCT_ROUTED:
        grad_a = torch.ops.tropical.backward_a(grad_c, argmax, a, b, ctx.semiring) if need_a else None
        grad_b = torch.ops.tropical.backward_b(grad_c, argmax, a, b, ctx.semiring) if need_b else None
    else:
        grad_a, grad_b = routed_gradients(grad_c, argmax, a, b, ctx.semiring)
    return grad_a, grad_b, None


def _forward_for_grad(ctx, a, b, semiring):
    """(C, argmax) of a product autograd will differentiate; ctx keeps what the backward needs (the operands
    saved, the fast path's layout so the backward does not derive it again)."""
    s = _abi.SEMIRINGS.get(semiring)
    found = _fast.torch_product_for_grad(a, b, s) if s is not None and s not in (_abi.ANDOR, _abi.COUNTING) else None
    if found is None:
        c, argmax = _ops.matmul_argmax(a, b, semiring)
        ctx.layout = None
    else:
        c, argmax, ctx.layout = found
    ctx.semiring = semiring
    ctx.set_materialize_grads(False)
    return c, argmax


def _gradients_for(ctx, grad_c, a, b, argmax):
    """(dA, dB, None) of the product ctx describes (None where an input needs none)."""
    need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if ctx.semiring not in _PRODUCT_ROUTED:
        grad_a, grad_b = routed_gradients(grad_c, argmax, a, b, ctx.semiring)
        return grad_a, grad_b, None
    found = _fast.torch_gradients(grad_c, argmax, a, b, _abi.SEMIRINGS[ctx.semiring], need_a, need_b, ctx.layout)
    if found is None:
        found = (_ops.backward_a(grad_c, argmax, a, b, ctx.semiring) if need_a else None,
                 _ops.backward_b(grad_c, argmax, a, b, ctx.semiring) if need_b else None)
    return found[0], found[1], None


class _Product(torch.autograd.Function):
    """a (x) b and its argmax, differentiable in the product: the eager path of matmul_argmax with gradients.
    The same work as the registered op and its autograd, without the dispatcher's and custom_op's wrappers
    around every call (forward and backward go straight to the library's fast path)."""

    @staticmethod
    def forward(ctx, a, b, semiring):
        c, argmax = _forward_for_grad(ctx, a, b, semiring)
        ctx.save_for_backward(a, b, argmax)
        ctx.mark_non_differentiable(argmax)
        return c, argmax

    @staticmethod
    def backward(ctx, grad_c, grad_argmax):
        if grad_c is None:
            return None, None, None
        a, b, argmax = ctx.saved_tensors
        return _gradients_for(ctx, grad_c, a, b, argmax)


class _Value(torch.autograd.Function):
    """a (x) b alone, differentiable through its argmax, which ctx keeps (it is no output, so autograd tracks
    one output instead of two): the eager path of matmul with gradients."""

    @staticmethod
    def forward(ctx, a, b, semiring):
        c, ctx.argmax = _forward_for_grad(ctx, a, b, semiring)
        ctx.save_for_backward(a, b)
        return c

    @staticmethod
    def backward(ctx, grad_c):
        if grad_c is None:
            return None, None, None
        a, b = ctx.saved_tensors
        return _gradients_for(ctx, grad_c, a, b, ctx.argmax)


_matmul_argmax.register_autograd(_backward, setup_context=_setup_context)

# The overloads themselves: calling them skips two Python frames of the CustomOpDef wrappers per call.
_MATMUL = torch.ops.tropical.matmul.default
_MATMUL_ARGMAX = torch.ops.tropical.matmul_argmax.default


def _probe(path):
    """The torch function at `path` (dotted, from torch), or None where this torch has no such function."""
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_COMPILING = _probe("compiler.is_compiling")
_FUNCTION_MODE = _probe("_C._is_torch_function_mode_enabled")
_DISPATCH_MODES = _probe("_C._len_torch_dispatch_stack")
_FUNCTORCH_WRAPPED = _probe("_C._functorch.is_functorch_wrapped_tensor")
_TRACING = _probe("_C._is_tracing")
_CAN_SKIP = None not in (_COMPILING, _FUNCTION_MODE, _DISPATCH_MODES, _FUNCTORCH_WRAPPED, _TRACING)
_TENSOR = torch.Tensor


def _plain_eager(a, b):
    """True if a call on a and b may skip the dispatcher and run the op's own code: plain tensors (no
    subclass, no functorch wrapper), and no compile, trace, torch-function or dispatch mode that would
    need to see the op. Everything else goes through torch.ops.tropical."""
    return (_CAN_SKIP and type(a) is _TENSOR and type(b) is _TENSOR and not _COMPILING() and not _TRACING()
            and not _FUNCTION_MODE() and _DISPATCH_MODES() == 0 and not _FUNCTORCH_WRAPPED(a)
            and not _FUNCTORCH_WRAPPED(b))


def matmul(a, b, semiring="maxplus"):
    """a (x) b over `semiring` for 2-D or 3-D tensors (a batch of 1 broadcasts), differentiable for floats:
    with gradients enabled and an input that requires them, the forward also tracks the argmax. In plain
    eager code the op's implementation runs directly (the dispatcher costs ~12 us a call); under
    torch.compile, tracing, modes and transforms the call goes through torch.ops.tropical.matmul."""
    plain = _plain_eager(a, b)
    if (a.requires_grad or b.requires_grad) and torch.is_grad_enabled():
        if plain:
            return _Value.apply(a, b, semiring.lower() if isinstance(semiring, str) else semiring)
        return _MATMUL_ARGMAX(a, b, semiring)[0]
    if plain:
        return _ops.matmul(a, b, semiring)
    return _MATMUL(a, b, semiring)


def matmul_argmax(a, b, semiring="maxplus"):
    """(C, argmax) with argmax int32 (the winning k; -1 where none); differentiable in C."""
    if _plain_eager(a, b):
        return _product(a, b, semiring)
    return _MATMUL_ARGMAX(a, b, semiring)


def _product(a, b, semiring):
    """(C, argmax) in plain eager code: the autograd Function where a gradient is wanted, else the call itself."""
    semiring = semiring.lower() if isinstance(semiring, str) else semiring
    if (a.requires_grad or b.requires_grad) and torch.is_grad_enabled():
        return _Product.apply(a, b, semiring)
    return _ops.matmul_argmax(a, b, semiring)


def maxplus_matmul(a, b):
    """C(i, j) = max_k a(i, k) + b(k, j), differentiable."""
    return matmul(a, b, "maxplus")


def minplus_matmul(a, b):
    """C(i, j) = min_k a(i, k) + b(k, j), differentiable."""
    return matmul(a, b, "minplus")


def maxmul_matmul(a, b):
    """C(i, j) = max_k a(i, k) * b(k, j) (non-negative values), differentiable."""
    return matmul(a, b, "maxmul")


def einsum(*args, semiring="maxplus", optimize="greedy", memory_limit=None):
    """tropical.einsum on torch tensors, differentiable: the products are this module's matmul (gradients
    through their argmax) and reductions inside one operand take their winner, ties to the smallest index."""
    return _einsum.torch_einsum(*args, semiring=semiring, optimize=optimize, memory_limit=memory_limit)


# Under torch.compile the plan (plain Python over the equation, the shapes and the path) is made at trace time
# and kept as a constant of the graph, not traced.
_mark_constant = getattr(torch.compiler, "assume_constant_result", None) or torch._dynamo.assume_constant_result
_einsum.COMPILE_PLANNER = _mark_constant(_einsum.plan_of)
