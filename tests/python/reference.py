"""An independent NumPy oracle of the semantics in include/tropical/reference.hpp (written from the
documentation, not from the library): products, argmax with ties to the smallest k, alpha/beta, and the
gradients routed through the argmax."""

import numpy as np

ZERO_ONE = {  # semiring: (zero, one) as "lowest"/"highest"/0/1
    "maxplus": ("lo", 0), "minplus": ("hi", 0), "maxmul": (0, 1), "maxmin": ("lo", "hi"), "minmax": ("hi", "lo"),
    "andor": (0, 1),
}


def identity(dtype, which):
    dtype = np.dtype(dtype)
    if which in (0, 1):
        return dtype.type(which)
    if dtype.kind == "f":
        return dtype.type(-np.inf if which == "lo" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if which == "lo" else info.max)


def zero(semiring, dtype):
    return identity(dtype, ZERO_ONE[semiring][0])


def one(semiring, dtype):
    return identity(dtype, ZERO_ONE[semiring][1])


def mul(semiring, a, b):
    """Elementwise semiring product of broadcastable arrays a and b of one dtype."""
    dtype = a.dtype
    if semiring == "andor":
        return ((a != 0) & (b != 0)).astype(dtype)
    if semiring in ("maxmin", "minmax"):
        take_a = (a < b) if semiring == "maxmin" else (a > b)
        if dtype.kind == "f":
            take_a = take_a | np.isnan(a)
        return np.where(take_a, a, b)
    if dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            return a + b if semiring != "maxmul" else a * b
    info = np.iinfo(dtype)
    exact = (a.astype(object) + b.astype(object)) if semiring != "maxmul" else (a.astype(object) * b.astype(object))
    clipped = np.clip(exact, int(info.min), int(info.max))
    if semiring != "maxmul":
        z = zero(semiring, dtype)
        clipped = np.where((a == z) | (b == z), z, clipped)
    return clipped.astype(dtype)


def better(semiring, p, acc):
    return p < acc if semiring in ("minplus", "minmax") else p > acc


def products(semiring, a, b):
    """P[i, k, j] = a[i, k] (x) b[k, j]."""
    return mul(semiring, a[:, :, None], b[None, :, :])


def matmul_argmax(semiring, a, b):
    """(C, argmax) of one 2-D product."""
    m, k = a.shape
    n = b.shape[1]
    z = zero(semiring, a.dtype)
    c = np.full((m, n), z, dtype=a.dtype)
    arg = np.full((m, n), -1, dtype=np.int32)
    p = products(semiring, a, b) if k else np.zeros((m, 0, n), a.dtype)
    for kk in range(k):  # the sequential definition: strictly better replaces, so ties keep the smallest k
        if semiring == "andor":
            win = (p[:, kk, :] != 0) & (arg < 0)
            c = np.where(win, 1, c).astype(a.dtype)
        else:
            win = better(semiring, p[:, kk, :], c)
            c = np.where(win, p[:, kk, :], c)
        arg = np.where(win, kk, arg).astype(np.int32)
    return c, arg


def matmul(semiring, a, b, alpha=None, beta=None, c=None):
    """alpha (x) (a (x) b) (+) beta (x) c of one 2-D product."""
    prod, _ = matmul_argmax(semiring, a, b)
    if alpha is not None and alpha != one(semiring, a.dtype):
        prod = mul(semiring, np.asarray(alpha, dtype=a.dtype), prod)
    if beta is not None and beta != zero(semiring, a.dtype):
        old = c if beta == one(semiring, a.dtype) else mul(semiring, np.asarray(beta, dtype=a.dtype), c)
        prod = add(semiring, prod, old)
    return prod


def add(semiring, x, y):
    if semiring == "andor":
        return ((x != 0) | (y != 0)).astype(x.dtype)
    if x.dtype.kind == "f":
        return np.fmin(x, y) if semiring in ("minplus", "minmax") else np.fmax(x, y)
    return np.minimum(x, y) if semiring in ("minplus", "minmax") else np.maximum(x, y)


def gradients(semiring, grad_c, arg, a, b):
    """(dA, dB) of one 2-D product: dC(i, j) added to the winning a(i, k*) and b(k*, j) (times the other
    factor for maxmul), in increasing j (dA) and i (dB)."""
    m, k = a.shape
    n = b.shape[1]
    ga, gb = np.zeros_like(a), np.zeros_like(b)
    for i in range(m):
        for j in range(n):
            kk = arg[i, j]
            if kk < 0:
                continue
            g = grad_c[i, j]
            ga[i, kk] += g * b[kk, j] if semiring == "maxmul" else g
    for j in range(n):
        for i in range(m):
            kk = arg[i, j]
            if kk < 0:
                continue
            g = grad_c[i, j]
            gb[kk, j] += g * a[i, kk] if semiring == "maxmul" else g
    return ga, gb
