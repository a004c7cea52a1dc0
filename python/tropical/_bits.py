"""Bit-packed boolean matrices and their AndOr products (include/tropical/bits.hpp states the layout): a
rows x k boolean matrix as rows of 32-bit words, element (i, j) bit j % 32 of word j / 32 of row i, rows padded
to a multiple of 8 words (256 bits). Products take A (m x k) packed by rows and B as B^T (n x k) packed by rows
(B packed by columns) and give C(i, j) = OR_k A(i, k) AND B(k, j) as packed bits, bytes or int32 witness
counts. NumPy arrays run on the CPU backend; torch and CuPy device arrays on their GPU (packing through the
framework's own operations); NumPy words are uint32, torch words int32 (the same bits)."""

import ctypes
import sys

from . import _abi, _arrays, _lib
from ._errors import InvalidArgument, Unavailable

OUTPUTS = _abi.BITS_OUTPUTS
_ready = {}


def _fn(name):
    """The C function `name` with its prototype (Unavailable if this libtropical has none)."""
    fn = _ready.get(name)
    if fn is None:
        fn = getattr(_lib.lib(), name, None)
        if fn is None:
            raise Unavailable(f"tropical: this libtropical has no {name} (built before bit-packed booleans?)")
        fn.argtypes, fn.restype = _abi.PROTOTYPES[name]
        _ready[name] = fn
    return fn


