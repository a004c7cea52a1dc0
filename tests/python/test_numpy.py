"""tropical on NumPy arrays (the CPU path) against the NumPy oracle in reference.py: every semiring x dtype,
strides and transposes, batches, alpha/beta, gradients, and bad input."""

import numpy as np
import pytest

import reference as ref
import tropical

SEMIRING_DTYPES = [(s, t) for s in ("maxplus", "minplus", "maxmul", "maxmin", "minmax")
                   for t in ("float32", "float64", "int32", "int64")] + [("andor", "uint8"), ("andor", "bool")]


def data(dtype, shape, rng, special=True):
    """Values with ties, and for floats some +-inf and NaN; for integers the type's extremes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.3
    if dtype == np.uint8:
        return (rng.random(shape) < 0.3).astype(np.uint8) * rng.integers(1, 255, shape).astype(np.uint8)
    if dtype.kind == "f":
        x = (rng.integers(-8, 8, shape) / 2).astype(dtype)  # halves: many ties
        if special and x.size > 4:
            flat = x.reshape(-1)
            picks = rng.choice(flat.size, size=max(1, flat.size // 10), replace=False)
            flat[picks[0::3]] = np.inf
            flat[picks[1::3]] = -np.inf
            flat[picks[2::3]] = np.nan
        return x
    info = np.iinfo(dtype)
    x = rng.integers(-6, 6, shape).astype(dtype)
    if special and x.size > 4:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
        flat[picks[0::2]] = info.max
        flat[picks[1::2]] = info.min
    return x


def same(x, y):
    """Bit-equal, NaN in the same places (NumPy's equal_nan for floats)."""
    assert x.dtype == y.dtype and x.shape == y.shape
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("semiring,dtype", SEMIRING_DTYPES)
def test_every_semiring_and_dtype_equals_the_oracle(semiring, dtype):
    rng = np.random.default_rng(7)
    for m, k, n in ((3, 17, 5), (1, 1, 1), (17, 3, 63)):
        a, b = data(dtype, (m, k), rng), data(dtype, (k, n), rng)
        c_ref, arg_ref = ref.matmul_argmax(semiring, a.astype(np.uint8) if dtype == "bool" else a,
                                           b.astype(np.uint8) if dtype == "bool" else b)
        c = tropical.matmul(a, b, semiring)
        assert isinstance(c, np.ndarray) and c.dtype == np.dtype(dtype)
        same(c.astype(np.uint8) if dtype == "bool" else c, c_ref)
        c2, arg = tropical.matmul_argmax(a, b, semiring)
        same(c2, c)
        same(arg, arg_ref)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_strides_map_to_transposes_and_leading_dimensions(ta, tb):
    rng = np.random.default_rng(1)
    m, k, n = 7, 9, 5
    a, b = data("float32", (m, k), rng), data("float32", (k, n), rng)
    expect = ref.matmul_argmax("maxplus", a, b)
    # Column-major (transposed storage), or row-major padded inside a wider array.
    a_view = np.asfortranarray(a) if ta else np.pad(a, ((0, 2), (0, 3)))[:m, :k]
    b_view = np.ascontiguousarray(b.T).T if tb else np.pad(b, ((0, 1), (0, 4)))[:k, :n]
    c, arg = tropical.matmul_argmax(a_view, b_view, "maxplus")
    same(c, expect[0])
    same(arg, expect[1])


def test_layout_of_views():
    from tropical._ops import layout
    assert layout((7, 9), (9, 1), "a") == (0, 9)
    assert layout((7, 9), (12, 1), "a") == (0, 12)  # padded rows
    assert layout((7, 9), (1, 7), "a") == (1, 7)  # column-major: the transpose of a row-major 9 x 7
    assert layout((7, 9), (1, 10), "a") == (1, 10)
    assert layout((1, 9), (123, 1), "a") == (0, 9)  # one row: its stride means nothing
    assert layout((7, 1), (1, 55), "a") == (0, 1)
    assert layout((0, 9), (9, 1), "a") == (0, 9)


def test_padded_column_major_operand():
    rng = np.random.default_rng(2)
    a, b = data("float64", (6, 4), rng), data("float64", (4, 3), rng)
    big = np.asfortranarray(np.zeros((9, 4)))
    big[:6, :] = a
    same(tropical.matmul(big[:6, :], b, "minplus"), ref.matmul("minplus", a, b))


@pytest.mark.parametrize("view", ["inner_stride", "negative", "broadcast_rows", "broadcast_scalar", "misaligned"])
def test_views_that_are_not_matrices_are_copied_once_and_give_the_reference(view):
    a = np.arange(48, dtype=np.float32).reshape(6, 8) / 4
    raw = np.zeros(6 * 4 * 4 + 1, np.uint8)[1:].view(np.float32) if view == "misaligned" else None
    if raw is not None:
        assert not raw.flags.aligned
        raw[:] = a[:, :4].ravel()
    odd = {"inner_stride": a[:, ::2], "negative": a[::-1, :4], "broadcast_rows": np.broadcast_to(a[0, :4], (6, 4)),
           "broadcast_scalar": np.broadcast_to(np.float32(1.5), (6, 4)),
           "misaligned": None if raw is None else raw.reshape(6, 4)}[view]
    b = np.arange(12, dtype=np.float32).reshape(4, 3) / 2
    for semiring in ("maxplus", "minplus"):
        want = ref.matmul_argmax(semiring, np.ascontiguousarray(odd), b)
        got = tropical.matmul_argmax(odd, b, semiring)
        same(got[0], want[0])
        same(got[1], want[1])
        same(tropical.matmul_argmax(b.T, odd.T, semiring)[0], ref.matmul(semiring, b.T.copy(), odd.T.copy()))


def test_batches_with_negative_broadcast_or_odd_strides_give_the_reference():
    rng = np.random.default_rng(3)
    a = data("float32", (4, 5, 6), rng)
    b = data("float32", (4, 6, 3), rng)
    cases = [(a[::-1], b), (a, b[:, ::-1, :]), (np.broadcast_to(a[:1], (4, 5, 6)), b), (a[..., ::-1], b[::-1]),
             (a.transpose(0, 2, 1).copy().transpose(0, 2, 1), b)]
    for x, y in cases:
        got = tropical.matmul(x, y, "maxplus")
        want = np.stack([ref.matmul("maxplus", np.ascontiguousarray(x[i]), np.ascontiguousarray(y[i]))
                         for i in range(4)])
        same(got, want)


@pytest.mark.parametrize("a_shape,b_shape,message", [
    ((3, 4), (5, 2), "columns must equal"),
    ((3,), (3, 2), "1-D"),
    ((), (3, 2), "0-D"),
    ((2, 3, 4, 5), (5, 2), "4-D"),
    ((2, 3, 4), (3, 4, 2), "batch sizes"),
])
def test_bad_shapes_are_refused(a_shape, b_shape, message):
    with pytest.raises(tropical.InvalidArgument, match=message):
        tropical.matmul(np.ones(a_shape, np.float32), np.ones(b_shape, np.float32))


def test_bad_dtypes_and_semirings_are_refused():
    f32 = np.ones((2, 2), np.float32)
    with pytest.raises(tropical.InvalidArgument, match="float16"):
        tropical.matmul(f32.astype(np.float16), f32.astype(np.float16))
    with pytest.raises(tropical.InvalidArgument, match="complex"):
        tropical.matmul(f32.astype(np.complex64), f32.astype(np.complex64))
    with pytest.raises(tropical.InvalidArgument, match="float32 but b is float64"):
        tropical.matmul(f32, f32.astype(np.float64))
    with pytest.raises(tropical.NotInCatalog, match="andor"):
        tropical.matmul(f32, f32, "andor")
    with pytest.raises(tropical.NotInCatalog, match="maxplus"):
        tropical.matmul(f32.astype(np.uint8), f32.astype(np.uint8), "maxplus")
    with pytest.raises(tropical.InvalidArgument, match="unknown semiring"):
        tropical.matmul(f32, f32, "plustimes")
    with pytest.raises(tropical.InvalidArgument, match="list"):
        tropical.matmul([[1.0]], [[1.0]])
    with pytest.raises(tropical.NotInCatalog, match="no backward"):
        c, arg = tropical.matmul_argmax(f32, f32, "maxmin")
        tropical.backward_a(c, arg, f32, f32, "maxmin")


def test_errors_are_one_hierarchy():
    for cls in (tropical.InvalidArgument, tropical.Unavailable, tropical.CompileError, tropical.CudaError,
                tropical.NotInCatalog, tropical.OutOfMemory, tropical.InternalError):
        assert issubclass(cls, tropical.Error)
    assert issubclass(tropical.InvalidArgument, ValueError)


def test_empty_operands():
    a0, b = np.ones((0, 4), np.float32), np.ones((4, 3), np.float32)
    assert tropical.matmul(a0, b).shape == (0, 3)
    c, arg = tropical.matmul_argmax(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))
    same(c, np.full((2, 3), -np.inf, np.float32))
    same(arg, np.full((2, 3), -1, np.int32))
    assert tropical.matmul(np.ones((0, 2, 2)), np.ones((0, 2, 2))).shape == (0, 2, 2)
    same(tropical.matmul(np.ones((2, 0), np.int32), np.ones((0, 2), np.int32), "minplus"),
         np.full((2, 2), np.iinfo(np.int32).max, np.int32))


