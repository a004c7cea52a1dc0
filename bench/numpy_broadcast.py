#!/usr/bin/env python3
"""NumPy's broadcast max-plus product, the comparison row of bench/cpu.cpp.

Usage: numpy_broadcast.py N [repeats]. Prints the best time in seconds of
C = max_k (A[i, k] + B[k, j]) over N x N float32 operands, computed 16 rows of
A at a time as (a[i:i+16, :, None] + b[None]).max(1) (the usual formulation;
whole-matrix broadcasting would need N^3 floats of memory).
"""
import sys
import time

import numpy as np


def main():
    n = int(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rng = np.random.default_rng(1)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(0, n, 16):
            c[i:i + 16] = (a[i:i + 16, :, None] + b[None]).max(1)
        best = min(best, time.perf_counter() - start)
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
