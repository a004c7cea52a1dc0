"""The products on any supported array: shapes, strides and dtypes checked here (clear exceptions), mapped
onto the C ABI's transposes, leading dimensions and batch strides, then one call into libtropical on the array's
device (the GPU on the framework's current stream, or the CPU).

Inputs may have any strides: a 2-D view with a unit stride in either axis (row- or column-major, padded rows or
columns) and a non-negative batch stride (0 broadcasts) are passed as they are; any other view (a non-unit inner
stride, negative strides, stride-0 rows, a misaligned NumPy view) is copied once to a contiguous array. Outputs
are new row-major arrays, or out=: then it must be writable, of the result's shape and dtype, aligned, with a unit
column stride, rows at least its width apart and (3-D) a batch stride that keeps the products apart; nothing is
copied into or out of it."""

import ctypes
import operator

from . import _abi, _arrays, _fast, _lib
from ._errors import InvalidArgument, NotInCatalog

_SCALARS = {_abi.F32: ctypes.c_float, _abi.F64: ctypes.c_double, _abi.I32: ctypes.c_int32, _abi.I64: ctypes.c_int64,
            _abi.U8: ctypes.c_uint8, _abi.I16: ctypes.c_int16}
_ORDERED = ("float32", "float64", "int32", "int64", "int16")
_DIFFERENTIABLE = ("maxplus", "minplus", "maxmul")


def semiring_code(semiring):
    """The C ABI's code of a semiring name (case-insensitive)."""
    try:
        return _abi.SEMIRINGS[semiring.lower()]
    except (KeyError, AttributeError):
        raise InvalidArgument(f"tropical: unknown semiring {semiring!r}; one of "
                              + ", ".join(_abi.SEMIRINGS)) from None


def _dtype_code(semiring, dtype):
    if semiring == "counting":
        raise InvalidArgument("tropical: counting products take values and counts: call "
                              "tropical.counting_matmul(values_a, counts_a, values_b, counts_b)")
    if semiring == "andor":
        if dtype not in ("uint8", "bool"):
            raise NotInCatalog(f"tropical: andor works on uint8 or bool arrays, not {dtype}")
    elif dtype not in _ORDERED:
        raise NotInCatalog(f"tropical: {semiring} works on float32, float64, int32, int64 or int16 arrays, "
                           f"not {dtype}")
    return _arrays.DTYPE_CODES[dtype][0]


def _check_together(named):
    """All operands of one call: the same kind of array, the same device."""
    (name0, x0) = named[0]
    for name, x in named[1:]:
        if x.kind != x0.kind:
            raise InvalidArgument(f"tropical: {name} is a {x.kind} array but {name0} is a {x0.kind} array; "
                                  "pass arrays of one framework")
        if x.device != x0.device:
            where = lambda d: "host memory" if d < 0 else f"CUDA device {d}"  # noqa: E731
            raise InvalidArgument(f"tropical: {name} is in {where(x.device)} but {name0} is in "
                                  f"{where(x0.device)}")


def layout(shape, strides, name):
    """(trans, ld) of a 2-D view: row-major (unit column stride) is as is, column-major (unit row stride) is
    the transpose of a row-major matrix; anything else is refused (copy it with .copy() / .contiguous())."""
    rows, cols = shape
    if rows == 0 or cols == 0:
        return 0, max(cols, 1)
    found = _fast.matrix(rows, cols, strides[0], strides[1])
    if found is not None:
        return found
    raise InvalidArgument(f"tropical: {name} has strides {tuple(strides)} (in elements) for shape {tuple(shape)}: "
                          "one of its two strides must be 1 and the other at least the extent of that axis "
                          "(row- or column-major, possibly padded); make a contiguous copy first")


def _mappable(x):
    """True if operand x can be passed as it is (aligned, element strides, a matrix layout, batch stride >= 0)."""
    if not x.aligned or x.strides is None:
        return False
    if len(x.shape) not in (2, 3) or 0 in x.shape:
        return True  # _matrices words the error; an empty operand is never read
    return _fast.operand(x.shape, x.strides) is not None


def readable(x, name):
    """Operand x as the C ABI can read it: as it is, or copied once to a contiguous array."""
    return x if _mappable(x) else _arrays.contiguous(x, name)


def _matrices(x, name):
    """(batch, batch stride, (rows, cols), strides of one matrix) of a 2-D or 3-D operand."""
    ndim = len(x.shape)
    if ndim == 2:
        return 1, 0, x.shape, x.strides
    if ndim == 3:
        batch = x.shape[0]
        if batch == 0:  # nothing is read: any strides will do
            return 0, 0, x.shape[1:], (max(x.shape[2], 1), 1)
        stride = x.strides[0] if batch > 1 else 0
        if stride < 0:
            raise InvalidArgument(f"tropical: {name} has a negative batch stride")
        return batch, stride, x.shape[1:], x.strides[1:]
    raise InvalidArgument(f"tropical: {name} is {ndim}-D; products take 2-D matrices or 3-D batches of them "
                          "(reshape a vector to 1 x n or n x 1)")


