"""The fast path of every op a training step runs (matmul, matmul_argmax, backward_a, backward_b, 2-D or batched
3-D) on torch tensors and CuPy arrays: read each operand's pointer, shape and strides, map them onto the C ABI's
transposes, leading dimensions and batch strides (copying an operand once only where no mapping exists), make the
outputs with `empty` (the kernels write every element; the backward passes zero their gradient on the stream
themselves), and make one call into libtropical, which checks every argument. Anything unusual (other kinds,
dtypes or devices, empty or mismatched shapes, out=, alpha/beta) returns None and _ops takes the general path,
which words the errors."""

import sys

from . import _abi, _lib

_CODES = dict(_abi.DTYPES, bool=_abi.U8)  # element type name -> C ABI dtype code; bool is stored as bytes
_FLOATS = ("float32", "float64")
_torch_types = {}  # torch dtype -> element type name
_cache = {}


def matrix(rows, cols, s0, s1):
    """(trans, ld) of a non-empty matrix with element strides s0, s1: row-major (unit column stride,
    possibly padded rows) as is, column-major as the transpose of a row-major one; else None. A stride
    of an axis of length 1 means nothing."""
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= cols):
        return 0, (s0 if rows > 1 else cols)
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= rows):
        return 1, (s1 if cols > 1 else rows)
    return None


def operand(shape, strides):
    """(batch, batch stride, rows, cols, trans, ld) of a non-empty 2-D or 3-D view, or None where its strides
    need a copy (no unit stride in the matrix, or a negative batch stride). A batch stride of 0 broadcasts."""
    if len(shape) == 2:
        rows, cols = shape
        found = matrix(rows, cols, strides[0], strides[1])
        return None if found is None else (1, 0, rows, cols, found[0], found[1])
    batch, rows, cols = shape
    stride = strides[0] if batch > 1 else 0
    found = matrix(rows, cols, strides[1], strides[2])
    if found is None or stride < 0:
        return None
    return batch, stride, rows, cols, found[0], found[1]


def row_major(shape, strides):
    """(batch stride, ld) of a view that has unit column stride (as dC and argmax must), or None."""
    rows, cols = shape[-2], shape[-1]
    s0, s1 = strides[-2], strides[-1]
    if (s1 != 1 and cols > 1) or (s0 < cols and rows > 1):
        return None
    stride = strides[0] if len(shape) == 3 and shape[0] > 1 else 0
    if stride < 0:
        return None
    return stride, (s0 if rows > 1 else cols)


def _batch(batch_a, batch_b):
    if batch_a == batch_b or batch_b == 1:
        return batch_a
    return batch_b if batch_a == 1 else None


def _dll():
    dll = _cache.get("dll")
    if dll is None:
        dll = _cache["dll"] = _lib.library.load()
    return dll


def _launch(s, t, la, lb, m, n, k, a, b, c, arg, stream):
    """One product (with argmax into `arg` if it is not 0) on the GPU (stream not None) or the CPU."""
    dll = _dll()
    if stream is None:
        if arg:
            status = dll.tropical_cpu_gemm_argmax(s, t, la[0], lb[0], m, n, k, a, la[1], b, lb[1], c, n, arg, n)
        else:
            status = dll.tropical_cpu_gemm(s, t, la[0], lb[0], m, n, k, None, a, la[1], b, lb[1], None, c, n)
    elif arg:
        status = dll.tropical_gemm_argmax(s, t, la[0], lb[0], m, n, k, a, la[1], b, lb[1], c, n, arg, n, stream)
    else:
        status = dll.tropical_gemm(s, t, la[0], lb[0], m, n, k, None, a, la[1], b, lb[1], None, c, n, stream)
    if status:
        _lib.check(status)


def _launch_batched(s, t, oa, ob, m, n, k, batch, a, b, c, arg, stream):
    """One batched product of operands oa, ob (as from operand()) into row-major C (and argmax)."""
    dll = _dll()
    size = m * n
    if stream is None:
        if arg:
            status = dll.tropical_cpu_gemm_batched_argmax(s, t, oa[4], ob[4], m, n, k, a, oa[5], oa[1], b, ob[5], ob[1],
                                                          c, n, size, arg, n, size, batch)
        else:
            status = dll.tropical_cpu_gemm_batched(s, t, oa[4], ob[4], m, n, k, None, a, oa[5], oa[1], b, ob[5], ob[1],
                                                   None, c, n, size, batch)
    elif arg:
        status = dll.tropical_gemm_batched_argmax(s, t, oa[4], ob[4], m, n, k, a, oa[5], oa[1], b, ob[5], ob[1], c, n,
                                                  size, arg, n, size, batch, stream)
    else:
        status = dll.tropical_gemm_batched(s, t, oa[4], ob[4], m, n, k, None, a, oa[5], oa[1], b, ob[5], ob[1], None,
                                           c, n, size, batch, stream)
    if status:
        _lib.check(status)