def test_nan_and_infinities_follow_the_documented_rule():
    nan, inf = np.nan, np.inf
    a = np.array([[nan, nan], [-inf, 1.0], [inf, 2.0]], np.float32)
    b = np.array([[1.0, inf], [nan, 0.0]], np.float32)
    c, arg = tropical.matmul_argmax(a, b, "maxplus")
    # Row 0: every product NaN -> zero, -1. Row 1: -inf + inf is NaN and never wins; 1 + 0 wins at k=1.
    same(c, np.array([[-inf, -inf], [-inf, 1.0], [inf, inf]], np.float32))
    same(arg, np.array([[-1, -1], [-1, 1], [0, 0]], np.int32))


def test_integers_saturate_on_full_range_data():
    for dtype in (np.int32, np.int64):
        info = np.iinfo(dtype)
        a = np.array([[info.max, 5], [info.min, info.max]], dtype)
        b = np.array([[10, info.min], [info.max, -3]], dtype)
        for semiring in ("maxplus", "minplus", "maxmul"):
            same(tropical.matmul(a, b, semiring), ref.matmul(semiring, a, b))


@pytest.mark.parametrize("semiring", ["maxplus", "minmax", "andor"])
def test_alpha_and_beta_scale_in_place(semiring):
    rng = np.random.default_rng(3)
    dtype = "uint8" if semiring == "andor" else "float32"
    a, b = data(dtype, (5, 6), rng, special=False), data(dtype, (6, 4), rng, special=False)
    c0 = data(dtype, (5, 4), rng, special=False)
    alpha, beta = (1, 0) if semiring == "andor" else (1.5, -0.5)
    out = c0.copy()
    result = tropical.matmul(a, b, semiring, alpha=alpha, beta=beta, out=out)
    assert result is out
    same(out, ref.matmul(semiring, a, b, alpha=alpha, beta=beta, c=c0))
    with pytest.raises(tropical.InvalidArgument, match="beta needs out"):
        tropical.matmul(a, b, semiring, beta=beta)


