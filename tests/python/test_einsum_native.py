"""NumPy einsums run by the library's plan (tropical._einsum_native, include/tropical/einsum.hpp) give the Python
executor's bits: values and argmax assignments (the same ties) on random small networks, greedy, TreeSA and
given paths, sliced or not; the C ABI's plan reports the Python planner's costs."""

import numpy as np
import pytest

import tropical
from tropical import _einsum, _einsum_arrays, _einsum_exec, _einsum_native, _einsum_parse, _einsum_path
from test_einsum import CASES, QUICK, draw, networks


def python_executor(equation, operands, semiring, optimize, memory_limit):
    """(values, assignment) of the Python executor (what einsum and einsum_argmax run on other frameworks)."""
    plan = _einsum_path.plan(_einsum_parse.parse(equation, [x.shape for x in operands]), optimize, memory_limit)
    ad = _einsum_arrays.adapter(operands[0])
    values = _einsum.contract(ad, plan, operands, semiring)
    _, assign = _einsum.contract_argmax(ad, plan, operands, semiring)
    return values, assign


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("semiring", sorted(CASES))
def test_the_library_plan_gives_the_python_executors_bits(semiring):
    cases, rng = networks(31, 60)
    for equation, shapes in cases:
        dtype = CASES[semiring][0]
        operands = [draw(rng, semiring, dtype, s) for s in shapes]
        assert _einsum_native.usable(operands, _einsum_path.plan(_einsum_parse.parse(equation, shapes)), semiring)
        for optimize in ("greedy", QUICK):
            for memory_limit in (None, 4, 2):
                try:
                    want, want_assign = python_executor(equation, operands, semiring, optimize, memory_limit)
                except tropical.InvalidArgument:
                    continue
                got = tropical.einsum(equation, *operands, semiring=semiring, optimize=optimize,
                                      memory_limit=memory_limit)
                assert same_bits(got, want), (equation, optimize, memory_limit)
                assert type(got) is type(want), (equation, memory_limit)  # sliced scalars: NumPy scalars
                values, assign = tropical.einsum_argmax(equation, *operands, semiring=semiring, optimize=optimize,
                                                        memory_limit=memory_limit)
                assert same_bits(values, want), (equation, optimize, memory_limit)
                assert sorted(assign) == sorted(want_assign), equation
                for label in assign:
                    np.testing.assert_array_equal(assign[label], want_assign[label],
                                                  err_msg=f"{equation} {optimize} {memory_limit} {label}")


def test_the_c_plan_reports_the_python_planners_costs():
    rng = np.random.default_rng(5)
    for equation, shapes in networks(32, 20)[0]:
        operands = [draw(rng, "maxplus", "float64", s) for s in shapes]
        path, info = tropical.einsum_path(equation, *shapes)
        plan = _einsum_path.plan(_einsum_parse.parse(equation, shapes))
        handle = _einsum_native._handle(plan, "maxplus", "float64")
        import ctypes
        log2_time, log2_space = ctypes.c_double(), ctypes.c_double()
        handle._dll.tropical_einsum_plan_info(handle.handle, ctypes.addressof(log2_time),
                                              ctypes.addressof(log2_space), None, None, None)
        assert log2_time.value == info.log2_time and log2_space.value == info.log2_space, equation
        del operands, path


@pytest.mark.parametrize("semiring", ["maxplus", "minplus", "maxmin"])
def test_ties_fall_as_in_the_python_executor(semiring):
    # Values 0 and 1 only: most reductions tie, so the order of each step's contracted labels decides the winner.
    rng = np.random.default_rng(33)
    cases = [("ijk,jkl->il", [(2, 2, 3), (2, 3, 2)]), ("abc,cd,bd->a", [(2, 3, 2), (2, 3), (3, 3)]),
             ("ij,jk,ki->", [(3, 3), (3, 3), (3, 3)]), ("iij,jkk->ik", [(2, 2, 3), (3, 2, 2)])]
    cases += networks(34, 40)[0]
    for equation, shapes in cases:
        for _ in range(3):
            operands = [np.asarray(rng.integers(0, 2, s)).astype("float64") for s in shapes]
            for memory_limit in (None, 2):
                try:
                    want, want_assign = python_executor(equation, operands, semiring, "greedy", memory_limit)
                except tropical.InvalidArgument:
                    continue
                values, assign = tropical.einsum_argmax(equation, *operands, semiring=semiring,
                                                        memory_limit=memory_limit)
                assert same_bits(values, want), equation
                for label in assign:
                    np.testing.assert_array_equal(assign[label], want_assign[label], err_msg=f"{equation} {label}")


def test_counting_through_the_library_plan_gives_the_python_executors_bits():
    rng = np.random.default_rng(35)
    for equation, shapes in networks(36, 60)[0]:
        for dtype in ("float32", "float64"):
            values = [np.asarray(rng.integers(0, 3, s)).astype(dtype) for s in shapes]
            counts = [np.asarray(rng.integers(0, 3, s)).astype(dtype) for s in shapes]
            for memory_limit in (None, 2):
                try:
                    plan = _einsum_path.plan(_einsum_parse.parse(equation, shapes), "greedy", memory_limit)
                except tropical.InvalidArgument:
                    continue
                ad = _einsum_arrays.adapter(values[0])
                best = total = None
                for fixed in _einsum._slices(plan):
                    part = _einsum_exec.run(ad, plan, values, counts, "maxplus", "counting", fixed, None)
                    if best is None:
                        best, total = part.values, part.counts
                        continue
                    merged = np.fmax(best, part.values)
                    total = np.where(best == merged, total, 0) + np.where(part.values == merged, part.counts, 0)
                    best = merged
                got_values, got_counts = tropical.counting_einsum(equation, *zip(values, counts),
                                                                  memory_limit=memory_limit)
                np.testing.assert_array_equal(got_values, best, err_msg=equation)
                np.testing.assert_array_equal(got_counts, total, err_msg=equation)
                assert got_values.dtype == got_counts.dtype == np.dtype(dtype)