# Up to this many elements of dC a gradient comes from the batched kernel (batch 1 where there is none): one
# thread per row or column, deterministic, and it zeroes its own output, so there is no memset call; above it
# the scatter kernel's parallelism wins over the saved driver call.
SMALL_BACKWARD = 1 << 14


def _launch_backward(wrt_a, s, t, oa, ob, m, n, k, batch, gc, lgc, am, lam, other, grad, stream):
    """dA (wrt_a) or dB of every product into a new row-major gradient (batch, rows, cols) at `grad`; gc and am
    are dC and argmax with their (batch stride, ld); `other` the pointer of the operand that is not
    differentiated (oa or ob describes it)."""
    dll = _dll()
    if wrt_a:
        ta, tb, ld_other, stride_other, ldg, size = 0, ob[4], ob[5], ob[1], k, m * k
    else:
        ta, tb, ld_other, stride_other, ldg, size = oa[4], 0, oa[5], oa[1], n, k * n
    gpu = stream is not None
    if batch == 1 and (m * n > SMALL_BACKWARD or not gpu):
        if gpu:
            fn = dll.tropical_backward_a if wrt_a else dll.tropical_backward_b
            status = fn(s, t, ta, tb, m, n, k, gc, lgc[1], am, lam[1], other, ld_other, grad, ldg, stream)
        else:
            fn = dll.tropical_cpu_backward_a if wrt_a else dll.tropical_cpu_backward_b
            status = fn(s, t, ta, tb, m, n, k, gc, lgc[1], am, lam[1], other, ld_other, grad, ldg)
    elif gpu:
        fn = dll.tropical_backward_a_batched if wrt_a else dll.tropical_backward_b_batched
        status = fn(s, t, ta, tb, m, n, k, gc, lgc[1], lgc[0], am, lam[1], lam[0], other, ld_other, stride_other,
                    grad, ldg, size, batch, stream)
    else:
        fn = dll.tropical_cpu_backward_a_batched if wrt_a else dll.tropical_cpu_backward_b_batched
        status = fn(s, t, ta, tb, m, n, k, gc, lgc[1], lgc[0], am, lam[1], lam[0], other, ld_other, stride_other,
                    grad, ldg, size, batch)
    if status:
        _lib.check(status)


# ---- torch --------------------------------------------------------------------------------------------------


def _torch():
    torch = _cache.get("torch")
    if torch is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        _cache["torch"] = torch
        _cache["tensor"] = torch.Tensor
        _cache["raw_stream"] = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _cache["int32"] = torch.int32
        for name in ("float32", "float64", "int32", "int64", "int16", "uint8", "bool"):
            _torch_types[getattr(torch, name)] = name
    return torch


def torch_stream(device):
    """torch's current stream on CUDA device `device`, as a CUstream int."""
    if _torch() is None:
        return 0
    raw = _cache["raw_stream"]
    if raw is not None:
        return raw(device)
    return _cache["torch"].cuda.current_stream(device).cuda_stream


def _torch_pair(a, b, andor):
    """(element type name, device) of two plain torch tensors of one dtype on one device, or None."""
    tensor = _cache["tensor"]
    if type(a) is not tensor or type(b) is not tensor or a.dtype != b.dtype:
        return None
    name = _torch_types.get(a.dtype)
    if name is None or (name in ("uint8", "bool")) != andor:
        return None
    device = a.get_device()
    if device != b.get_device() or (device < 0 and not (a.is_cpu and b.is_cpu)):
        return None
    return name, device


def _torch_operand(x):
    """(operand(), tensor) of a 2-D/3-D tensor, copied once to a contiguous one where its strides need it."""
    found = operand(x.shape, x.stride())
    if found is None:
        x = x.contiguous()
        found = operand(x.shape, x.stride())
    return found, x