def test_out_must_fit():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    with pytest.raises(tropical.InvalidArgument, match="shape"):
        tropical.matmul(a, b, out=np.empty((2, 3), np.float32))
    with pytest.raises(tropical.InvalidArgument, match="dtype"):
        tropical.matmul(a, b, out=np.empty((3, 2), np.float64))
    with pytest.raises(tropical.InvalidArgument, match="row-major"):
        tropical.matmul(a, b, out=np.empty((3, 2), np.float32, order="F"))
    c = np.empty((3, 4), np.float32)[:, :2]  # padded rows are fine
    tropical.matmul(a, b, out=c)
    same(c, np.full((3, 2), 2.0, np.float32))


def test_batches_and_broadcasting():
    rng = np.random.default_rng(4)
    a, b = data("float64", (4, 5, 3), rng), data("float64", (4, 3, 6), rng)
    b1 = data("float64", (1, 3, 6), rng)
    b2 = data("float64", (3, 6), rng)
    for bb in (b, b1, b2):
        c, arg = tropical.matmul_argmax(a, bb, "minplus")
        assert c.shape == (4, 5, 6)
        for p in range(4):
            slice_b = bb if bb.ndim == 2 else bb[p if bb.shape[0] > 1 else 0]
            c_ref, arg_ref = ref.matmul_argmax("minplus", a[p], slice_b)
            same(c[p], c_ref)
            same(arg[p], arg_ref)
    # A transposed batch (each matrix column-major) is a transpose, not a copy.
    at = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    same(tropical.matmul(at, b, "maxplus"), tropical.matmul(a, b, "maxplus"))


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmul"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_route_through_the_argmax(semiring, dtype):
    rng = np.random.default_rng(5)
    a = np.abs(data(dtype, (6, 9), rng, special=False))
    b = np.abs(data(dtype, (9, 7), rng, special=False))
    a_t = np.asfortranarray(a)  # a stored transposed: its gradient still comes back in a's shape
    g = rng.standard_normal((6, 7)).astype(dtype)
    c, arg = tropical.matmul_argmax(a_t, b, semiring)
    ga_ref, gb_ref = ref.gradients(semiring, g, arg, a, b)
    same(tropical.backward_a(g, arg, a_t, b, semiring), ga_ref)
    same(tropical.backward_b(g, arg, a_t, b, semiring), gb_ref)


def test_batched_gradients_sum_over_a_broadcast_operand():
    rng = np.random.default_rng(6)
    a, b = data("float32", (3, 4, 5), rng, special=False), data("float32", (5, 2), rng, special=False)
    g = rng.standard_normal((3, 4, 2)).astype(np.float32)
    c, arg = tropical.matmul_argmax(a, b)
    gb = tropical.backward_b(g, arg, a, b)
    assert gb.shape == (5, 2)
    expect = sum(ref.gradients("maxplus", g[p], arg[p], a[p], b)[1] for p in range(3))
    np.testing.assert_allclose(gb, expect, rtol=1e-6)
    ga = tropical.backward_a(g, arg, a, b)
    for p in range(3):
        same(ga[p], ref.gradients("maxplus", g[p], arg[p], a[p], b)[0])


def test_generic_dlpack_objects_on_the_host_are_viewed_without_a_copy():
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 2), np.float32)

    class Producer:  # only the DLPack protocol, like an array of a framework tropical does not know
        def __init__(self, x):
            self.x = x

        def __dlpack__(self, stream=None):
            return self.x.__dlpack__()

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    if not hasattr(a, "__dlpack__"):
        pytest.skip("NumPy < 1.22 has no DLPack")
    same(tropical.matmul(Producer(a), Producer(b)), tropical.matmul(a, b))
