"""tropical.einsum, einsum_argmax, counting_einsum and einsum_path against a brute-force NumPy reference that
enumerates every configuration of small random networks (batch labels, hyperedges, diagonals, labels reduced
inside one operand, scalar outputs, one operand), on the CPU backend; the same on torch and CuPy where they
and a GPU are present."""

import itertools
import random

import numpy as np
import pytest

import reference as ref
import tropical
from tropical import _einsum_tree
from tropical._einsum_greedy import greedy

# semiring: element types exercised, and how to draw exact (integer-valued) elements
QUICK = tropical.TreeSA(trials=2, temperatures=20, sweeps=2)  # small networks need no long anneal
CASES = {"maxplus": ("float64", "int32"), "minplus": ("float32", "int64"), "maxmul": ("float64",),
         "maxmin": ("int16", "float32"), "minmax": ("int32",), "andor": ("uint8", "bool")}


def draw(rng, semiring, dtype, shape):
    if semiring == "andor":
        return np.asarray(rng.random(shape) < 0.6).astype(dtype)
    if semiring == "maxmul":
        return np.asarray(rng.integers(0, 4, shape)).astype(dtype)
    return np.asarray(rng.integers(-4, 5, shape)).astype(dtype)


def random_network(rng, max_operands=5, pool="abcdefg"):
    """(equation, shapes): 1..max_operands terms of 0..3 labels (a repeat now and then), extents 1..3."""
    sizes = {label: int(rng.integers(1, 4)) for label in pool}
    terms = []
    for _ in range(int(rng.integers(1, max_operands + 1))):
        term = [pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(0, 4)))]
        terms.append("".join(term))
    used = sorted(set("".join(terms)))
    output = [label for label in used if rng.random() < 0.35]
    rng.shuffle(output)
    equation = ",".join(terms) + "->" + "".join(output)
    return equation, [tuple(sizes[label] for label in term) for term in terms]


def parse(equation):
    left, right = equation.split("->")
    return left.split(","), right


def configurations(equation, shapes):
    """(labels, sizes, index grids): every label's index over the whole configuration space (label order)."""
    terms, _ = parse(equation)
    sizes = {}
    for term, shape in zip(terms, shapes):
        sizes.update(zip(term, shape))
    labels = sorted(sizes)
    grids = np.indices([sizes[label] for label in labels]) if labels else np.zeros((0,), dtype=np.int64)
    return labels, sizes, {label: grids[i] for i, label in enumerate(labels)}


def term_values(term, x, grids, shape):
    if not term:
        return np.broadcast_to(x, shape)
    return x[tuple(grids[label] for label in term)]


def brute_force(semiring, equation, operands):
    """The contraction by enumeration: the semiring product of every configuration, ⊕-reduced to the output."""
    terms, output = parse(equation)
    labels, sizes, grids = configurations(equation, [x.shape for x in operands])
    shape = tuple(sizes[label] for label in labels)
    dtype = operands[0].dtype
    total = np.full(shape, ref.one(semiring, dtype), dtype=dtype)
    for term, x in zip(terms, operands):
        total = ref.mul(semiring, total, term_values(term, x, grids, shape).astype(dtype))
    reduced = tuple(i for i, label in enumerate(labels) if label not in output)
    if semiring == "andor":
        out = (total != 0).any(axis=reduced).astype(dtype)
    elif semiring in ("minplus", "minmax"):
        out = total.min(axis=reduced)
    else:
        out = total.max(axis=reduced)
    kept = [label for label in labels if label in output]
    return np.transpose(out, [kept.index(label) for label in output]) if output else out


def value_at(semiring, equation, operands, point):
    """The semiring product of one configuration (label -> index)."""
    terms, _ = parse(equation)
    dtype = operands[0].dtype
    value = np.asarray(ref.one(semiring, dtype), dtype=dtype)
    for term, x in zip(terms, operands):
        value = ref.mul(semiring, value, np.asarray(x[tuple(point[label] for label in term)], dtype=dtype))
    return value


def networks(seed, count, max_operands=5):
    rng = np.random.default_rng(seed)
    return [random_network(rng, max_operands) for _ in range(count)], rng


@pytest.mark.parametrize("semiring", sorted(CASES))
def test_random_networks_equal_brute_force(semiring):
    cases, rng = networks(11, 40)
    for equation, shapes in cases:
        for dtype in CASES[semiring]:
            operands = [draw(rng, semiring, dtype, s) for s in shapes]
            want = brute_force(semiring, equation, operands)
            for optimize in ("greedy", QUICK) if dtype == CASES[semiring][0] else ("greedy",):
                got = tropical.einsum(equation, *operands, semiring=semiring, optimize=optimize)
                assert got.dtype == want.dtype and got.shape == want.shape, equation
                np.testing.assert_array_equal(got, want, err_msg=f"{equation} {dtype} {optimize}")