def _torch_batch(a, b):
    """(operand() of a, a, of b, b, batch, m, k, n) of two non-empty 2-D/3-D tensors whose shapes multiply (each
    copied once where its strides need it), or None."""
    if a.dim() not in (2, 3) or b.dim() not in (2, 3) or 0 in a.shape or 0 in b.shape:
        return None
    oa, a = _torch_operand(a)
    ob, b = _torch_operand(b)
    batch = _batch(oa[0], ob[0])
    if batch is None or ob[2] != oa[3]:
        return None
    return oa, a, ob, b, batch, oa[2], oa[3], ob[3]


def torch_product(a, b, s, andor, want_argmax):
    """C (and argmax) of two 2-D or 3-D torch tensors (a batch of 1 broadcasts), or None for the general path."""
    if _torch() is None:
        return None
    pair = _torch_pair(a, b, andor)
    if pair is None:
        return None
    name, device = pair
    da, db = a.dim(), b.dim()
    if da == 2 and db == 2:
        m, k = a.shape
        k2, n = b.shape
        if k != k2 or m == 0 or n == 0 or k == 0:
            return None
        sa, sb = a.stride(), b.stride()
        la, lb = matrix(m, k, sa[0], sa[1]), matrix(k, n, sb[0], sb[1])
        if la is None:
            a = a.contiguous()
            la = (0, k)
        if lb is None:
            b = b.contiguous()
            lb = (0, n)
        c = a.new_empty((m, n))
        arg = a.new_empty((m, n), dtype=_cache["int32"]) if want_argmax else None
        _launch(s, _CODES[name], la, lb, m, n, k, a.data_ptr(), b.data_ptr(), c.data_ptr(),
                arg.data_ptr() if want_argmax else 0, torch_stream(device) if device >= 0 else None)
        return (c, arg) if want_argmax else c
    found = _torch_batch(a, b)
    if found is None:
        return None
    oa, a, ob, b, batch, m, k, n = found
    c = a.new_empty((batch, m, n))
    arg = a.new_empty((batch, m, n), dtype=_cache["int32"]) if want_argmax else None
    _launch_batched(s, _CODES[name], oa, ob, m, n, k, batch, a.data_ptr(), b.data_ptr(), c.data_ptr(),
                    arg.data_ptr() if want_argmax else 0, torch_stream(device) if device >= 0 else None)
    return (c, arg) if want_argmax else c


def _torch_layout(a, b):
    """The layout of a differentiable product of float tensors a and b: (operand() of each operand as used, those
    operands (each copied once where its strides need it), batch, m, k, n, element type, device, C's shape),
    or None for the general path."""
    if _torch() is None:
        return None
    pair = _torch_pair(a, b, False)
    if pair is None or pair[0] not in _FLOATS:
        return None
    found = _torch_batch(a, b)
    if found is None:
        return None
    name, device = pair
    oa, a_used, ob, b_used, batch, m, k, n = found
    shape = (batch, m, n) if a.dim() == 3 or b.dim() == 3 else (m, n)
    return oa, a_used, ob, b_used, batch, m, k, n, _CODES[name], device, shape


def torch_product_for_grad(a, b, s):
    """(C, argmax, layout) of a product whose gradient will be asked for: torch_product's work, and the layout
    (_torch_layout) that torch_gradients then takes instead of deriving it again; None for the general path."""
    layout = _torch_layout(a, b)
    if layout is None:
        return None
    oa, a, ob, b, batch, m, k, n, t, device, shape = layout
    c = a.new_empty(shape)
    arg = a.new_empty(shape, dtype=_cache["int32"])
    stream = torch_stream(device) if device >= 0 else None
    if len(shape) == 3:
        _launch_batched(s, t, oa, ob, m, n, k, batch, a.data_ptr(), b.data_ptr(), c.data_ptr(), arg.data_ptr(), stream)
    else:
        _launch(s, t, oa[4:], ob[4:], m, n, k, a.data_ptr(), b.data_ptr(), c.data_ptr(), arg.data_ptr(), stream)
    return c, arg, layout