def _batch_of(batch_a, batch_b):
    if batch_a == batch_b or batch_b == 1:
        return batch_a
    if batch_a == 1:
        return batch_b
    raise InvalidArgument(f"tropical: batch sizes {batch_a} and {batch_b} differ (a batch of 1 broadcasts)")


def _output(out, like, shape, dtype, name):
    """out checked (kind, device, writable, dtype, shape, row-major), or a new array; returns (Array, ld, batch
    stride)."""
    if out is None:
        out = _arrays.empty(like, shape, dtype)
    x = _arrays.describe(out, name)
    _check_together([("a", like), (name, x)])
    if x.read_only:
        raise InvalidArgument(f"tropical: {name} {x.read_only}; pass a writable array, or none for a new one")
    if not x.aligned or x.strides is None:
        raise InvalidArgument(f"tropical: {name} is not aligned for its {x.dtype} elements; pass an aligned array")
    if x.dtype != dtype and not (dtype in ("uint8", "bool") and x.dtype in ("uint8", "bool")):
        raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}, the product needs {dtype}")
    ld, stride = _row_major(x, shape, name)
    return x, ld, stride


_NAMES = {code: name for name, code in _abi.DTYPES.items()}
_RANGES = {_abi.I32: (-2**31, 2**31 - 1), _abi.I64: (-2**63, 2**63 - 1), _abi.U8: (0, 255),
           _abi.I16: (-2**15, 2**15 - 1)}


def _scalar(code, value, name="alpha"):
    """alpha or beta as a C scalar of element type `code`, by reference (None stays None); a value the element
    type cannot hold exactly (an integer out of range, a fraction for integers, a non-number) is refused."""
    if value is None:
        return None
    if code in _RANGES:
        try:
            number = operator.index(value)
        except TypeError:
            number = None
            if isinstance(value, float) and value.is_integer():
                number = int(value)
        low, high = _RANGES[code]
        if number is None or isinstance(value, bool) or not low <= number <= high:
            raise InvalidArgument(f"tropical: {name} = {value!r} is not an integer in {_NAMES[code]}'s range "
                                  f"[{low}, {high}]")
        return ctypes.byref(_SCALARS[code](number))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"tropical: {name} = {value!r} is not a real number ({_NAMES[code]})") from None
    return ctypes.byref(_SCALARS[code](number))


class _Product:
    """The checked operands of C = op(A) (x) op(B), batched or not."""

    def __init__(self, a, b, semiring):
        self.semiring = semiring.lower() if isinstance(semiring, str) else semiring
        self.s = semiring_code(semiring)
        self.a, self.b = _arrays.describe(a, "a"), _arrays.describe(b, "b")
        _check_together([("a", self.a), ("b", self.b)])
        self.a, self.b = readable(self.a, "a"), readable(self.b, "b")
        if self.a.dtype != self.b.dtype:
            raise InvalidArgument(f"tropical: a is {self.a.dtype} but b is {self.b.dtype}")
        self.t = _dtype_code(self.semiring, self.a.dtype)
        batch_a, self.stride_a, (self.m, self.k), strides_a = _matrices(self.a, "a")
        batch_b, self.stride_b, (k, self.n), strides_b = _matrices(self.b, "b")
        if k != self.k:
            raise InvalidArgument(f"tropical: a is {self.m} x {self.k} but b is {k} x {self.n} "
                                  "(a's columns must equal b's rows)")
        self.batched = len(self.a.shape) == 3 or len(self.b.shape) == 3
        self.batch = _batch_of(batch_a, batch_b)
        self.batch_a, self.batch_b = batch_a, batch_b
        self.ta, self.lda = layout((self.m, self.k), strides_a, "a")
        self.tb, self.ldb = layout((self.k, self.n), strides_b, "b")
        self.shape = (self.batch, self.m, self.n) if self.batched else (self.m, self.n)
        self.empty = self.m == 0 or self.n == 0 or self.batch == 0

    def call(self, name, *args):
        """Calls tropical_<name> (GPU, on the current stream) or tropical_cpu_<name>, raising on failure."""
        dll = _lib.lib()
        if self.a.device >= 0:
            _lib.check(getattr(dll, "tropical_" + name)(*args, _arrays.stream_of(self.a)))
        else:
            _lib.check(getattr(dll, "tropical_cpu_" + name)(*args))