@pytest.mark.parametrize("semiring", sorted(CASES))
def test_the_argmax_assignment_reaches_the_optimum(semiring):
    cases, rng = networks(12, 40)
    for equation, shapes in cases:
        dtype = CASES[semiring][0]
        operands = [draw(rng, semiring, dtype, s) for s in shapes]
        terms, output = parse(equation)
        for memory_limit in (None, 4):
            try:
                result, assignment = tropical.einsum_argmax(equation, *operands, semiring=semiring,
                                                            memory_limit=memory_limit)
            except tropical.InvalidArgument:
                assert memory_limit is not None  # the output itself exceeds the limit
                continue
            np.testing.assert_array_equal(result, brute_force(semiring, equation, operands))
            reduced = sorted(set("".join(terms)) - set(output))
            assert sorted(assignment) == reduced, equation
            out_shape = result.shape
            for position in itertools.product(*(range(d) for d in out_shape)):
                point = dict(zip(output, position))
                for label in reduced:
                    index = assignment[label] if not out_shape else assignment[label][position]
                    assert isinstance(assignment[label], int) or assignment[label].shape == out_shape
                    point[label] = int(index)
                best = result[position]
                if semiring != "andor" and best == ref.zero(semiring, result.dtype):
                    continue  # nothing wins: any assignment will do
                if semiring == "andor" and not best:
                    continue
                assert value_at(semiring, equation, operands, point) == best, (equation, position, point)


def counting_brute_force(equation, pairs):
    terms, output = parse(equation)
    labels, sizes, grids = configurations(equation, [v.shape for v, _ in pairs])
    shape = tuple(sizes[label] for label in labels)
    dtype = pairs[0][0].dtype
    value, count = np.zeros(shape, dtype), np.ones(shape, dtype)
    for term, (v, c) in zip(terms, pairs):
        value = value + term_values(term, v, grids, shape)
        count = count * term_values(term, c, grids, shape)
    reduced = tuple(i for i, label in enumerate(labels) if label not in output)
    best = value.max(axis=reduced, keepdims=True)
    counts = np.where(value == best, count, 0).sum(axis=reduced)
    best = best.reshape(counts.shape)
    kept = [label for label in labels if label in output]
    perm = [kept.index(label) for label in output]
    return (np.transpose(best, perm), np.transpose(counts, perm)) if output else (best, counts)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_counting_einsum_equals_brute_force(dtype):
    cases, rng = networks(13, 60)
    for equation, shapes in cases:
        pairs = [(np.asarray(rng.integers(-1, 2, s)).astype(dtype), np.asarray(rng.integers(0, 3, s)).astype(dtype))
                 for s in shapes]
        want_v, want_c = counting_brute_force(equation, pairs)
        for memory_limit in (None, 2):
            try:
                v, c = tropical.counting_einsum(equation, *pairs, memory_limit=memory_limit)
            except tropical.InvalidArgument:
                assert memory_limit is not None  # the output itself exceeds the limit
                continue
            np.testing.assert_array_equal(v, want_v, err_msg=equation)
            np.testing.assert_array_equal(c, want_c, err_msg=equation)


def test_slicing_gives_the_same_bits():
    rng = np.random.default_rng(5)
    equation = "ab,bc,cd,de,ea,ac->b"
    operands = [rng.integers(-50, 50, (4, 4)).astype(np.float64) / 8 for _ in range(6)]  # sums exact in any order
    plain = tropical.einsum(equation, *operands)
    path, info = tropical.einsum_path(equation, *operands, memory_limit=4)
    assert info.slices > 1 and info.largest_intermediate <= 4
    sliced = tropical.einsum(equation, *operands, memory_limit=4)
    assert plain.tobytes() == sliced.tobytes()
    value, assignment = tropical.einsum_argmax(equation, *operands, memory_limit=4)
    assert value.tobytes() == plain.tobytes()
    for b in range(4):
        point = {label: int(assignment[label][b]) for label in "acde"}
        point["b"] = b
        assert value_at("maxplus", equation, operands, point) == value[b]