def torch_gradients(grad_c, argmax, a, b, s, need_a, need_b, layout=None):
    """(dA or None, dB or None) of C = a (x) b as new tensors of the operands' shapes, from dC (any strides: a
    broadcast dC is copied once, for both) and the forward's argmax; `layout` as torch_product_for_grad made
    it (else derived here); None for the general path."""
    if layout is None:
        layout = _torch_layout(a, b)
        if layout is None:
            return None
    oa, a_used, ob, b_used, batch, m, k, n, t, device, shape = layout
    tensor = _cache["tensor"]
    if type(grad_c) is not tensor or type(argmax) is not tensor or grad_c.dtype != a_used.dtype \
            or argmax.dtype != _cache["int32"] or (device < 0) != (grad_c.is_cpu and argmax.is_cpu):
        return None  # the library checks that dC and the argmax are on the operands' GPU
    if grad_c.shape != shape or argmax.shape != shape:
        return None
    batched = len(shape) == 3
    lgc = row_major(shape, grad_c.stride())
    if lgc is None:
        grad_c = grad_c.contiguous()
        lgc = row_major(shape, grad_c.stride())
    lam = row_major(shape, argmax.stride())
    if lam is None:
        argmax = argmax.contiguous()
        lam = row_major(shape, argmax.stride())
    stream = torch_stream(device) if device >= 0 else None
    gc, am = grad_c.data_ptr(), argmax.data_ptr()
    grads = []
    for wrt_a, need in ((True, need_a), (False, need_b)):
        if not need:
            grads.append(None)
            continue
        own, own_batch, other = (a, oa[0], b_used) if wrt_a else (b, ob[0], a_used)
        rows, cols = (m, k) if wrt_a else (k, n)
        grad = a_used.new_empty((batch, rows, cols) if batched else (rows, cols))
        _launch_backward(wrt_a, s, t, oa, ob, m, n, k, batch, gc, lgc, am, lam, other.data_ptr(), grad.data_ptr(),
                         stream)
        if batched and own.dim() == 2:
            grad = grad.sum(0) if batch > 1 else grad.view(rows, cols)
        elif batched and own_batch == 1 and batch > 1:
            grad = grad.sum(0, keepdim=True)
        grads.append(grad)
    return grads


def torch_backward(wrt_a, grad_c, argmax, a, b, s):
    """dA (wrt_a) or dB alone, like torch_gradients; None for the general path."""
    grads = torch_gradients(grad_c, argmax, a, b, s, wrt_a, not wrt_a)
    return None if grads is None else grads[0 if wrt_a else 1]


# ---- CuPy ---------------------------------------------------------------------------------------------------


def _cupy():
    """(ndarray, {dtype: (C code, andor?, itemsize)}, the int32 dtype, getDevice, get_current_stream) of CuPy,
    looked up once; None while cupy is not imported."""
    found = _cache.get("cupy")
    if found is None:
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return None
        types = {}
        for name, code in _CODES.items():
            dtype = cupy.dtype(name)
            types[dtype] = (code, name in ("uint8", "bool"), dtype.itemsize)
        found = (cupy.ndarray, types, cupy.dtype("int32"), cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream)
        _cache["cupy"] = found
    return found


_cupy_layouts = {}  # (dtype, shapes, byte strides) -> what cupy_product needs of them, or False