def _shortcut(a, b, semiring, want_argmax):
    """The common case through _fast (plain 2-D or 3-D torch or CuPy operands), or None."""
    s = _abi.SEMIRINGS.get(semiring)
    if s is None or s == _abi.COUNTING:
        return None
    module = type(a).__module__
    if module == "torch":
        return _fast.torch_product(a, b, s, s == _abi.ANDOR, want_argmax)
    if module.startswith("cupy"):
        return _fast.cupy_product(a, b, s, s == _abi.ANDOR, want_argmax)
    return None


def matmul(a, b, semiring="maxplus", *, alpha=None, beta=None, out=None):
    """C = alpha (x) (a (x) b) (+) beta (x) out over `semiring`; 2-D (m x k times k x n) or batched 3-D
    (a batch of 1 broadcasts). alpha/beta are scalars of the element type, in the semiring's own arithmetic:
    alpha = the semiring's one changes nothing, beta = its zero ignores out (maxplus: one 0, zero -inf;
    minplus: 0, +inf; maxmul: 1, 0; maxmin: +inf, -inf; minmax: -inf, +inf; andor: 1, 0; integers: the type's
    extremes for the infinities), not BLAS's 1 and 0; None means no scaling. beta needs out=, which is then
    read and written in place; a value the element type cannot hold is InvalidArgument. Returns an array of
    a's kind on a's device."""
    if out is None and alpha is None and beta is None:
        result = _shortcut(a, b, semiring, False)
        if result is not None:
            return result
    p = _Product(a, b, semiring)
    if beta is not None and out is None:
        raise InvalidArgument("tropical: beta needs out= (the C it scales)")
    alpha, beta = _scalar(p.t, alpha, "alpha"), _scalar(p.t, beta, "beta")
    c, ldc, stride_c = _output(out, p.a, p.shape, p.a.dtype, "out")
    if p.empty:
        return c.obj
    if p.batched:
        p.call("gemm_batched", p.s, p.t, p.ta, p.tb, p.m, p.n, p.k, alpha, p.a.ptr, p.lda,
               p.stride_a, p.b.ptr, p.ldb, p.stride_b, beta, c.ptr, ldc, stride_c, p.batch)
    else:
        p.call("gemm", p.s, p.t, p.ta, p.tb, p.m, p.n, p.k, alpha, p.a.ptr, p.lda, p.b.ptr, p.ldb, beta, c.ptr, ldc)
    return c.obj


def matmul_argmax(a, b, semiring="maxplus", *, out=None, out_argmax=None):
    """(C, argmax) with C = a (x) b and argmax (int32, C's shape) the k of the winning product, ties to the
    smallest k, -1 where no product beats the semiring zero; 2-D or batched 3-D like matmul."""
    if out is None and out_argmax is None:
        result = _shortcut(a, b, semiring, True)
        if result is not None:
            return result
    p = _Product(a, b, semiring)
    c, ldc, stride_c = _output(out, p.a, p.shape, p.a.dtype, "out")
    arg, ldarg, stride_arg = _output(out_argmax, p.a, p.shape, "int32", "out_argmax")
    if p.empty:
        return c.obj, arg.obj
    if p.batched:
        p.call("gemm_batched_argmax", p.s, p.t, p.ta, p.tb, p.m, p.n, p.k, p.a.ptr, p.lda, p.stride_a, p.b.ptr,
               p.ldb, p.stride_b, c.ptr, ldc, stride_c, arg.ptr, ldarg, stride_arg, p.batch)
    else:
        p.call("gemm_argmax", p.s, p.t, p.ta, p.tb, p.m, p.n, p.k, p.a.ptr, p.lda, p.b.ptr, p.ldb, c.ptr, ldc,
               arg.ptr, ldarg)
    return c.obj, arg.obj


def _row_major(x, shape, name):
    """ld and batch stride of an output, or of grad_c or argmax (made row-major by _rows_readable), which must
    have the product's shape and unit column stride."""
    if tuple(x.shape) != tuple(shape):
        raise InvalidArgument(f"tropical: {name} has shape {tuple(x.shape)}, the product has {tuple(shape)}")
    rows, cols = shape[-2], shape[-1]
    s0, s1 = x.strides[-2], x.strides[-1]
    if all(shape) and ((s1 != 1 and cols > 1) or (s0 < cols and rows > 1)):
        raise InvalidArgument(f"tropical: {name} must be row-major with unit column stride (strides {x.strides})")
    if len(shape) == 3 and shape[0] > 1 and all(shape) and x.strides[0] < 0:
        raise InvalidArgument(f"tropical: {name} has a negative batch stride")
    stride = x.strides[0] if len(shape) == 3 and shape[0] > 1 else 0
    return (s0 if rows > 1 else max(cols, 1)), stride