def test_given_paths_and_numpy_paths():
    rng = np.random.default_rng(6)
    equation = "ij,jk,kl,lm->im"
    operands = [rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((5, 2)),
                rng.standard_normal((2, 3))]
    want = brute_force("maxplus", equation, operands)
    for path in ([(0, 1), (0, 1), (0, 1)], [(2, 3), (0, 1), (0, 1)], [(0, 1, 2, 3)], [(1, 2), (0, 2), (0, 1)],
                 ["einsum_path", (0, 1), (0, 1), (0, 1)]):
        np.testing.assert_allclose(tropical.einsum(equation, *operands, optimize=path), want)
    path, info = tropical.einsum_path(equation, *operands, optimize="greedy")
    np.testing.assert_allclose(tropical.einsum(equation, *operands, optimize=path), want)
    assert info.log2_time > 0 and info.log2_space > 0 and info.largest_intermediate >= 1


def test_interleaved_form_and_implicit_output():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    want = brute_force("maxplus", "ij,jk->ik", [a, b])
    np.testing.assert_allclose(tropical.einsum(a, [0, 1], b, [1, 2], [0, 2]), want)
    np.testing.assert_allclose(tropical.einsum(a, [0, 1], b, [1, 2]), want)  # implicit: labels seen once
    np.testing.assert_allclose(tropical.einsum("ij,jk", a, b), want)
    np.testing.assert_allclose(tropical.einsum("ij,jk->ki", a, b), want.T)
    shapes_path, _ = tropical.einsum_path((3, 4), [0, 1], (4, 5), [1, 2], [0, 2])
    assert shapes_path == [(0, 1)]


def test_every_feature_in_one_network():
    rng = np.random.default_rng(8)
    # b: batch (in three operands and the output); i: hyperedge reduced away; jj: a diagonal; z: reduced inside one
    equation = "bij,bjjz,bik,ki->bk"
    shapes = [(2, 3, 4), (2, 4, 4, 2), (2, 3, 5), (5, 3)]
    operands = [rng.integers(-3, 4, s).astype(np.float64) for s in shapes]
    want = brute_force("maxplus", equation, operands)
    np.testing.assert_array_equal(tropical.einsum(equation, *operands), want)
    np.testing.assert_array_equal(tropical.einsum("iij->", operands[1][0]), brute_force("maxplus", "iij->",
                                                                                         [operands[1][0]]))
    np.testing.assert_array_equal(tropical.einsum("ij->ji", operands[3]), operands[3].T)
    value, assignment = tropical.einsum_argmax("ij,jk->", operands[0][0], operands[1][0, :, 0, :])
    assert isinstance(assignment["i"], int) and isinstance(assignment["k"], int)


def test_strided_views_as_operands():
    rng = np.random.default_rng(10)
    base = rng.integers(-5, 6, (6, 8, 4)).astype(np.float32)
    views = [base[::2, :, 1], base[1, ::-1, :].T, base[:, 3, ::2], base[2:5, 1:4, 0].T]  # (3,8) (4,8) (6,2) (3,3)
    equation = "ij,kj,xy,ab->ikb"
    want = brute_force("maxplus", equation, [np.ascontiguousarray(v) for v in views])
    np.testing.assert_array_equal(tropical.einsum(equation, *views), want)
    np.testing.assert_array_equal(tropical.einsum_argmax(equation, *views)[0], want)
    counts = [np.ones_like(v) for v in views]
    values, number = tropical.counting_einsum(equation, *zip(views, counts))
    np.testing.assert_array_equal(values, want)


class Wrapped:
    """An array known only through DLPack (as a JAX or TensorFlow array would be)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_operands():
    rng = np.random.default_rng(11)
    a, b = rng.integers(-5, 6, (3, 4)).astype(np.float64), rng.integers(-5, 6, (4, 2)).astype(np.float64)
    want = brute_force("maxplus", "ij,jk->ik", [a, b])
    np.testing.assert_array_equal(tropical.einsum("ij,jk->ik", Wrapped(a), Wrapped(b)), want)
    np.testing.assert_array_equal(tropical.einsum_argmax("ij,jk->ik", Wrapped(a), Wrapped(b))[0], want)
    values, counts = tropical.counting_einsum("ij,jk->ik", (Wrapped(a), Wrapped(np.ones_like(a))), (b, np.ones_like(b)))
    np.testing.assert_array_equal(values, want)


def test_treesa_beats_greedy_on_a_regular_graph():
    problem = independent_set_problem(60, seed=3)
    g = greedy(problem)
    from tropical._einsum_treesa import treesa
    t = treesa(problem, tropical.TreeSA(trials=1, temperatures=100, sweeps=10))
    tc_g, sc_g, _ = g.cost(problem)
    tc_t, sc_t, _ = t.cost(problem)
    assert tc_t < tc_g - 0.5 and sc_t <= sc_g, ((tc_t, sc_t), (tc_g, sc_g))  # at least 1.4 times faster
    _einsum_tree.from_path(_einsum_tree.to_path(t), t.count)  # its path is a valid path
    settings = dict(trials=3, temperatures=20, sweeps=2)
    one = treesa(problem, tropical.TreeSA(**settings))
    forked = treesa(problem, tropical.TreeSA(processes=2, **settings))
    assert one.children == forked.children  # trials are deterministic wherever they run


def independent_set_problem(n, seed):
    """The planner's view of the independent-set network of a random 3-regular graph (pairing model)."""
    rng = random.Random(seed)
    while True:
        stubs = [v for v in range(n) for _ in range(3)]
        rng.shuffle(stubs)
        edges = {(min(a, b), max(a, b)) for a, b in zip(stubs[::2], stubs[1::2]) if a != b}
        if len(edges) == 3 * n // 2:
            break
    leaves = [1 << v for v in range(n)] + [(1 << a) | (1 << b) for a, b in sorted(edges)]
    return _einsum_tree.Problem(leaves, 0, [1.0] * n)


