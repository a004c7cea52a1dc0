"""The facts of the tropical kernel catalog: semirings, element types, operations.

Everything the generator knows about the catalog lives here, as enums with
parallel tables (the short name used in symbols, the C++ spelling). Templates
only lay the code out; adding a kernel means editing this module.
"""

import enum
import itertools


class Semiring(enum.Enum):
    MAXPLUS = "maxplus"
    MINPLUS = "minplus"
    MAXMUL = "maxmul"


class Type(enum.Enum):
    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"


class Op(enum.Enum):
    GEMM = "gemm"
    GEMM_ARGMAX = "gemm_argmax"
    BACKWARD_A = "backward_a"
    BACKWARD_B = "backward_b"
    GEMM_BATCHED = "gemm_batched"


# C++ tag type of each semiring (tropical::MaxPlus, ...).
SEMIRING_TAG = {
    Semiring.MAXPLUS: "MaxPlus",
    Semiring.MINPLUS: "MinPlus",
    Semiring.MAXMUL: "MaxMul",
}

# The semiring's addition: "max" or "min". The winner of a reduction is the
# element that is strictly better than every earlier one (ties: smallest k).
SEMIRING_ADD = {
    Semiring.MAXPLUS: "max",
    Semiring.MINPLUS: "min",
    Semiring.MAXMUL: "max",
}

# The semiring's multiplication: "add" or "mul".
SEMIRING_MUL = {
    Semiring.MAXPLUS: "add",
    Semiring.MINPLUS: "add",
    Semiring.MAXMUL: "mul",
}

# The additive identity (zero) and multiplicative identity (one), as names of
# per-type constants the preamble defines: "lowest" is -inf for floats and
# numeric_limits<T>::lowest() for integers, "highest" is +inf or max().
SEMIRING_ZERO = {
    Semiring.MAXPLUS: "lowest",
    Semiring.MINPLUS: "highest",
    Semiring.MAXMUL: "zero",
}
SEMIRING_ONE = {
    Semiring.MAXPLUS: "zero",
    Semiring.MINPLUS: "zero",
    Semiring.MAXMUL: "one",
}

SEMIRING_DOC = {
    Semiring.MAXPLUS: "(max, +), zero -inf, one 0",
    Semiring.MINPLUS: "(min, +), zero +inf, one 0",
    Semiring.MAXMUL: "(max, *), zero 0, one 1; defined on non-negative values",
}

# Spelling of each element type in a fragment (NVRTC, no system headers) and
# in host C++.
TYPE_DEVICE = {
    Type.F32: "float",
    Type.F64: "double",
    Type.I32: "int",
    Type.I64: "long long",
}
TYPE_HOST = {
    Type.F32: "float",
    Type.F64: "double",
    Type.I32: "std::int32_t",
    Type.I64: "std::int64_t",
}
TYPE_IS_FLOAT = {Type.F32: True, Type.F64: True, Type.I32: False, Type.I64: False}

# C++ enumerator of each operation (tropical::Op::kGemm, ...).
OP_ENUM = {
    Op.GEMM: "kGemm",
    Op.GEMM_ARGMAX: "kGemmArgmax",
    Op.BACKWARD_A: "kBackwardA",
    Op.BACKWARD_B: "kBackwardB",
    Op.GEMM_BATCHED: "kGemmBatched",
}

# Which element types each operation exists for. Backward passes carry
# gradients, so they exist for floating-point types only.
OP_TYPES = {
    Op.GEMM: list(Type),
    Op.GEMM_ARGMAX: list(Type),
    Op.BACKWARD_A: [Type.F32, Type.F64],
    Op.BACKWARD_B: [Type.F32, Type.F64],
    Op.GEMM_BATCHED: list(Type),
}

# The seed catalog every build must contain (checked by the codegen test).
SEED = (
    [(Op.GEMM, s, t) for s in Semiring for t in Type]
    + [(Op.GEMM_ARGMAX, s, t) for s in Semiring for t in Type]
    + [(Op.BACKWARD_A, Semiring.MAXPLUS, t) for t in (Type.F32, Type.F64)]
    + [(Op.BACKWARD_B, Semiring.MAXPLUS, t) for t in (Type.F32, Type.F64)]
    + [(Op.GEMM_BATCHED, s, Type.F32) for s in Semiring]
)


class Kernel:
    """One entry of the catalog: an operation on one semiring and one element type."""

    def __init__(self, index, op, semiring, type_):
        self.id = index
        self.op = op
        self.semiring = semiring
        self.type = type_

    @property
    def name(self):
        """The procedural name: symbol, registry name and part of the cache key."""
        return f"tropical_{self.op.value}_{self.semiring.value}_{self.type.value}"

    @property
    def enumerator(self):
        """The KernelId enumerator, e.g. kGemmMaxplusF32."""
        parts = self.op.value.split("_") + [self.semiring.value, self.type.value]
        return "k" + "".join(p.capitalize() for p in parts)


def kernel_name(op, semiring, type_):
    return f"tropical_{op.value}_{semiring.value}_{type_.value}"


def catalog():
    """Every kernel, in id order: ops, then semirings, then types."""
    combos = [
        (op, s, t)
        for op in Op
        for s, t in itertools.product(Semiring, Type)
        if t in OP_TYPES[op]
    ]
    return [Kernel(i, op, s, t) for i, (op, s, t) in enumerate(combos)]


# Per-type constants and functions a fragment uses, spelled for NVRTC with no
# system headers. "lowest"/"highest" are the semiring infinities: IEEE -inf and
# +inf for floats, numeric_limits<T>::lowest()/max() for integers.
TYPE_LOWEST = {
    Type.F32: "__int_as_float(0xff800000)",
    Type.F64: "__longlong_as_double(0xfff0000000000000ULL)",
    Type.I32: "(-2147483647 - 1)",
    Type.I64: "(-9223372036854775807LL - 1)",
}
TYPE_HIGHEST = {
    Type.F32: "__int_as_float(0x7f800000)",
    Type.F64: "__longlong_as_double(0x7ff0000000000000ULL)",
    Type.I32: "2147483647",
    Type.I64: "9223372036854775807LL",
}
# IEEE maximum/minimum: a NaN operand is ignored unless both are NaN.
TYPE_FMAX = {Type.F32: "fmaxf", Type.F64: "fmax"}
TYPE_FMIN = {Type.F32: "fminf", Type.F64: "fmin"}


def launch(kernel):
    """Launch geometry of a kernel: threads per block (x, y) and the C tile one
    block computes (rows x cols). The host API derives the grid from it."""
    return {"block_x": 16, "block_y": 16, "tile_m": 16, "tile_n": 16,
            "threads": 256, "smem_bytes": 0}