def _rows_readable(x, name):
    """grad_c or argmax as the C ABI reads them (unit column stride, rows and batch apart): as they are, or
    copied once (a broadcast dC, as autograd passes for a sum, is such a view)."""
    if x.aligned and x.strides is not None and len(x.shape) in (2, 3) and (
            0 in x.shape or _fast.row_major(x.shape, x.strides) is not None):
        return x
    return _arrays.contiguous(x, name)


def _backward(wrt_a, grad_c, argmax, a, b, semiring):
    s = _abi.SEMIRINGS.get(semiring.lower() if isinstance(semiring, str) else None)
    if s in (0, 1, 2):
        module = type(a).__module__
        grad = _fast.torch_backward(wrt_a, grad_c, argmax, a, b, s) if module == "torch" else \
            _fast.cupy_backward(wrt_a, grad_c, argmax, a, b, s) if module.startswith("cupy") else None
        if grad is not None:
            return grad
    p = _Product(a, b, semiring)
    if p.semiring not in _DIFFERENTIABLE or p.a.dtype not in ("float32", "float64"):
        raise NotInCatalog(f"tropical: no backward pass for {p.semiring} over {p.a.dtype} (backward passes: "
                           "maxplus, minplus and maxmul over float32 and float64)")
    gc, am = _arrays.describe(grad_c, "grad_c"), _arrays.describe(argmax, "argmax")
    _check_together([("a", p.a), ("grad_c", gc), ("argmax", am)])
    gc, am = _rows_readable(gc, "grad_c"), _rows_readable(am, "argmax")
    if gc.dtype != p.a.dtype:
        raise InvalidArgument(f"tropical: grad_c is {gc.dtype}, the operands are {p.a.dtype}")
    if am.dtype != "int32":
        raise InvalidArgument(f"tropical: argmax is {am.dtype}; it must be the int32 array of matmul_argmax")
    ldgc, stride_gc = _row_major(gc, p.shape, "grad_c")
    ldam, stride_am = _row_major(am, p.shape, "argmax")
    rows, cols = (p.m, p.k) if wrt_a else (p.k, p.n)
    own = p.a if wrt_a else p.b
    own_batch = p.batch_a if wrt_a else p.batch_b
    # The gradient of every product of the batch; summed below where the operand was broadcast.
    shape = (p.batch, rows, cols) if p.batched else (rows, cols)
    grad = _arrays.empty(own, shape, own.dtype)
    g = _arrays.describe(grad, "grad")
    other, ld_other, stride_other = (p.b, p.ldb, p.stride_b) if wrt_a else (p.a, p.lda, p.stride_a)
    # The gradient is row-major as stored: its operand's transpose flag must say "as is".
    ta, tb = (0, p.tb) if wrt_a else (p.ta, 0)
    ldg = max(cols, 1)
    if p.empty or rows == 0 or cols == 0:
        if rows and cols:
            grad = _arrays.empty(own, shape, own.dtype, zero=True)
    elif p.batched:
        p.call("backward_a_batched" if wrt_a else "backward_b_batched", p.s, p.t, ta, tb, p.m, p.n, p.k, gc.ptr, ldgc,
               stride_gc, am.ptr, ldam, stride_am, other.ptr, ld_other, stride_other, g.ptr, ldg, rows * cols,
               p.batch)
    else:
        p.call("backward_a" if wrt_a else "backward_b", p.s, p.t, ta, tb, p.m, p.n, p.k, gc.ptr, ldgc, am.ptr, ldam,
               other.ptr, ld_other, g.ptr, ldg)
    if p.batched and own_batch == 1 and p.batch != 1:
        grad = grad.sum(0) if len(own.shape) == 2 else grad.sum(0, keepdims=True) if own.kind != "torch" \
            else grad.sum(0, keepdim=True)
    elif p.batched and len(own.shape) == 2:
        grad = grad.reshape(rows, cols)
    return grad


def backward_a(grad_c, argmax, a, b, semiring="maxplus"):
    """dL/da of C = a (x) b from dL/dC and matmul_argmax's argmax: dC routed to the winning k (scaled by b's
    element for maxmul); a row-major array of a's shape. maxplus, minplus, maxmul over float32/float64."""
    return _backward(True, grad_c, argmax, a, b, semiring)


def backward_b(grad_c, argmax, a, b, semiring="maxplus"):
    """dL/db of C = a (x) b from dL/dC and matmul_argmax's argmax, like backward_a."""
    return _backward(False, grad_c, argmax, a, b, semiring)