@pytest.mark.parametrize("call, args, message", [
    ("einsum", ("ij,jk->iz", (2, 3), (3, 4)), "output label 'z'"),
    ("einsum", ("ij,jk->ik", (2, 3), (4, 4)), "label 'j' has size 3"),
    ("einsum", ("ij,jk->ik", (2, 0), (0, 4)), "label 'j' has dimension 0"),
    ("einsum", ("ij,jk->ii", (2, 3), (3, 4)), "appears twice"),
    ("einsum", ("ij,jk->ik", (2, 3)), "2 operand(s) but 1"),
    ("einsum", ("ijk,jk->ik", (2, 3), (3, 4)), "operand 0 has 2 dimension(s)"),
    ("path", [(0, 1)], "does not cover the operands"),
    ("path", [(0, 5), (0, 1)], "names positions outside"),
    ("optimize", "best", "optimize='best'"),
])
def test_bad_input_raises_invalid_argument_naming_it(call, args, message):
    rng = np.random.default_rng(9)
    if call == "einsum":
        equation, *shapes = args
        operands = [rng.standard_normal(s) for s in shapes]
        with pytest.raises(tropical.InvalidArgument) as e:
            tropical.einsum(equation, *operands)
    else:
        operands = [rng.standard_normal((2, 2)) for _ in range(3)]
        optimize = args
        with pytest.raises(tropical.InvalidArgument) as e:
            tropical.einsum("ij,jk,kl->il", *operands, optimize=optimize)
    assert message in str(e.value)


def test_mixed_dtypes_and_the_wrong_semiring_are_refused():
    a, b = np.zeros((2, 2)), np.zeros((2, 2), np.float32)
    with pytest.raises(tropical.InvalidArgument, match="dtypes"):
        tropical.einsum("ij,jk->ik", a, b)
    with pytest.raises(tropical.InvalidArgument, match="counting_einsum"):
        tropical.einsum("ij,jk->ik", a, a, semiring="counting")
    with pytest.raises(tropical.NotInCatalog):
        tropical.einsum("ij->i", a, semiring="andor")
    with pytest.raises(tropical.InvalidArgument, match="pair"):
        tropical.counting_einsum("ij->i", a)


def test_tall_products_run_as_their_transpose_with_the_same_bits(monkeypatch):
    """A pairwise product with more rows than a launch covers runs as Cᵀ = Bᵀ Aᵀ: values, argmax and counts
    equal the direct product (the threshold lowered so that small products take that path)."""
    from tropical import _einsum_arrays
    rng = np.random.default_rng(41)
    a = rng.integers(-3, 3, (6, 12, 5)).astype(np.float32)
    b = rng.integers(-3, 3, (6, 5, 3)).astype(np.float32)
    want_c, want_k = tropical.matmul_argmax(a, b, "maxplus")
    want_v, want_n = tropical.counting_matmul(a, np.ones_like(a), b, np.ones_like(b))
    monkeypatch.setattr(_einsum_arrays, "TALL", 8)
    ad = _einsum_arrays.adapter(a)
    np.testing.assert_array_equal(ad.matmul(a, b, "maxplus"), want_c)
    c, k = ad.matmul_argmax(a, b, "maxplus")
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(k, want_k)
    v, n = ad.counting_matmul(a, np.ones_like(a), b, np.ones_like(b))
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(n, want_n)
    x = rng.integers(-3, 3, (40, 3)).astype(np.float32)
    y = rng.integers(-3, 3, (3, 2)).astype(np.float32)
    np.testing.assert_array_equal(tropical.einsum("ij,jk->ik", x, y), tropical.matmul(x, y))
