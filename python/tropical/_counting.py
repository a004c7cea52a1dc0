"""CountingTropical products: (value, count) elements as two arrays of one float type, as the tensor-network
packages use them to count optimal configurations. Checked here (shapes, dtypes, layouts), then one call into
libtropical's tropical_counting_gemm(_batched) on the arrays' device, or its CPU form on host memory."""

from . import _abi, _arrays, _lib
from ._errors import InvalidArgument, NotInCatalog
from ._ops import _batch_of, _check_together, _matrices, _output, layout, readable


def _laid_out(v, c, name):
    """(batch, (rows, cols), (trans, ld, stride) of values, ... of counts) of one operand's two arrays."""
    batch, stride_v, shape, strides_v = _matrices(v, "values_" + name)
    _, stride_c, _, strides_c = _matrices(c, "counts_" + name)
    tv, ldv = layout(shape, strides_v, "values_" + name)
    tc, ldc = layout(shape, strides_c, "counts_" + name)
    return batch, shape, (tv, ldv, stride_v), (tc, ldc, stride_c)


def _operand(values, counts, name):
    """(values Array, counts Array, batch, (rows, cols), (trans, ld, stride) of values, ... of counts)."""
    v, c = _arrays.describe(values, "values_" + name), _arrays.describe(counts, "counts_" + name)
    if tuple(v.shape) != tuple(c.shape):
        raise InvalidArgument(f"tropical: values_{name} has shape {tuple(v.shape)} but counts_{name} has "
                              f"{tuple(c.shape)}")
    v, c = readable(v, "values_" + name), readable(c, "counts_" + name)
    laid = _laid_out(v, c, name)
    if laid[2][0] != laid[3][0]:  # one row-major, one column-major: both copied once to row-major
        v, c = _arrays.contiguous(v, "values_" + name), _arrays.contiguous(c, "counts_" + name)
        laid = _laid_out(v, c, name)
    batch, shape, (tv, ldv, stride_v), (_, ldc, stride_c) = laid
    return v, c, batch, shape, tv, (ldv, stride_v), (ldc, stride_c)


def counting_matmul(values_a, counts_a, values_b, counts_b, *, out=None):
    """(values, counts) of C = A (x) B over CountingTropical: C's value is max_k a_v + b_v, its count the sum of
    a_c * b_c over the k that attain it (include/tropical/reference.hpp says how ties, -inf and NaN go and how
    counts round). All four arrays float32 or float64 alike; values and counts of one operand of one shape and
    layout; 2-D (m x k times k x n) or batched 3-D (a batch of 1 broadcasts). out: None, or a (values, counts)
    pair of row-major arrays to overwrite. Returns arrays of a's kind on a's device."""
    va, ca, batch_a, (m, k), ta, lva, lca = _operand(values_a, counts_a, "a")
    vb, cb, batch_b, (k2, n), tb, lvb, lcb = _operand(values_b, counts_b, "b")
    _check_together([("values_a", va), ("counts_a", ca), ("values_b", vb), ("counts_b", cb)])
    dtypes = {x.dtype for x in (va, ca, vb, cb)}
    if len(dtypes) != 1:
        raise InvalidArgument(f"tropical: the four arrays must have one dtype, not {sorted(dtypes)}")
    dtype = va.dtype
    if dtype not in ("float32", "float64"):
        raise NotInCatalog(f"tropical: counting works on float32 or float64 values and counts, not {dtype}")
    if k != k2:
        raise InvalidArgument(f"tropical: a is {m} x {k} but b is {k2} x {n} (a's columns must equal b's rows)")
    batched = len(va.shape) == 3 or len(vb.shape) == 3
    batch = _batch_of(batch_a, batch_b)
    shape = (batch, m, n) if batched else (m, n)
    if out is None:
        out = (None, None)
    elif not isinstance(out, (tuple, list)) or len(out) != 2:
        raise InvalidArgument("tropical: out must be a (values, counts) pair")
    cv, ldcv, stride_cv = _output(out[0], va, shape, dtype, "out[0]")
    cc, ldcc, stride_cc = _output(out[1], va, shape, dtype, "out[1]")
    if m == 0 or n == 0 or batch == 0:
        return cv.obj, cc.obj
    t = _abi.DTYPES[dtype]
    dll = _lib.lib()
    gpu = va.device >= 0
    prefix = "tropical_" if gpu else "tropical_cpu_"
    extra = (_arrays.stream_of(va),) if gpu else ()
    if batched:
        status = getattr(dll, prefix + "counting_gemm_batched")(
            t, ta, tb, m, n, k, va.ptr, lva[0], lva[1], ca.ptr, lca[0], lca[1], vb.ptr, lvb[0], lvb[1], cb.ptr, lcb[0],
            lcb[1], cv.ptr, ldcv, stride_cv, cc.ptr, ldcc, stride_cc, batch, *extra)
    else:
        status = getattr(dll, prefix + "counting_gemm")(
            t, ta, tb, m, n, k, va.ptr, lva[0], ca.ptr, lca[0], vb.ptr, lvb[0], cb.ptr, lcb[0], cv.ptr, ldcv, cc.ptr,
            ldcc, *extra)
    _lib.check(status)
    return cv.obj, cc.obj