def _cupy_layout(info, shape_a, strides_a, shape_b, strides_b):
    """(oa, ob, batch, m, k, n, C's shape) of two CuPy operands' shapes and byte strides (operand() of each),
    or False where the general path must take them."""
    if len(shape_a) not in (2, 3) or len(shape_b) not in (2, 3) or 0 in shape_a or 0 in shape_b:
        return False
    size = info[2]
    if any(x % size for x in strides_a) or any(x % size for x in strides_b):
        return False
    oa = operand(shape_a, tuple(x // size for x in strides_a))
    ob = operand(shape_b, tuple(x // size for x in strides_b))
    if oa is None or ob is None:
        return False
    batch = _batch(oa[0], ob[0])
    m, k, n = oa[2], oa[3], ob[3]
    if batch is None or ob[2] != k:
        return False
    batched = len(shape_a) == 3 or len(shape_b) == 3
    return oa, ob, batch, m, k, n, ((batch, m, n) if batched else (m, n))


def cupy_product(a, b, s, andor, want_argmax):
    """C (and argmax) of two 2-D or 3-D CuPy arrays (a batch of 1 broadcasts), or None for the general path.
    The mapping of a layout onto the C ABI's arguments is made once per layout (_cupy_layout)."""
    found = _cache.get("cupy") or _cupy()
    if found is None:
        return None
    ndarray, types, int32, get_device, current_stream = found
    if type(a) is not ndarray or type(b) is not ndarray:
        return None
    dtype = a.dtype
    info = types.get(dtype)  # keyed by the dtype object: dtype.name costs ~3 us a call
    if info is None or info[1] != andor or b.dtype != dtype:
        return None
    key = (dtype, a.shape, a.strides, b.shape, b.strides)
    layout = _cupy_layouts.get(key)
    if layout is None:
        if len(_cupy_layouts) > 512:
            _cupy_layouts.clear()
        layout = _cupy_layouts[key] = _cupy_layout(info, *key[1:])
    if not layout:
        return None
    device = a.data.device_id
    if device != b.data.device_id:
        return None
    if get_device() != device:
        with sys.modules["cupy"].cuda.Device(device):
            return cupy_product(a, b, s, andor, want_argmax)
    oa, ob, batch, m, k, n, shape = layout
    c = ndarray(shape, dtype)  # cupy.empty(shape, dtype) without its Python frame
    arg = ndarray(shape, int32) if want_argmax else None
    if len(shape) == 3:
        _launch_batched(s, info[0], oa, ob, m, n, k, batch, a.data.ptr, b.data.ptr, c.data.ptr,
                        arg.data.ptr if want_argmax else 0, current_stream().ptr)
    else:
        _launch(s, info[0], oa[4:], ob[4:], m, n, k, a.data.ptr, b.data.ptr, c.data.ptr,
                arg.data.ptr if want_argmax else 0, current_stream().ptr)
    return (c, arg) if want_argmax else c


def _cupy_backward_layout(wrt_a, info, shapes, strides):
    """(oa, ob, batch, m, k, n, dC's and the argmax's (batch stride, ld), the gradient's shape) of a backward
    pass over CuPy arrays a, b, dC, argmax of these shapes and byte strides, or False for the general path."""
    product = _cupy_layout(info, shapes[0], strides[0], shapes[1], strides[1])
    if not product:
        return False
    oa, ob, batch, m, k, n, shape = product
    if shapes[2] != shape or shapes[3] != shape or any(x % info[2] for x in strides[2]) \
            or any(x % 4 for x in strides[3]):
        return False
    lgc = row_major(shape, tuple(x // info[2] for x in strides[2]))
    lam = row_major(shape, tuple(x // 4 for x in strides[3]))
    if lgc is None or lam is None:
        return False
    batched = len(shape) == 3
    own_batch = oa[0] if wrt_a else ob[0]
    if batched and (len(shapes[0 if wrt_a else 1]) == 2 or (own_batch == 1 and batch > 1)):
        return False  # a broadcast operand's gradient is a sum over the batch: the general path does it
    rows, cols = (m, k) if wrt_a else (k, n)
    return oa, ob, batch, m, k, n, lgc, lam, ((batch, rows, cols) if batched else (rows, cols))


def cupy_backward(wrt_a, grad_c, argmax, a, b, s):
    """dA (wrt_a) or dB of C = a (x) b from dC and argmax, all CuPy arrays (float operands, int32 argmax, dC and
    argmax with unit column stride), as a new array of the operand's shape; None for the general path."""
    found = _cache.get("cupy") or _cupy()
    if found is None:
        return None
    ndarray, types, int32, get_device, current_stream = found
    if type(a) is not ndarray or type(b) is not ndarray or type(grad_c) is not ndarray or type(argmax) is not ndarray:
        return None
    dtype = a.dtype
    info = types.get(dtype)
    if info is None or info[0] > 1 or b.dtype != dtype or grad_c.dtype != dtype or argmax.dtype != int32:
        return None
    shapes = (a.shape, b.shape, grad_c.shape, argmax.shape)
    strides = (a.strides, b.strides, grad_c.strides, argmax.strides)
    key = (wrt_a, dtype, shapes, strides)
    layout = _cupy_layouts.get(key)
    if layout is None:
        if len(_cupy_layouts) > 512:
            _cupy_layouts.clear()
        layout = _cupy_layouts[key] = _cupy_backward_layout(wrt_a, info, shapes, strides)
    if not layout:
        return None
    device = a.data.device_id  # dC's and the argmax's devices are checked by the library, with the operands'
    if device != b.data.device_id or get_device() != device:
        return None
    oa, ob, batch, m, k, n, lgc, lam, grad_shape = layout
    grad = ndarray(grad_shape, dtype)
    _launch_backward(wrt_a, s, info[0], oa, ob, m, n, k, batch, grad_c.data.ptr, lgc, argmax.data.ptr, lam,
                     (b if wrt_a else a).data.ptr, grad.data.ptr, current_stream().ptr)
    return grad