def bits_ld(k):
    """Words per packed row of k bits: (k + 31) // 32 rounded up to a multiple of 8, at least 8."""
    if k < 0:
        raise InvalidArgument(f"tropical: k = {k} is negative")
    return max(8, (k + 255) // 256 * 8)


def _kind(x):
    module = type(x).__module__
    for kind in ("numpy", "torch", "cupy"):
        if module.startswith(kind) and kind in sys.modules:
            return kind
    raise InvalidArgument(f"tropical: expected a NumPy, torch or CuPy array, not {type(x).__module__}."
                          f"{type(x).__name__}")


def _on_device(x, kind):
    if kind == "torch":
        return x.device.type == "cuda"
    return kind == "cupy"


def pack_bits(a):
    """The words (..., rows, bits_ld(k)) of a boolean array a (..., rows, k) (bool or any integer dtype:
    non-zero is true); uint32 for NumPy and CuPy, int32 for torch; on a's device."""
    kind = _kind(a)
    if a.ndim < 2:
        raise InvalidArgument(f"tropical: pack_bits needs a matrix (..., rows, k), not {a.ndim} dimensions")
    k = a.shape[-1]
    ld = bits_ld(k)
    if kind == "numpy":
        np = sys.modules["numpy"]
        packed = np.packbits(a != 0, axis=-1, bitorder="little")
        padded = np.zeros(a.shape[:-1] + (ld * 4,), dtype=np.uint8)
        padded[..., :packed.shape[-1]] = packed
        return padded.view("<u4").astype(np.uint32, copy=False)
    if (a.numel() if kind == "torch" else a.size) == 0:  # k = 0 or no rows: nothing to reshape by rows
        return _zeros(a, kind, tuple(a.shape[:-1]) + (ld,), "uint32")
    if kind == "torch":
        torch = sys.modules["torch"]
        lead = tuple(a.shape[:-1])
        flat = a.reshape(-1, k)
        out = torch.empty((flat.shape[0], ld), dtype=torch.int32, device=a.device)
        weights = 2 ** torch.arange(32, dtype=torch.int64, device=a.device)
        for r0 in range(0, flat.shape[0], _chunk_rows(ld)):  # 64-bit temporaries of bounded size
            rows = flat[r0:r0 + _chunk_rows(ld)]
            bits = torch.zeros((rows.shape[0], ld * 32), dtype=torch.int64, device=a.device)
            bits[:, :k] = rows != 0
            words = (bits.view(rows.shape[0], ld, 32) * weights).sum(-1)
            out[r0:r0 + rows.shape[0]] = torch.where(words >= 2 ** 31, words - 2 ** 32, words).to(torch.int32)
        return out.reshape(lead + (ld,))
    cupy = sys.modules["cupy"]
    with a.device:
        lead = a.shape[:-1]
        flat = a.reshape(-1, k)
        out = cupy.empty((flat.shape[0], ld), dtype=cupy.uint32)
        shifts = cupy.arange(32, dtype=cupy.uint32)
        for r0 in range(0, flat.shape[0], _chunk_rows(ld)):
            rows = flat[r0:r0 + _chunk_rows(ld)]
            bits = cupy.zeros((rows.shape[0], ld * 32), dtype=cupy.uint32)
            bits[:, :k] = rows != 0
            # The 32 shifted bits of a word are distinct powers of two: their sum is their or.
            words = (bits.reshape(rows.shape[0], ld, 32) << shifts).sum(axis=-1, dtype=cupy.uint64)
            out[r0:r0 + rows.shape[0]] = words.astype(cupy.uint32)
        return out.reshape(lead + (ld,))


def _zeros(like, kind, shape, dtype):
    """Zeros of `shape` and element type `dtype` (uint32: int32 for torch) of like's kind, on like's device."""
    if kind == "torch":
        torch = sys.modules["torch"]
        return torch.zeros(shape, dtype=torch.int32 if dtype == "uint32" else getattr(torch, dtype),
                           device=like.device)
    if kind == "cupy":
        with like.device:
            return sys.modules["cupy"].zeros(shape, dtype=dtype)
    return sys.modules["numpy"].zeros(shape, dtype=dtype)


def _chunk_rows(ld):
    """Rows packed or unpacked at a time on a device: about 256 MB of 64-bit temporaries."""
    return max(1, (1 << 25) // (ld * 32))


def unpack_bits(words, k, dtype=None):
    """The booleans (..., rows, k) of packed words (..., rows, ld >= (k + 31) // 32), as uint8 0/1 (or `dtype`,
    e.g. bool), on the words' device."""
    kind = _kind(words)
    if words.ndim < 2 or k < 0 or words.shape[-1] * 32 < k:
        raise InvalidArgument(f"tropical: words of shape {tuple(words.shape)} cannot hold rows of k = {k} bits")
    if kind == "numpy":
        np = sys.modules["numpy"]
        w = np.ascontiguousarray(words).astype("<u4", copy=False)
        out = np.unpackbits(w.view(np.uint8), axis=-1, count=k, bitorder="little")
        return out if dtype is None else out.astype(dtype)
    if kind == "torch":
        torch = sys.modules["torch"]
        lead, ld = tuple(words.shape[:-1]), words.shape[-1]
        flat = words.reshape(-1, ld)
        out = torch.empty((flat.shape[0], k), dtype=torch.uint8 if dtype is None else dtype, device=words.device)
        shifts = torch.arange(32, device=words.device)
        for r0 in range(0, flat.shape[0], _chunk_rows(ld)):
            w = flat[r0:r0 + _chunk_rows(ld)].to(torch.int64) & 0xFFFFFFFF
            bits = (w.unsqueeze(-1) >> shifts) & 1
            out[r0:r0 + w.shape[0]] = bits.reshape(w.shape[0], -1)[:, :k].to(out.dtype)
        return out.reshape(lead + (k,))
    cupy = sys.modules["cupy"]
    with words.device:
        lead, ld = words.shape[:-1], words.shape[-1]
        flat = words.reshape(-1, ld)
        out = cupy.empty((flat.shape[0], k), dtype=cupy.uint8 if dtype is None else dtype)
        shifts = cupy.arange(32, dtype=cupy.uint32)
        for r0 in range(0, flat.shape[0], _chunk_rows(ld)):
            w = flat[r0:r0 + _chunk_rows(ld)].astype(cupy.uint32)
            bits = (w[..., None] >> shifts) & 1
            out[r0:r0 + w.shape[0]] = bits.reshape(w.shape[0], -1)[:, :k].astype(out.dtype)
        return out.reshape(lead + (k,))


def _words(x, name):
    """x as row-major 32-bit words (copied once where it is not), and its kind and device flag."""
    kind = _kind(x)
    if x.ndim not in (2, 3):
        raise InvalidArgument(f"tropical: {name} must be packed words (rows, ld) or (batch, rows, ld)")
    if kind == "torch":
        torch = sys.modules["torch"]
        if x.dtype not in (torch.int32, getattr(torch, "uint32", torch.int32)):
            raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}; packed words are int32 (pack_bits)")
        return x.contiguous(), kind, x.device.type == "cuda"
    xp = sys.modules[kind]
    if str(x.dtype) not in ("uint32", "int32"):
        raise InvalidArgument(f"tropical: {name} has dtype {x.dtype}; packed words are uint32 (pack_bits)")
    return xp.ascontiguousarray(x), kind, kind == "cupy"


def _ptr(x, kind):
    if kind == "torch":
        return x.data_ptr()
    if kind == "cupy":
        return x.data.ptr
    return x.__array_interface__["data"][0]


def _stream(x, kind):
    """The framework's current stream on device array x's device."""
    device = x.device.index if kind == "torch" else x.device.id
    return _arrays.stream_of(_arrays.Array(kind, device if device is not None else 0, _ptr(x, kind), tuple(x.shape),
                                           None, str(x.dtype), x))


def bits_matmul(a, bt, k, *, out="bits"):
    """C = A AND-OR B for A packed by rows (m, lda) and B given as B^T packed by rows (n, ldb), both over k bits
    (or batched: (batch, m, lda) and (batch, n, ldb), a batch of 1 broadcasts). out: "bits" (C packed by rows,
    (m, bits_ld(n)) words), "bytes" (uint8 0/1, (m, n)) or "counts" (int32, (m, n): the k with A(i,k) and
    B(k,j)). Host arrays on the CPU, device arrays on their GPU (on the framework's current stream)."""
    if out not in OUTPUTS:
        raise InvalidArgument(f"tropical: out must be one of {sorted(OUTPUTS)}, not {out!r}")
    a, kind, device = _words(a, "a")
    bt, kind_b, device_b = _words(bt, "bt")
    if (kind, device) != (kind_b, device_b):
        raise InvalidArgument("tropical: a and bt must be arrays of one kind on one device")
    words = (k + 31) // 32
    if k < 0 or a.shape[-1] < words or bt.shape[-1] < words:
        raise InvalidArgument(f"tropical: rows of {a.shape[-1]} and {bt.shape[-1]} words cannot hold k = {k} bits")
    batch_a = a.shape[0] if a.ndim == 3 else 1
    batch_b = bt.shape[0] if bt.ndim == 3 else 1
    if batch_a != batch_b and 1 not in (batch_a, batch_b):
        raise InvalidArgument(f"tropical: batches of {batch_a} and {batch_b} products do not match")
    batch = max(batch_a, batch_b)
    m, n = a.shape[-2], bt.shape[-2]
    cols = bits_ld(n) if out == "bits" else n
    shape = ((batch,) if a.ndim == 3 or bt.ndim == 3 else ()) + (m, cols)
    dtype = {"bits": "uint32", "bytes": "uint8", "counts": "int32"}[out]
    c = _zeros(a, kind, shape, dtype)
    stride_a = m * a.shape[-1] if batch_a > 1 else 0
    stride_b = n * bt.shape[-1] if batch_b > 1 else 0
    args = [OUTPUTS[out], m, n, k, _ptr(a, kind), a.shape[-1], stride_a, _ptr(bt, kind), bt.shape[-1], stride_b,
            _ptr(c, kind), cols, m * cols, batch]
    if device:
        _lib.check(_fn("tropical_bits_gemm_batched")(*args, _stream(c, kind)))
    else:
        _lib.check(_fn("tropical_cpu_bits_gemm_batched")(*args))
    return c


def closure(adjacency):
    """(reach, iterations): the reflexive-transitive closure of the square boolean matrix `adjacency` (reach[i, j]
    true iff j is reachable from i, every vertex from itself), by repeated squaring of (I or A) on packed bits
    until a square changes nothing, and the number of squarings. reach has adjacency's dtype, kind and device."""
    kind = _kind(adjacency)
    if adjacency.ndim != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise InvalidArgument(f"tropical: closure needs a square matrix, not shape {tuple(adjacency.shape)}")
    n = adjacency.shape[0]
    words = pack_bits(adjacency)
    if kind == "numpy":
        words = sys.modules["numpy"].ascontiguousarray(words)
    iterations = ctypes.c_int64(0)
    if _on_device(adjacency, kind):
        _lib.check(_fn("tropical_bits_closure")(n, _ptr(words, kind), words.shape[-1], ctypes.byref(iterations),
                                                 _stream(words, kind)))
    else:
        _lib.check(_fn("tropical_cpu_bits_closure")(n, _ptr(words, kind), words.shape[-1], ctypes.byref(iterations)))
    return unpack_bits(words, n, adjacency.dtype), iterations.value
