"""The doc comment of every public function of the C++ faces (operations.FUNCTIONS), by face and function
key: the text of the `///` lines the faces' headers carry above each wrapper."""

DOCS = {
    "gpu": {
        "gemm": "C (m x n, ldc) = op(A) (x) op(B); C is not read.",
        "gemm_scaled": """C = alpha (x) (op(A) (x) op(B)) (+) beta (x) C with semiring elements alpha
and beta: beta = the zero overwrites C without reading it (as the call
without alpha and beta, at the same speed), beta = the one accumulates
(C = C (+) ...), in place.""",
        "gemm_dense": "C = A (x) B for densely packed, untransposed A (m x k), B (k x n), C (m x n).",
        "gemm_argmax": """C = op(A) (x) op(B) and argmax (m x n, ldargmax): the k whose product won
each element, ties to the smallest k, -1 where no product beat the zero.
k must be below 2^31.""",
        "backward_a": """dA (laid out like A: m x k, or k x m if ta) from dC (m x n) and the argmax
of the forward product; overwrites dA. b is read for MaxMul only (may be
null otherwise). Not deterministic: it scatters with atomics, so float
sums may differ in the last bits from run to run (the batched form is).""",
        "backward_b": """dB (laid out like B: k x n, or n x k if tb) from dC (m x n) and the argmax
of the forward product; overwrites dB. a is read for MaxMul only. Not
deterministic (atomics), like backward_a.""",
        "gemm_batched": """C[p] = op(A[p]) (x) op(B[p]) for p < batch; matrix p of each operand
starts stride elements after matrix p - 1. stride_a or stride_b may be 0
(one operand for the whole batch); negative strides, and a stride_c below
one product's extent ((m - 1) * ldc + n: products of C that could share an
element), are rejected. Small products (m and n up
to a small tile of codegen/spec.py) run one block per product.""",
        "gemm_batched_scaled": """C[p] = alpha (x) (op(A[p]) (x) op(B[p])) (+) beta (x) C[p] for p < batch,
with alpha and beta as in gemm (beta = the zero: C not read).""",
        "gemm_batched_argmax": """gemm_argmax of every product of a batch, strided like gemm_batched; the
argmax of product p (m x n, ldargmax) starts at argmax + p * stride_argmax.
Product p equals gemm_argmax on slice p. k must be below 2^31.""",
        "backward_a_batched": """backward_a of every product of a batch (dA[p] from dC[p], argmax[p] and,
for MaxMul, B[p]); overwrites every dA[p]. Deterministic: each element's
terms are added in increasing j without atomics, the same sums as the CPU
reference bit for bit. One thread per row of each product: fast for many
small products, slow for a few large ones (use backward_a there).""",
        "backward_b_batched": """backward_b of every product of a batch; overwrites every dB[p].
Deterministic (terms added in increasing i), like backward_a_batched; one
thread per column of each product.""",
    },
    "cpu": {
        "gemm": "C (m x n, ldc) = op(A) (x) op(B); C is not read.",
        "gemm_scaled": "C = alpha (x) (op(A) (x) op(B)) (+) beta (x) C (beta = the zero: C not read).",
        "gemm_dense": "C = A (x) B for densely packed, untransposed A (m x k), B (k x n), C (m x n).",
        "gemm_argmax": """C = op(A) (x) op(B) and argmax (m x n, ldargmax): the winning k of each
element, ties to the smallest k, -1 where no product beat the zero; k < 2^31.""",
        "backward_a": """dA (laid out like A) from dC (m x n) and the argmax; overwrites dA; b is read
for MaxMul only (may be null otherwise). Deterministic: each element sums its
terms in increasing j from 0, as the reference.""",
        "backward_b": """dB (laid out like B) from dC (m x n) and the argmax; overwrites dB; a is read
for MaxMul only. Deterministic: terms in increasing i from 0, as the reference.""",
        "gemm_batched": """C[p] = op(A[p]) (x) op(B[p]) for p < batch, operand p stride elements after
p - 1 (stride_a or stride_b may be 0; stride_c must keep the products apart).""",
        "gemm_batched_scaled": "C[p] = alpha (x) (op(A[p]) (x) op(B[p])) (+) beta (x) C[p] for p < batch.",
        "gemm_batched_argmax": "gemm_argmax of every product of a batch; argmax p at argmax + p * stride_argmax.",
        "backward_a_batched": ("backward_a of every product of a batch (dA[p] from dC[p], argmax[p], B[p]); "
                               "overwrites every dA[p]."),
        "backward_b_batched": ("backward_b of every product of a batch (dB[p] from dC[p], argmax[p], A[p]); "
                               "overwrites every dB[p]."),
    },
    "reference": {
        "gemm": "C (m x n) = op(A) (x) op(B); C is not read.",
        "gemm_scaled": "C (m x n) = alpha (x) (op(A) (x) op(B)) (+) beta (x) C (see above for the identities).",
        "gemm_argmax": "C = op(A) (x) op(B) and the winning k of every element (see above).",
        "backward_a": "dA (laid out like A) from dC (m x n) and the argmax; b is read for MaxMul only.",
        "backward_b": "dB (laid out like B) from dC (m x n) and the argmax; a is read for MaxMul only.",
        "gemm_batched": "C[p] = op(A[p]) (x) op(B[p]) for p < batch, operand p at base + p * stride.",
        "gemm_batched_scaled": "C[p] = alpha (x) (op(A[p]) (x) op(B[p])) (+) beta (x) C[p] for p < batch.",
        "gemm_batched_argmax": "gemm_argmax of every product of a batch; argmax p at argmax + p * stride_argmax.",
        "backward_a_batched": "backward_a of every product of a batch.",
        "backward_b_batched": "backward_b of every product of a batch.",
    },
}
