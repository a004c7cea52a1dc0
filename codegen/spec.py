"""The facts of the tropical kernel catalog: semirings, element types, operations.

Everything the generator knows about the catalog lives here, as enums with
parallel tables (the short name used in symbols, the C++ spelling). Templates
only lay the code out; adding a kernel means editing this module.
"""

import collections
import enum
import itertools


class Semiring(enum.Enum):
    MAXPLUS = "maxplus"
    MINPLUS = "minplus"
    MAXMUL = "maxmul"
    MAXMIN = "maxmin"
    MINMAX = "minmax"
    ANDOR = "andor"
    # CountingTropical (values with counts, stored as two arrays): see COUNTING below.
    COUNTING = "counting"
    # AndOr on bit-packed words (tropical/bits.hpp): see BITS below.
    BITS = "bits"


class Type(enum.Enum):
    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    I16 = "i16"
    B32 = "b32"  # 32 booleans packed in a word (Semiring.BITS only)


class Op(enum.Enum):
    GEMM = "gemm"
    GEMM_ARGMAX = "gemm_argmax"
    BACKWARD_A = "backward_a"
    BACKWARD_B = "backward_b"
    GEMM_BATCHED = "gemm_batched"
    GEMM_BATCHED_ARGMAX = "gemm_batched_argmax"
    BACKWARD_A_BATCHED = "backward_a_batched"
    BACKWARD_B_BATCHED = "backward_b_batched"


# C++ tag type of each semiring (tropical::MaxPlus, ...).
SEMIRING_TAG = {
    Semiring.MAXPLUS: "MaxPlus",
    Semiring.MINPLUS: "MinPlus",
    Semiring.MAXMUL: "MaxMul",
    Semiring.MAXMIN: "MaxMin",
    Semiring.MINMAX: "MinMax",
    Semiring.ANDOR: "AndOr",
    Semiring.COUNTING: "CountingTropical",
    Semiring.BITS: "AndOrBits",
}

# The semiring's addition: "max", "min" or "or". The winner of a reduction is
# the element that is strictly better than every earlier one (ties: smallest
# k); for "or" that is the first true product.
SEMIRING_ADD = {
    Semiring.MAXPLUS: "max",
    Semiring.MINPLUS: "min",
    Semiring.MAXMUL: "max",
    Semiring.MAXMIN: "max",
    Semiring.MINMAX: "min",
    Semiring.ANDOR: "or",
    Semiring.COUNTING: "max",
    Semiring.BITS: "or",
}

# The semiring's multiplication: "add", "mul", "min", "max" or "and".
SEMIRING_MUL = {
    Semiring.MAXPLUS: "add",
    Semiring.MINPLUS: "add",
    Semiring.MAXMUL: "mul",
    Semiring.MAXMIN: "min",
    Semiring.MINMAX: "max",
    Semiring.ANDOR: "and",
    Semiring.COUNTING: "add",
    Semiring.BITS: "and",
}

# The additive identity (zero) and multiplicative identity (one), as names of
# per-type constants the preamble defines: "lowest" is -inf for floats and
# numeric_limits<T>::lowest() for integers, "highest" is +inf or max().
SEMIRING_ZERO = {
    Semiring.MAXPLUS: "lowest",
    Semiring.MINPLUS: "highest",
    Semiring.MAXMUL: "zero",
    Semiring.MAXMIN: "lowest",
    Semiring.MINMAX: "highest",
    Semiring.ANDOR: "zero",
    Semiring.COUNTING: "lowest",
    Semiring.BITS: "zero",
}
SEMIRING_ONE = {
    Semiring.MAXPLUS: "zero",
    Semiring.MINPLUS: "zero",
    Semiring.MAXMUL: "one",
    Semiring.MAXMIN: "highest",
    Semiring.MINMAX: "lowest",
    Semiring.ANDOR: "one",
    Semiring.COUNTING: "zero",
    Semiring.BITS: "one",
}

SEMIRING_DOC = {
    Semiring.MAXPLUS: "(max, +), zero -inf, one 0",
    Semiring.MINPLUS: "(min, +), zero +inf, one 0",
    Semiring.MAXMUL: "(max, *), zero 0, one 1; defined on non-negative values",
    Semiring.MAXMIN: "(max, min), zero -inf, one +inf; bottleneck (widest) paths",
    Semiring.MINMAX: "(min, max), zero +inf, one -inf; minimax paths",
    Semiring.ANDOR: "(or, and) over bytes, zero false (0), one true (1); any non-zero byte is true, results are 0 or 1",
    Semiring.COUNTING: ("CountingTropical: (value, count) elements, (max, +) on values with the counts of tied "
                        "maxima added, products multiply counts; zero (-inf, 0), one (0, 1)"),
    Semiring.BITS: ("(or, and) over bit-packed booleans (tropical/bits.hpp): A packed by rows, B by columns, C as "
                    "packed bits, bytes or int32 witness counts"),
}

# The element types each semiring is generated for.
NUMBER_TYPES = [Type.F32, Type.F64, Type.I32, Type.I64]
# int16 for every semiring over numbers: -inf/+inf are lowest()/max()
# and the multiplication saturates, as for i32; MaxPlus/MinPlus products use
# Hopper's DPX 16x2 instructions where exact (templates/gemm_tile_i16x2.cuh.j2).
SEMIRING_TYPES = {
    Semiring.MAXPLUS: NUMBER_TYPES + [Type.I16],
    Semiring.MINPLUS: NUMBER_TYPES + [Type.I16],
    Semiring.MAXMUL: NUMBER_TYPES + [Type.I16],
    Semiring.MAXMIN: NUMBER_TYPES + [Type.I16],
    Semiring.MINMAX: NUMBER_TYPES + [Type.I16],
    Semiring.ANDOR: [Type.U8],
    Semiring.COUNTING: [Type.F32, Type.F64],
    Semiring.BITS: [Type.B32],
}

# Spelling of each element type in a fragment (NVRTC, no system headers) and
# in host C++.
TYPE_DEVICE = {
    Type.F32: "float",
    Type.F64: "double",
    Type.I32: "int",
    Type.I64: "long long",
    Type.U8: "unsigned char",
    Type.I16: "short",
    Type.B32: "unsigned",
}
TYPE_HOST = {
    Type.F32: "float",
    Type.F64: "double",
    Type.I32: "std::int32_t",
    Type.I64: "std::int64_t",
    Type.U8: "std::uint8_t",
    Type.I16: "std::int16_t",
    Type.B32: "std::uint32_t",
}
TYPE_IS_FLOAT = {Type.F32: True, Type.F64: True, Type.I32: False, Type.I64: False, Type.U8: False, Type.I16: False,
                 Type.B32: False}

# C++ enumerator of each operation (tropical::Op::kGemm, ...).
OP_ENUM = {
    Op.GEMM: "kGemm",
    Op.GEMM_ARGMAX: "kGemmArgmax",
    Op.BACKWARD_A: "kBackwardA",
    Op.BACKWARD_B: "kBackwardB",
    Op.GEMM_BATCHED: "kGemmBatched",
    Op.GEMM_BATCHED_ARGMAX: "kGemmBatchedArgmax",
    Op.BACKWARD_A_BATCHED: "kBackwardABatched",
    Op.BACKWARD_B_BATCHED: "kBackwardBBatched",
}

# The template of each operation's kernel (templates/), and of its quick tier (ops with one tier have none).
OP_TEMPLATE = {
    Op.GEMM: "gemm.cu.j2",
    Op.GEMM_ARGMAX: "gemm_argmax.cu.j2",
    Op.BACKWARD_A: "backward_a.cu.j2",
    Op.BACKWARD_B: "backward_b.cu.j2",
    Op.GEMM_BATCHED: "gemm_batched.cu.j2",
    Op.GEMM_BATCHED_ARGMAX: "gemm_batched.cu.j2",
    Op.BACKWARD_A_BATCHED: "backward_a_batched.cu.j2",
    Op.BACKWARD_B_BATCHED: "backward_b_batched.cu.j2",
}

QUICK_TEMPLATE = {
    Op.GEMM: "gemm_quick.cu.j2",
    Op.GEMM_ARGMAX: "gemm_argmax_quick.cu.j2",
    Op.GEMM_BATCHED: "gemm_batched_quick.cu.j2",
    Op.GEMM_BATCHED_ARGMAX: "gemm_batched_quick.cu.j2",
}

BACKWARD_OPS = (Op.BACKWARD_A, Op.BACKWARD_B, Op.BACKWARD_A_BATCHED, Op.BACKWARD_B_BATCHED)
BATCHED_OPS = (Op.GEMM_BATCHED, Op.GEMM_BATCHED_ARGMAX, Op.BACKWARD_A_BATCHED, Op.BACKWARD_B_BATCHED)
ARGMAX_OPS = (Op.GEMM_ARGMAX, Op.GEMM_BATCHED_ARGMAX)

# Backward passes carry gradients routed through the argmax, so they exist
# for floating-point types and for semirings whose product has a derivative
# in its operands (+ and *). MaxMin/MinMax (the product selects an operand; a
# gradient would be a subgradient choice) and AndOr (booleans) have none.
# Every product op (gemm, argmax, batched, batched argmax) exists for every
# semiring x type of SEMIRING_TYPES: the argmax is the first k whose product
# wins, which for MaxMin/MinMax is the bottleneck's witness and for AndOr the
# first k with a(i, k) and b(k, j) both true.
BACKWARD_SEMIRINGS = [Semiring.MAXPLUS, Semiring.MINPLUS, Semiring.MAXMUL]
BACKWARD_TYPES = [Type.F32, Type.F64]


def exists(op, semiring, type_):
    """True if the catalog has op for this semiring and element type."""
    if type_ not in SEMIRING_TYPES[semiring]:
        return False
    if semiring in STRUCTURED_SEMIRINGS:
        return op in STRUCTURED_OPS_OF.get(semiring, STRUCTURED_OPS)
    if op in BACKWARD_OPS:
        return semiring in BACKWARD_SEMIRINGS and type_ in BACKWARD_TYPES
    return True

# The seed catalog every build must contain (checked by the codegen test).
_SEED_SEMIRINGS = (Semiring.MAXPLUS, Semiring.MINPLUS, Semiring.MAXMUL)
SEED = (
    [(Op.GEMM, s, t) for s in _SEED_SEMIRINGS for t in NUMBER_TYPES]
    + [(Op.GEMM_ARGMAX, s, t) for s in _SEED_SEMIRINGS for t in NUMBER_TYPES]
    + [(Op.BACKWARD_A, Semiring.MAXPLUS, t) for t in (Type.F32, Type.F64)]
    + [(Op.BACKWARD_B, Semiring.MAXPLUS, t) for t in (Type.F32, Type.F64)]
    + [(Op.GEMM_BATCHED, s, Type.F32) for s in _SEED_SEMIRINGS]
)


class Kernel:
    """One entry of the catalog: an operation on one semiring and one element
    type, with the default tile (tile is None) or a small tile of SMALL_TILES."""

    def __init__(self, index, op, semiring, type_, tile=None):
        self.id = index
        self.op = op
        self.semiring = semiring
        self.type = type_
        self.tile = tile

    @property
    def variant(self):
        """"" for the default tile, else "<tile_m>x<tile_n>"."""
        if self.tile is None:
            return ""
        return self.tile.label or f"{self.tile.tile_m}x{self.tile.tile_n}"

    @property
    def name(self):
        """The procedural name: symbol, registry name and part of the cache key."""
        return kernel_name(self.op, self.semiring, self.type) + (f"_{self.variant}" if self.variant else "")

    @property
    def enumerator(self):
        """The KernelId enumerator, e.g. kGemmMaxplusF32 or kGemmBatchedMaxplusF32Tile16x16."""
        parts = self.op.value.split("_") + ([self.semiring.value] if self.semiring else []) + [self.type.value]
        suffix = f"Tile{self.variant[:1].upper()}{self.variant[1:]}" if self.variant else ""
        return "k" + "".join(p.capitalize() for p in parts) + suffix


def kernel_name(op, semiring, type_):
    """tropical_<op>_<semiring>_<type>; a device op without a semiring (semiring None) has no such part."""
    return f"tropical_{op.value}_" + (f"{semiring.value}_" if semiring else "") + type_.value


def catalog():
    """Every kernel, in id order: ops, then semirings, then types, each
    default tile followed by its small tiles (smallest first) and its split-k
    kernel (SPLIT_OPS)."""
    kernels = []
    for op in Op:
        for s, t in itertools.product(Semiring, Type):
            if not exists(op, s, t):
                continue
            kernels.append(Kernel(len(kernels), op, s, t))
            skinny_tiles = STRUCTURED_SKINNY_TILES.get(s, {}) if s in STRUCTURED_SEMIRINGS else SKINNY_TILES
            skinny = skinny_tiles.get(op, {}).get(t)
            if s in STRUCTURED_SEMIRINGS:
                if skinny:
                    kernels.append(Kernel(len(kernels), op, s, t, skinny))
                if s == Semiring.COUNTING and t in COUNTING_FEW_TILES:
                    kernels.append(Kernel(len(kernels), op, s, t, COUNTING_FEW_TILES[t]))
                continue
            for tile in SMALL_TILES.get(op, {}).get(t, []) + ([skinny] if skinny else []):
                kernels.append(Kernel(len(kernels), op, s, t, tile))
            if op in SPLIT_OPS:
                kernels.append(Kernel(len(kernels), op, s, t, SPLIT_TILE))
    for op, d in DEVICE_OPS.items():
        for s, t in itertools.product(d.semirings or (None,), d.types):
            kernels.append(Kernel(len(kernels), op, s, t))
    return kernels


# Per-type constants and functions a fragment uses, spelled for NVRTC with no
# system headers. "lowest"/"highest" are the semiring infinities: IEEE -inf and
# +inf for floats, numeric_limits<T>::lowest()/max() for integers.
TYPE_LOWEST = {
    Type.F32: "__int_as_float(0xff800000)",
    Type.F64: "__longlong_as_double(0xfff0000000000000ULL)",
    Type.I32: "(-2147483647 - 1)",
    Type.I64: "(-9223372036854775807LL - 1)",
    Type.U8: "(unsigned char)0",
    Type.I16: "(short)(-32767 - 1)",
    Type.B32: "0u",
}
TYPE_HIGHEST = {
    Type.F32: "__int_as_float(0x7f800000)",
    Type.F64: "__longlong_as_double(0x7ff0000000000000ULL)",
    Type.I32: "2147483647",
    Type.I64: "9223372036854775807LL",
    Type.U8: "(unsigned char)255",
    Type.I16: "(short)32767",
    Type.B32: "0xffffffffu",
}
# IEEE maximum/minimum: a NaN operand is ignored unless both are NaN.
TYPE_FMAX = {Type.F32: "fmaxf", Type.F64: "fmax"}
TYPE_FMIN = {Type.F32: "fminf", Type.F64: "fmin"}


# Bytes of one element, and of the vector (global and shared-memory accesses)
# a tile uses unless it says otherwise: 16 bytes; bytes (AndOr) use 4-byte
# vectors so that a thread tile of 8 x 8 stays whole vectors.
TYPE_BYTES = {Type.F32: 4, Type.F64: 8, Type.I32: 4, Type.I64: 8, Type.U8: 1, Type.I16: 2, Type.B32: 4}
TYPE_VEC_BYTES = {Type.F32: 16, Type.F64: 16, Type.I32: 16, Type.I64: 16, Type.U8: 4, Type.I16: 16, Type.B32: 16}

# A tiling of a product: each block computes a tile_m x tile_n tile of C,
# walking k in steps of tile_k through double-buffered shared memory; each of
# its threads owns thread_m x thread_n elements of the tile in registers.
# min_blocks is the residency the register budget is fitted to
# (__launch_bounds__); vec_bytes, if set, the vector width (else the type's).
# chunk (argmax only, default tile_k): the k-steps reduced between two
# compares with the running winner, hence also the products the final rescan
# of each element recomputes. label, if set, names the variant (default
# "<tile_m>x<tile_n>"), for two tilings of the same C tile. ring (default 2:
# double buffering): the k-tiles shared memory holds; an argmax whose whole k
# fits (k <= ring x tile_k) rescans its winners from there, not from global
# memory (templates/argmax.cuh.j2). lanes, if set, is the warp's shape in
# threads (along n, along m; default WARP_LANES_N x WARP_LANES_M). cells, if
# set (argmax only), is the k up to which the block also keeps each operand
# as chunk cells (a row's kChunk values of one chunk, contiguous) and rescans
# its winners from those (templates/argmax_cells.cuh.j2); cells_ring, if set,
# makes the cells the k-tiles' ring (cells = ring x tile_k): the k-tiles are
# stored into the cells and the product reads them there, with no k-major copy.
Tile = collections.namedtuple("Tile", "tile_m tile_n tile_k thread_m thread_n min_blocks vec_bytes chunk label ring "
                              "won_shared lanes cells cells_ring",
                              defaults=(None, None, None, None, False, None, 0, False))

# Default tiles per operation and element type. The argmax tiles are narrower
# because each element of C also carries the maximum at its chunk's start and
# an index. f32's keeps the indices in shared memory (won_shared), which frees
# the registers for 8 x 4 thread tiles in blocks of 128 (H100, 8192^3, lab:
# 9.51 -> 10.89 T; in the library, compiled by NVRTC, 9.49 -> 10.43 T; chunks
# of 8, 10.0 T; 4 x 8 thread tiles, 9.8 T; 3 or 2 blocks per SM, 10.6 / 10.5 T;
# chunks of 32 or 64, whose rescan reads twice or four times as much, 7.7 / 4.5 T;
# the winning k found at once in shared memory instead of rescanned, 9.3 T).
# Timed as NVRTC builds them (third session, tools/nvrtc_cubin.py), the f32
# argmax runs best at 3 blocks per SM in warps of 16 x 2 threads (10.44 ->
# 10.81 T; 3 per SM with 8 x 4 warps, 10.74; 16 x 2 at 4 per SM, 10.43; 4 x 8,
# 10.71) and the f32 gemm in warps of 16 x 2 (12.39 -> 12.59 T; 4 x 8, 12.39):
# a warp's 16 x 2 threads read 2 distinct vectors of A (broadcast) and 16 of B.
GEMM_TILES = {
    Op.GEMM: {
        Type.F32: Tile(128, 128, 16, 8, 8, 2, lanes=(16, 2)),
        Type.I32: Tile(128, 128, 8, 8, 8, 2),
        Type.F64: Tile(128, 64, 8, 8, 4, 2),
        Type.I64: Tile(64, 64, 8, 4, 4, 2),
        Type.U8: Tile(128, 128, 16, 8, 8, 2),
    },
    Op.GEMM_ARGMAX: {
        Type.F32: Tile(64, 64, 16, 8, 4, 3, won_shared=True, lanes=(16, 2)),
        Type.I32: Tile(64, 64, 16, 4, 4, 2),
        Type.F64: Tile(64, 64, 8, 4, 4, 2),
        Type.I64: Tile(64, 64, 8, 4, 4, 2),
        Type.U8: Tile(64, 64, 16, 4, 4, 2),
    },
    Op.GEMM_BATCHED: {
        Type.F32: Tile(64, 64, 16, 4, 4, 4),
        Type.I32: Tile(64, 64, 16, 4, 4, 4),
        Type.F64: Tile(64, 64, 8, 4, 4, 2),
        Type.I64: Tile(64, 64, 8, 4, 4, 2),
        Type.U8: Tile(64, 64, 16, 4, 4, 4),
    },
}
GEMM_TILES[Op.GEMM_BATCHED_ARGMAX] = GEMM_TILES[Op.GEMM_ARGMAX]

# Small tiles of the batched products, smallest first. The launcher takes the
# first whose tile holds the whole m x n of one product (one block per
# product, no idle threads), else the default tile: batches of 16^3 and 32^3
# products are memory-bound and a 64 x 64 tile would leave 3/4 or 15/16 of
# its threads idle; 64^3 products get the 4 x 4 thread tiles of the default
# in blocks of 256 threads, fitted to 4 blocks per SM (measured on the H100:
# 8.8 T; 8 x 8 thread tiles in blocks of 64, 7.2 T; fitting 4 x 4 to 6 or 8
# blocks per SM spills, 5.6 and 3.9 T; k steps of 32, 8.8 T). The batched
# argmax tiles compare every 4 k-steps (chunk 4): the rescan of each element
# then recomputes 4 products, not 16 (64^3: 1.4 -> 3.8 T; chunk 8: 3.0 T).
# The f32 ones keep four k-tiles in shared memory (ring=4), so products with
# k <= 64 rescan from there instead of global memory (H100: 64^3 3.73 ->
# 4.54 T, 32^3 2.22 -> 3.77 T, 16^3 1.40 -> 2.33 T; chunk 8 or 16 then lost,
# 3.6 / 2.2 T at 64^3, as did 4 x 2 thread tiles, 4.1 T, and fewer blocks
# looping over more products, 4.1-4.4 T). With the running maximum carried
# through the chunks (no select): 64^3 takes 8 x 4
# thread tiles in blocks of 128 at 3 per SM (4.52 -> 5.19 T; 4 x 4 at 3 per SM,
# 4.1 T; winners in shared memory, 3.8-4.2 T), 32^3 and 16^3 compare every 2
# k-steps (3.77 -> 4.22 T, 2.30 -> 2.36 T; 8 x 4 thread tiles spill there).
# The rescan from the k-major ring then cost 0.044 of the 64^3 product's
# 0.210 ms, 0.026 of it bank conflicts (each lane at its own chunk, a warp's
# lanes met on 8 banks): the 64 x 64 f32 tile now copies each k-tile, while it
# is in the double buffer, into chunk cells (cells=64: a row's kChunk values of
# one chunk contiguous, at a place set by the row or column) and rescans a
# chunk as one vector of each operand (H200: 5.22 -> 6.18 T, MaxMin 4.55 ->
# 4.84; ncu: issue slots 62 -> 71 % busy). The 32 x 32 tile takes cells with
# chunks of 4 (lab, H200: 4.14 -> 4.41 T; cells with chunks of 2, 4.19; the
# ring with chunks of 4, 3.69); the 16 x 16 tile keeps the ring (with cells and
# the k loop reading them with no ring, it lost 10 %). On the 64 x 64 tile,
# chunks of 8 (5.36 T), warps of 16 x 2 (6.00), 4 blocks an SM (4.52, spills)
# and 4 x 4 thread tiles (5.17) lost to the kept 6.08. The 32 x 32 tile's
# cells are its ring (cells_ring: no k-major copy, none copied from; lab, H200:
# 16384 x 32^3 4.64 -> 4.92 T, kernels_bench 4.78 -> 5.13; the 64 x 64 tile so
# spills 84 bytes at 168 registers and lost, 6.14 -> 5.65 (reading A's cells 4
# rows at a time, 32 bytes and MaxMin's 52: kernels_bench MaxPlus +0.9 %, MaxMin
# -2.9 %), as did 4 x 4 thread tiles there, 5.93; a 32 x 32 cells-ring tile of
# cells=64 ran 64^3 at 6.30).
SMALL_TILES = {
    Op.GEMM_BATCHED: {
        Type.F32: [Tile(16, 16, 16, 4, 2, 16, 8), Tile(32, 32, 16, 4, 4, 8), Tile(64, 64, 16, 4, 4, 4)],
        Type.F64: [Tile(16, 16, 8, 4, 2, 16), Tile(32, 32, 8, 4, 4, 8)],
    },
    Op.GEMM_BATCHED_ARGMAX: {
        Type.F32: [Tile(16, 16, 16, 4, 2, 16, 8, 2, ring=4), Tile(32, 32, 16, 4, 4, 8, None, 4, cells=32, cells_ring=True),
                   Tile(64, 64, 16, 8, 4, 3, None, 4, cells=64)],
        Type.F64: [Tile(16, 16, 8, 4, 2, 16), Tile(32, 32, 8, 4, 4, 8)],
    },
}

# Skinny tiles of the batched products (templates/gemm_skinny.cu.j2): one thread per column of C holding up to
# `rows` rows in registers, op(A) staged chunk_k k-steps at a time in shared memory. The launcher takes one for
# products of at most `rows` rows that no small tile holds (any n, any k): the pairwise steps of tensor networks
# of small bond dimension, C of 2-8 rows and millions of columns, on which the tiled kernels idle most of a tile
# (an H200 ran tropical.einsum's largest such steps at 52-104 GB/s of C written, bench/RESULTS.md).
SkinnyTile = collections.namedtuple("SkinnyTile", "rows threads chunk_k label", defaults=("skinny",))
SKINNY_TILES = {
    Op.GEMM_BATCHED: {Type.F32: SkinnyTile(8, 256, 128), Type.F64: SkinnyTile(8, 256, 64)},
    Op.GEMM_BATCHED_ARGMAX: {Type.F32: SkinnyTile(8, 256, 128), Type.F64: SkinnyTile(8, 256, 64)},
}


# Split k (templates/gemm_split.cu.j2, src/split_k.cpp): a plain product whose tiles leave the device's last
# wave partly empty, or are too few to fill one, computes its last rows of tiles with their k split over several
# blocks each, in a second kernel of its own fragment, <name>_split, launched as the first one's programmatic
# dependent. Its tile is the tuned kernel's; it has one tier, and the launcher asks for it without waiting
# (Registry::kernel_if_ready: the product runs unsplit until its compile, queued in the background, is done), so
# the plain kernel's cold compile is not its cost (in the plain kernel's own module, the two compiled 2.4-3.9x as
# long: bench/RESULTS.md, the split-k sessions).
SplitTile = collections.namedtuple("SplitTile", "label", defaults=("split",))
SPLIT_TILE = SplitTile()
SPLIT_OPS = (Op.GEMM,)
SPLIT_TEMPLATE = "gemm_split.cu.j2"


def argmax_rescan(tile_k, chunk, ring, cells=0):
    """How the argmax's rescan of global memory walks a winning chunk
    (templates/argmax.cuh.j2): 'serial' (out of line, stopping at the first
    match: chunks of a whole k-tile) or 'unrolled' (the chunk's loads all at
    once: short chunks). Kernels whose k-tiles stay resident (ring > 2) rescan
    from shared memory where k fits (as do kernels with chunk cells), so their
    global rescan, for larger k, is the serial one, which adds no registers to
    the kernel. Measured on the H100 (bench/RESULTS.md): a rescan taking one
    k-step of every element at a time, or walking pointers by a uniform step,
    lost to these."""
    return "serial" if chunk == tile_k or ring > 2 or cells else "unrolled"

def argmax_rescan_group(op):
    """k-steps the serial rescan loads at a time before comparing them. Its loads
    mostly miss to DRAM, so gemm_argmax loads two (H200, f32 8192^3 10.82 ->
    10.97 T, 4096^3 9.34 -> 10.02 T; three at a time 10.85 T; prefetching each
    element's chunk to L2 first, 9.9-10.8 T, or one k-step of 4-32 elements at
    a time, 9.7-10.8 T, lost: bench/RESULTS.md). The batched argmax kernels
    load one: two gave most of them more spills (the f32 64^3 one 52 -> 96
    bytes, and 1.7 % slower)."""
    return 2 if op == Op.GEMM_ARGMAX else 1

# Threads of a tiled block form warps of 8 (along n) x 4 (along m) lanes unless
# the tile says otherwise (Tile.lanes), so a warp's shared-memory reads are 8
# distinct 16-byte vectors of B (128 bytes, one wavefront) and 4 broadcast
# vectors of A.
WARP_LANES_N = 8
WARP_LANES_M = 4

# Batched backward passes: one thread per row (backward_a) or column
# (backward_b) of a product, in blocks of this many threads.
BACKWARD_BATCHED_THREADS = 128


def launch(kernel):
    """Launch geometry of a kernel: threads per block (x, y) and the C tile one
    block computes (rows x cols). The host API derives the grid from it. Tiled
    kernels also get the k step, the thread tile, the vector width in elements
    and the residency they are fitted to."""
    if kernel.op in DEVICE_OPS:
        return dict(DEVICE_OPS[kernel.op].launch)
    if kernel.semiring == Semiring.BITS:
        return bits_launch(BITS_TILE)
    if isinstance(kernel.tile, SplitTile):
        return launch(Kernel(kernel.id, kernel.op, kernel.semiring, kernel.type))  # the tuned kernel's tile
    if isinstance(kernel.tile, SkinnyTile):
        # One thread per column of C, `rows` rows of it; grid x covers the columns, y the rows, z the batch.
        tile = kernel.tile
        return {"block_x": tile.threads, "block_y": 1, "tile_m": tile.rows, "tile_n": tile.threads,
                "smem_bytes": 0, "chunk_k": tile.chunk_k}
    if kernel.op in (Op.BACKWARD_A_BATCHED, Op.BACKWARD_B_BATCHED):
        # One thread per row of dA / column of dB; grid x covers them, z the batch.
        threads = BACKWARD_BATCHED_THREADS
        return {"block_x": threads, "block_y": 1, "tile_m": 1, "tile_n": threads, "smem_bytes": 0}
    tiles = GEMM_TILES.get(kernel.op)
    if tiles is None:
        # Backward passes: one thread per element of dC, in blocks of 16 x 16.
        return {"block_x": 16, "block_y": 16, "tile_m": 16, "tile_n": 16, "smem_bytes": 0}
    tile = kernel.tile or (COUNTING_TILES if kernel.semiring in STRUCTURED_SEMIRINGS else tiles)[kernel.type]
    (tile_m, tile_n, tile_k, thread_m, thread_n, min_blocks, vec_bytes, chunk, _, ring, won_shared, lanes, cells,
     cells_ring) = tile
    lanes_n, lanes_m = lanes or (WARP_LANES_N, WARP_LANES_M)
    chunk = chunk or tile_k
    ring = ring or 2
    assert ring & (ring - 1) == 0, kernel.name
    # Chunks within a k-tile come in pairs (the running maximum alternates
    # between two sets of registers), or a chunk is the whole k-tile (longer
    # ones measured slower: their rescan reads more, bench/RESULTS.md).
    assert chunk == tile_k or tile_k % (2 * chunk) == 0, kernel.name
    vec = (vec_bytes or TYPE_VEC_BYTES[kernel.type]) // TYPE_BYTES[kernel.type]
    block_x, block_y = tile_n // thread_n, tile_m // thread_m
    threads = block_x * block_y
    assert vec >= 1 and tile_m % thread_m == 0 and tile_n % thread_n == 0, kernel.name
    assert thread_m % vec == 0 and thread_n % vec == 0 and tile_k % vec == 0, kernel.name
    assert lanes_n * lanes_m == 32 and block_x % lanes_n == 0 and block_y % lanes_m == 0, kernel.name
    assert threads % 32 == 0, kernel.name
    # Every thread stages the same number of whole vectors of each operand tile.
    assert (tile_m * tile_k // vec) % threads == 0 and (tile_n * tile_k // vec) % threads == 0, kernel.name
    # ... and a thread's vectors are a whole number of tile rows (or k) apart.
    assert all((threads * vec) % d == 0 for d in (tile_k, tile_m, tile_n)), kernel.name
    smem_bytes = row_pad = 0
    pad = shared_row_pad(kernel, tile_m, tile_n, tile_k, vec, ring, 4 * tile_m * tile_n if won_shared else 0)
    if cells:
        # The cells go with the padded ring, in dynamic shared memory where the two pass the static limit.
        assert kernel.op in ARGMAX_OPS and chunk < tile_k and cells % tile_k == 0, kernel.name
        assert ring == 2 and not won_shared and kernel.type in (Type.F32, Type.F64), kernel.name
        # The ring as cells: a staged vector along k is whole cells.
        assert not cells_ring or (cells == ring * tile_k and vec % chunk == 0), kernel.name
        pad = vec
        ring_elements = 0 if cells_ring else ring * tile_k * (tile_m + tile_n + 2 * pad)
        row_pad = argmax_cells_row_pad(tile_k, chunk, cells_ring)
        total = (ring_elements + argmax_cells_elements(tile_m, tile_n, cells, chunk, row_pad)) * TYPE_BYTES[kernel.type]
        smem_bytes = total if total > STATIC_SMEM_BYTES else 0
    return {"block_x": block_x, "block_y": block_y, "tile_m": tile_m, "tile_n": tile_n,
            "smem_bytes": smem_bytes, "tile_k": tile_k, "thread_m": thread_m, "thread_n": thread_n,
            "vec": vec, "min_blocks": min_blocks, "chunk": chunk,
            "lanes_n": lanes_n, "lanes_m": lanes_m,
            "rescan": argmax_rescan(tile_k, chunk, ring, cells), "rescan_group": argmax_rescan_group(kernel.op),
            "ring": ring, "won_shared": won_shared, "cells": cells, "cells_ring": cells_ring,
            "cells_row_pad": row_pad, "pad": pad}


def argmax_cells_row_pad(tile_k, chunk, cells_ring):
    """Cells of padding at the end of a row of op(A)'s chunk cells (templates/argmax_cells.cuh.j2), against
    bank conflicts of their stores: one where the copy from the k-major ring stores a chunk of consecutive rows at
    once; a k-tile's chunks where the cells are the ring, stored from the staged k-tile a k-tile's chunks of a row
    at once, consecutive lanes along k (the 32 x 32 tile: rows 8 + 4 cells apart, so the 8 lanes of a 128-byte
    phase, two rows, meet on no bank)."""
    return tile_k // chunk if cells_ring else 1


def argmax_cells_elements(tile_m, tile_n, cells, chunk, row_pad):
    """Elements of the argmax's chunk cells (templates/argmax_cells.cuh.j2): op(A)'s rows of cells / chunk cells
    and row_pad of padding, op(B)'s columns of cells k."""
    return tile_m * (cells + row_pad * chunk) + tile_n * cells


# ---------------------------------------------------------------- tiers
# Every product kernel also exists as a quick fragment (DESIGN.md, "Tiers"):
# a single-buffered shared-memory tile with scalar loads and light unrolling,
# chosen per type as the best throughput whose NVRTC compile stays within
# about 100 ms (bench/RESULTS.md, "Quick tier"). It serves the first calls
# while the tuned fragment compiles in the background. Ops missing here
# (backward passes, ~30-50 ms to compile) have one tier.
class Tier(enum.Enum):
    TUNED = "tuned"
    QUICK = "quick"


# Quick tiling, per operation and element type: (tile_m, tile_n, tile_k,
# thread_m, thread_n, k_unroll): a thread owns thread_m x thread_n elements
# of C, spaced a block's width (height) of threads apart; the k loop unrolls
# k_unroll times. For the argmax the k depth and the chunk (k-steps between
# two compares) equal the tuned kernel's: both keep each chunk's maximum and
# the first chunk that beats the running one, so C and the index come out
# bit-identical (signed zeros included).
# f64 products take 4 x 2 per thread in blocks of 512: at 4 x 4 their light
# compiles were the slowest of the quick tier on the 2-core machine (minmax
# f64 gemm 138-166 ms, fresh process; 4 x 2 cuts NVRTC's part 109 -> 83 ms).
QUICK_TILES = {
    Op.GEMM: {
        Type.F32: (64, 64, 16, 4, 4, 1),
        Type.I32: (32, 32, 16, 2, 2, 1),
        Type.F64: (64, 64, 8, 4, 2, 1),
        Type.I64: (32, 32, 8, 2, 2, 1),
    },
    # The argmax keeps three values per element of C (running maximum, the
    # k-tile's maximum, the winning tile) and rescans one k-tile per element:
    # at 4 x 4 per thread it compiles in ~1.6x the time of the plain product.
    Op.GEMM_ARGMAX: {
        Type.F32: (32, 32, 16, 2, 2, 1),
        Type.I32: (32, 32, 16, 2, 2, 1),
        Type.F64: (32, 32, 8, 2, 2, 1),
        Type.I64: (32, 32, 8, 2, 2, 1),
    },
    Op.GEMM_BATCHED: {
        Type.F32: (64, 64, 16, 4, 4, 1),
        Type.I32: (32, 32, 16, 2, 2, 1),
        Type.F64: (64, 64, 8, 4, 2, 1),
        Type.I64: (32, 32, 8, 2, 2, 1),
        Type.U8: (64, 64, 16, 4, 4, 1),
    },
}
QUICK_TILES[Op.GEMM][Type.U8] = (64, 64, 16, 4, 4, 1)
QUICK_TILES[Op.GEMM_ARGMAX][Type.U8] = (32, 32, 16, 2, 2, 1)
# The batched argmax has the argmax's tuned tiles (same k depth), so the same quick ones.
QUICK_TILES[Op.GEMM_BATCHED_ARGMAX] = QUICK_TILES[Op.GEMM_ARGMAX]

# The cost model of first use (README, "First use"): a call that the quick
# kernel would take longer to run than the tuned compile has left waits for
# the tuned kernel. Quick rate: MACs per nanosecond (1 T MAC/s = 1000) the
# quick kernel is expected to reach on a large product, per element type;
# predictions for an H100 from the quick tier's calibration (8.06 T for f32
# MaxPlus), kept below it so the model errs towards waiting. F32: measured
# 4.35 T (gemm MaxPlus 8192^3, H100) with the quick tier's light NVRTC effort
# (jit::Effort::kLight; 6.91 T with full effort). F64: 2.58 T at 4 x 4 per
# thread with light effort; 2000 for the 4 x 2 tile (not yet measured).
# AndOr bytes: not measured yet; the i32 rate (one byte staged per load, and
# the or/and as cheap as an add-and-max), so the model errs towards waiting.
QUICK_MACS_PER_NS = {Type.F32: 4000.0, Type.I32: 1000.0, Type.F64: 2000.0, Type.I64: 400.0, Type.U8: 1000.0,
                     Type.I16: 1000.0}
# The argmax ops' quick kernels run at a fraction of the type's rate (light
# effort, H100, 8192^3: f32 argmax 1.77 T against gemm 4.35 T, f64 1.08 T
# against 2.58 T: 0.41-0.42), kept below it so the model errs towards waiting.
QUICK_OP_FACTOR = {Op.GEMM_ARGMAX: 0.35, Op.GEMM_BATCHED_ARGMAX: 0.35}


def quick_macs_per_ns(kernel):
    """The cost model's expected rate of a kernel's quick fragment, MACs per ns."""
    if kernel.semiring == Semiring.BITS:
        return BITS_QUICK_MACS_PER_NS
    if kernel.semiring in STRUCTURED_SEMIRINGS:
        return QUICK_MACS_PER_NS[kernel.type] * COUNTING_QUICK_FACTOR
    return QUICK_MACS_PER_NS[kernel.type] * QUICK_OP_FACTOR.get(kernel.op, 1.0)


# Expected NVRTC compile of the tuned fragment, ms, per operation (H100 host,
# fresh process: 0.63-1.32 s, median 0.86 s; the 2-core machine 0.73-1.0 s).
# The batched argmax: the argmax's loop with the batch loop around it (not yet measured).
TUNED_COMPILE_MS = {Op.GEMM: 900.0, Op.GEMM_ARGMAX: 1000.0, Op.GEMM_BATCHED: 800.0,
                    Op.GEMM_BATCHED_ARGMAX: 1000.0}


# The small-tile variants of the batched products (SMALL_TILES) get a quick
# tier too: their tuned fragments compile no faster than the default tile's
# (sm_90, the 2-core machine under load: 16x16 1.3-1.6 s, 32x32 f64 1.8 s,
# the 64x64 f32 with 8 x 8 per thread 6.5 s; the default 1.2-1.4 s). Their
# quick tile is the variant's own m x n (one block per product of the batch,
# as the tuned variant), the quick k depth of the op and type, and
# tile_n / 16 elements per thread each way (at most 2 x 2 for the argmax, as
# its default quick tile: the 64 x 64 argmax at 4 x 4 took 160-200 ms to
# compile on the 2-core machine, at 2 x 2 in blocks of 1024 threads 105 ms),
# doubled along m until every thread stages whole elements.
def quick_small_tile(kernel):
    tile_m, tile_n = kernel.tile.tile_m, kernel.tile.tile_n
    tile_k = QUICK_TILES[kernel.op][kernel.type][2]
    thread_n = max(1, tile_n // 16)
    if kernel.op in ARGMAX_OPS:
        thread_n = min(thread_n, 2)
    thread_m = thread_n
    while (tile_m * tile_k) % ((tile_m // thread_m) * (tile_n // thread_n)) != 0:
        thread_m *= 2
    return (tile_m, tile_n, tile_k, thread_m, thread_n, 1)


def quick_name(kernel):
    """Symbol of a kernel's quick fragment: the tuned name with a _quick suffix."""
    return kernel.name + "_quick"


def quick_launch(kernel):
    """Launch geometry of a kernel's quick fragment (same keys as launch()),
    or None for a kernel with one tier."""
    if kernel.op in DEVICE_OPS:
        return None
    if kernel.semiring == Semiring.BITS:
        return bits_launch(BITS_QUICK_TILE)
    tiles = QUICK_TILES.get(kernel.op, {}).get(kernel.type)
    if tiles is None:
        return None
    if kernel.semiring in STRUCTURED_SEMIRINGS:
        tiles = COUNTING_QUICK_TILES[kernel.type]
    if isinstance(kernel.tile, SkinnyTile):
        return None  # one tier: a short loop that compiles in tens of milliseconds
    if isinstance(kernel.tile, SplitTile):
        return None  # one tier: never waited for (SPLIT_OPS)
    if kernel.tile is not None and not is_few_tiles(kernel):
        tiles = quick_small_tile(kernel)
    tile_m, tile_n, tile_k, thread_m, thread_n, k_unroll = tiles
    block_x, block_y = tile_n // thread_n, tile_m // thread_m
    threads = block_x * block_y
    assert tile_m % thread_m == 0 and tile_n % thread_n == 0, kernel.name
    assert threads % 32 == 0 and block_x % 16 == 0, kernel.name
    # Every thread stages the same number of elements of each operand tile.
    assert (tile_m * tile_k) % threads == 0 and (tile_n * tile_k) % threads == 0, kernel.name
    # The argmax compares with the running maximum every `chunk` k-steps (the
    # tuned kernel's chunk where it divides the k-tile): in both tiers C is the
    # running maximum in k order and the index the first k whose product equals
    # it, whatever the chunks, so the tiers agree bit for bit.
    chunk = tile_k
    if kernel.op in ARGMAX_OPS and tile_k % launch(kernel)["chunk"] == 0:
        chunk = launch(kernel)["chunk"]
    return {"block_x": block_x, "block_y": block_y, "tile_m": tile_m, "tile_n": tile_n,
            "smem_bytes": 0, "tile_k": tile_k, "thread_m": thread_m, "thread_n": thread_n,
            "k_unroll": k_unroll, "chunk": chunk}


# ---------------------------------------------------------------- int16 and CountingTropical
# int16 tiles. The plain products (MaxPlus, MinPlus: templates/gemm_tile_i16x2.cuh.j2)
# keep their accumulators packed in 16x2 words across k-tiles and stage A as pairs
# (each element as a word holding it in both halves), whose shared tile is twice
# as large: the gemm's k-tiles of 32 fill 48 KB with unpadded rows (shared_row_pad;
# H100, 8192^3 on values in +-2^13: 18.94 -> 24.03 T; packed accumulators alone,
# 20.86 T; pairs at padded k-tiles of 16, 23.16 T); the argmax keeps the
# i32 argmax's shape with 4-short (8-byte) vectors, so that a 4 x 4 thread tile
# stays whole vectors. Quick tiles: the i32 ones.
GEMM_TILES[Op.GEMM][Type.I16] = Tile(128, 128, 32, 8, 8, 2)
# Static shared memory a block may declare (CUDA's limit without the opt-in to more).
STATIC_SMEM_BYTES = 48 * 1024


def shared_row_pad(kernel, tile_m, tile_n, tile_k, vec, ring, won_bytes=0):
    """Elements of padding at the end of each shared-memory row of a tile (a
    vector's worth, against bank conflicts), or none where the padded tiles
    (and won_bytes of the argmax's winning chunks) would not fit the static
    limit: the int16 DPX gemm, whose A as pairs at k-tiles of 32 fills exactly
    48 KB unpadded, and argmax tiles that keep their winners in shared memory."""
    a_bytes = (tile_m + 4) * 4 if i16_a_pairs(kernel) else (tile_m + vec) * TYPE_BYTES[kernel.type]
    padded = ring * tile_k * (a_bytes + (tile_n + vec) * TYPE_BYTES[kernel.type]) + won_bytes
    return vec if padded <= STATIC_SMEM_BYTES else 0


# The int16 DPX products (i16_a_pairs) also stage their k-tiles as the words
# they loaded (templates/gemm_tile.cuh.j2): 16-bit elements two a register, not
# one a register (the int16 DPX product's stage spilled 112 bytes at 128 registers,
# and the spill stores waited on the loads; NVRTC sm_90: none at 120), A's
# pairs made by one byte permute. The two-path kernels (int16 and i32 (+)
# products) ask whether a staged k-tile holds a large element after the tile's
# steps, not as it loads, where the test (and the branch on it) waited on the
# loads; packed, two elements a word at once. H200, kernel_lab side by side
# (the same bits): int16 MaxPlus 8192^3 on +-2^13 24.08 -> 25.09 (packed) ->
# 26.64 (+ late) -> 27.39 T (+ the word test and permute), full range 8.02 ->
# 8.33 T, batched 64^3 12.9 -> 13.5 T; kernels_bench, late alone: i32 MaxPlus
# 8192^3 on small values 12.08 -> 14.01 T (the int16 product, late but not
# packed, lost: 24.0 -> 23.5 T).
# (On the other int16 kernels ptxas spilled more with the words: MaxMin
# 4834 -> 7248 bytes, the batched argmax 28 -> 72.)
def i16_a_pairs(kernel):
    """True for the int16 (+)-plus products on the DPX path, which stage A as pairs
    (templates/gemm_tile.cuh.j2: two_paths on int16, i.e. gemm and gemm_batched)."""
    return (kernel.type == Type.I16 and SEMIRING_MUL[kernel.semiring] == "add"
            and kernel.op in (Op.GEMM, Op.GEMM_BATCHED))


GEMM_TILES[Op.GEMM_BATCHED][Type.I16] = Tile(64, 64, 32, 4, 4, 4, 8)
GEMM_TILES[Op.GEMM_ARGMAX][Type.I16] = Tile(64, 64, 16, 4, 4, 2, 8)
QUICK_TILES[Op.GEMM][Type.I16] = (32, 32, 16, 2, 2, 1)
QUICK_TILES[Op.GEMM_ARGMAX][Type.I16] = (32, 32, 16, 2, 2, 1)
QUICK_TILES[Op.GEMM_BATCHED][Type.I16] = (32, 32, 16, 2, 2, 1)

# CountingTropical: an element is (value, count); (v1, c1) (x) (v2, c2) =
# (v1 + v2, c1 * c2); (+) keeps the larger value with its count and adds the
# counts of equal values; zero (-inf, 0), one (0, 1). Values and counts are two
# arrays of one float type (structure of arrays, each with its own leading
# dimension and batch stride), so its kernels take six matrix pointers: they
# exist for gemm and gemm_batched only, from their own templates, with no
# alpha/beta (C is overwritten) and no small tiles.
STRUCTURED_SEMIRINGS = (Semiring.COUNTING,)
STRUCTURED_OPS = (Op.GEMM, Op.GEMM_BATCHED)
STRUCTURED_CONCEPT = {Semiring.COUNTING: "CountingElement"}  # the C++ concept of its element types
# Why a structured semiring has calls of its own, the header that has them, and what its element types are of.
STRUCTURED_WHY = {Semiring.COUNTING: ("its elements are two arrays (values and counts)", "tropical/counting.hpp",
                                      "of values and counts alike")}
COUNTING_TEMPLATE = {Op.GEMM: "gemm_counting.cu.j2", Op.GEMM_BATCHED: "gemm_counting.cu.j2"}
COUNTING_QUICK_TEMPLATE = {Op.GEMM: "gemm_counting_quick.cu.j2", Op.GEMM_BATCHED: "gemm_counting_quick.cu.j2"}

# The tuned counting tile (templates/gemm_counting_tile.cuh.j2) runs the
# argmax's loop on the values (each element keeps its running maximum, the
# chunk that first reached it in shared memory) and counts afterwards: the
# argmax's tiles, one chunk per k-tile. f32 takes the f32 argmax's threads:
# 8 x 4 elements, 128 threads in warps of 16 x 2, 3 blocks per SM (168
# registers, 8 bytes spilled outside the values' loop; H200, 8192^3: 8.15 ->
# 8.97 T on spread values, tied 3.75 -> 3.78 with its dense pass unrolled
# 2-fold, bench/RESULTS.md). f64 takes 4 x 4 elements in blocks of 256 at 1
# per SM (at 2 it spills).
COUNTING_TILES = {
    Type.F32: Tile(64, 64, 16, 8, 4, 3, lanes=(16, 2)),
    Type.F64: Tile(64, 64, 8, 4, 4, 1),
}
# A product of few tiles (blocks) runs on a variant of twice the threads, each
# with 4 x 4 elements, 2 blocks per SM (128 registers, 16 bytes spilled outside
# the values' loop): under about three waves of the 8 x 4 tile (the launcher's
# kFewTilesPerSm blocks per SM) it leaves SMs short of warps (H200, f32 spread:
# 1000^3 3.09 against 2.34 T, 2048^3 5.60 / 5.43; 2560^2 x 2048 5.87 / 6.12).
FEW_TILES = "fewtiles"
COUNTING_FEW_TILES = {
    Type.F32: Tile(64, 64, 16, 4, 4, 2, label=FEW_TILES),
}


def is_few_tiles(kernel):
    """True for a fewtiles variant (COUNTING_FEW_TILES): not a small tile of
    its op (it takes products of any size; the launcher picks it by their
    number of blocks), and its quick tier is its base kernel's."""
    return isinstance(kernel.tile, Tile) and kernel.tile.label == FEW_TILES


COUNTING_QUICK_TILES = {
    Type.F32: (32, 32, 16, 2, 2, 1),
    Type.F64: (32, 32, 8, 2, 2, 1),
}
# The quick counting kernel takes about 6 instructions per product (value,
# count, compare, select) against MaxPlus's 2: a third of the type's rate.
COUNTING_QUICK_FACTOR = 0.3

# ---------------------------------------------------------------- bit-packed booleans
# AndOr on packed 32-bit words (include/tropical/bits.hpp: A packed by rows, B by columns, k along the words;
# C as packed bits, bytes or int32 witness counts, one kernel with the form as an argument). One op, gemm,
# which takes a batch (grid z walks it; a single product is a batch of one). The tuned tile runs the binary
# tensor cores (templates/bits_gemm.cu.j2: mma.sync m16n8k256 .b1 .and.popc, sm_80 and newer; never
# .xor.popc, which sm_90 emulates), the quick tile CUDA cores (32-bit and + popc, bits_gemm_quick.cu.j2).
# Their own templates and launcher (src/bits_gemm.cpp), as CountingTropical's.
STRUCTURED_SEMIRINGS = STRUCTURED_SEMIRINGS + (Semiring.BITS,)
STRUCTURED_OPS_OF = {Semiring.BITS: (Op.GEMM,)}
STRUCTURED_CONCEPT[Semiring.BITS] = "BitsWord"
STRUCTURED_WHY[Semiring.BITS] = ("its elements are bits packed 32 to a word", "tropical/bits.hpp",
                                 "the words of packed rows")
# CountingTropical's skinny tile (templates/gemm_counting_skinny.cu.j2), taken as the scalar semirings' is.
STRUCTURED_SKINNY_TILES = {Semiring.COUNTING: {Op.GEMM_BATCHED: SKINNY_TILES[Op.GEMM_BATCHED]}}
STRUCTURED_SKINNY_TEMPLATE = {Semiring.COUNTING: "gemm_counting_skinny.cu.j2"}
STRUCTURED_TEMPLATE = {Semiring.COUNTING: COUNTING_TEMPLATE, Semiring.BITS: {Op.GEMM: "bits_gemm.cu.j2"}}
STRUCTURED_QUICK_TEMPLATE = {Semiring.COUNTING: COUNTING_QUICK_TEMPLATE,
                             Semiring.BITS: {Op.GEMM: "bits_gemm_quick.cu.j2"}}

# A packed tiling: a block computes tile_m x tile_n of C, walking k by stage_words 32-bit words through shared
# memory; tuned (mma): warps_m x warps_n warps, each (tile_m / warps_m) x (tile_n / warps_n) of m16n8 tensor-core
# tiles, `stages` stages in a ring filled by cp.async (dynamic shared memory, smem_bytes of the launch);
# fragments by ldmatrix.x4 (ldmatrix) or by one 128-bit load of a row per lane and two k-steps; blocks taken
# `group` block rows at a time (0: the grid's order); quick: threads of thread_m x thread_n elements, one stage.
# Shared rows are XOR-swizzled by 16-byte chunks so that either fragment load hits 32 distinct banks.
# `pipelined` (ldmatrix only, an even number of k-steps a stage): the next k-step's fragments loaded before this
# one's mma, across the stage's barrier too (which sits at a stage's last k-step, after its fragments are in
# registers), and the whole ring in flight (stage s + stages goes into stage s's slot): lab v20/v21.
BitsTile = collections.namedtuple("BitsTile", "tile_m tile_n stage_words warps_m warps_n thread_m thread_n "
                                  "min_blocks mma stages ldmatrix group pipelined", defaults=(1, False, 0, False))
# The tuned tile's candidates (tools/bits_lab.cu times each under the variant named; pick by its table).
# "narrow": the first tile (lab v0): 8 warps of 32 x 64, 128 x 128 blocks, 512 bits x 3 stages, 1 block per
# SM: 1.14 P at 16384^3 on an H200 as first built (the tensor pipe waiting on the ring); bench/RESULTS.md has the
# lab's table of every candidate.
# The wide ones have 64 x 64 warps (half the shared-memory bytes per mma of 32 x 64) in 256 x 128 or 128 x 256
# blocks (two thirds of the L2 reads of 128 x 128: at 3.5 P a 128 x 128 tile reads 6.8 TB/s of L2), 1024-bit
# stages (half the barriers) and a ring of four (192 KB). "square": 4 warps of 64 x 64 in 128 x 128 blocks, two
# blocks per SM (a block's barrier stalls only half the SM's warps).
BITS_TILES = {
    "narrow": BitsTile(128, 128, 16, 4, 2, 0, 0, 1, True, 3),                 # lab v0 (and lib)
    "narrow_deep": BitsTile(128, 128, 16, 4, 2, 0, 0, 1, True, 6, False, 8),   # lab v2
    "narrow_ldmatrix": BitsTile(128, 128, 16, 4, 2, 0, 0, 1, True, 4, True, 8),  # lab v4
    "wide_n": BitsTile(128, 256, 32, 2, 4, 0, 0, 1, True, 4, True, 8),        # lab v8
    "wide_m": BitsTile(256, 128, 32, 4, 2, 0, 0, 1, True, 4, True, 8),        # lab v9
    "wide_m_512": BitsTile(256, 128, 16, 4, 2, 0, 0, 1, True, 8, True, 8),    # lab v10
    "wide_m_16w": BitsTile(256, 128, 32, 4, 4, 0, 0, 1, True, 4, True, 8),    # lab v12: 16 warps of 64 x 32
    "square": BitsTile(128, 128, 16, 2, 2, 0, 0, 2, True, 4, True, 8),        # lab v6: 4 warps of 64 x 64, 2 per SM
    "wide_m_pipelined": BitsTile(256, 128, 32, 4, 2, 0, 0, 1, True, 4, True, 8, True),  # lab v20
    "wide_n_pipelined": BitsTile(128, 256, 32, 2, 4, 0, 0, 1, True, 4, True, 8, True),  # lab v21
}
# The catalog's tile: wide_n_pipelined, through the library on an H200 3.07-3.14 P packed bits and 2.63-2.67 P
# witness counts at 16384^3 against wide_m's 2.81 / 2.41-2.43 in the same run (bench/RESULTS.md).
BITS_TILE = BITS_TILES["wide_n_pipelined"]
BITS_QUICK_TILE = BitsTile(64, 64, 8, 0, 0, 4, 4, 1, False)
# The quick tile's expected rate, boolean MACs per ns: CUDA cores at 32 booleans an and + popc (a lab
# run measured 0.51 P for `acc |= a & b` on words), kept well below it so that the model errs towards waiting.
BITS_QUICK_MACS_PER_NS = 100000.0


def bits_launch(tile):
    """Launch geometry of a packed tile (the keys its fragment and catalog_tiers.hpp read)."""
    if tile.mma:
        assert tile.stage_words in (16, 32, 64) and tile.tile_m % (16 * tile.warps_m) == 0, tile
        assert tile.tile_n % (32 * tile.warps_n) == 0, tile  # a warp's columns are whole words of packed C
        block_x, block_y = 32 * tile.warps_m * tile.warps_n, 1
    else:
        block_x, block_y = tile.tile_n // tile.thread_n, tile.tile_m // tile.thread_m
    threads = block_x * block_y
    # Whole words of packed C per block; every thread stages whole 128-bit vectors (mma) or words.
    assert threads % 32 == 0 and tile.tile_n % 32 == 0, tile
    per = 4 if tile.mma else 1
    assert (tile.tile_m * tile.stage_words) % (per * threads) == 0, tile
    assert (tile.tile_n * tile.stage_words) % (per * threads) == 0, tile
    assert not tile.pipelined or (tile.ldmatrix and tile.stage_words % 16 == 0 and tile.stages >= 2), tile
    # The ring (A's and B's rows of every stage), within an SM's 227 KB.
    smem = 4 * tile.stages * (tile.tile_m + tile.tile_n) * tile.stage_words if tile.mma else 0
    assert smem <= 227 * 1024, tile
    return {"block_x": block_x, "block_y": block_y, "tile_m": tile.tile_m, "tile_n": tile.tile_n,
            "smem_bytes": smem, "threads": threads, "stage_words": tile.stage_words, "warps_m": tile.warps_m,
            "warps_n": tile.warps_n, "thread_m": tile.thread_m, "thread_n": tile.thread_n,
            "min_blocks": tile.min_blocks, "stages": tile.stages, "ldmatrix": tile.ldmatrix, "group": tile.group,
            "pipelined": tile.pipelined}


# ---------------------------------------------------------------- kernel parameters
# Each kernel's parameter list, in order: the templates declare it (generate.py renders the declaration)
# and the launchers fill the argument struct generated from the same list (tropical/kernel_args.hpp), so
# the two cannot drift. A list is written "kind name name, kind name, ...". Kinds: a matrix of the element
# type read ("in") or written ("out"); the argmax's int32 indices read ("index_in") or written
# ("index_out"); packed 32-bit words read ("words_in"); an output whose element the call chooses
# ("any_out"); "i64" (sizes, leading dimensions, strides: long long); "i32" (transposes, flags: int);
# "value" (one element of the type, by value; its argument is the element's address).
Param = collections.namedtuple("Param", "name kind member")
PARAM_KINDS = ("in", "out", "index_in", "index_out", "words_in", "any_out", "i64", "i32", "value")
# Small structs passed by value, each a kind of its own named by the struct (param_struct() below).
PARAM_STRUCTS = {}


def _params(text):
    """The Params of a list written "kind name name, kind name, ...", in order. A name written
    "name:member" gives the argument struct's member another name than the kernel's parameter."""
    params = []
    for group in text.split(","):
        kind, *names = group.split()
        assert (kind in PARAM_KINDS or kind in PARAM_STRUCTS) and names, group
        for name in names:
            name, _, member = name.partition(":")
            params.append(Param(name, kind, member or name))
    return tuple(params)


# The backward passes of A and B take the same list but for the names of the operand they read and the
# gradient they write: their structs name those members alike, so one launcher fills either.
_BACKWARD_PARAMS = ("in grad_c, index_in argmax, in {x}:operand, out grad_{y}:grad, i64 m n kk ldgc ldargmax "
                    "ld{x}:ld_operand ldg{y}:ld_grad, i32 trans_a trans_b")
_BACKWARD_STRIDES = ", i64 stride_gc stride_argmax stride_{x}:stride_operand stride_g{y}:stride_grad batch"
# Signature name -> parameter list: one per scalar op, one per structured semiring (all of its ops).
KERNEL_PARAMS = {
    # work, whole_rows, parts: the split of k over the blocks of a launch (templates/gemm_split.cu.j2; the quick
    # tier is never split and ignores them).
    "gemm": _params("in a b, out c, i64 m n kk lda ldb ldc, i32 trans_a trans_b, value alpha beta, i32 flags, "
                    "any_out work, i64 whole_rows, i32 parts"),
    "gemm_argmax": _params("in a b, out c, index_out argmax, i64 m n kk lda ldb ldc ldargmax, i32 trans_a trans_b"),
    "backward_a": _params(_BACKWARD_PARAMS.format(x="b", y="a")),
    "backward_b": _params(_BACKWARD_PARAMS.format(x="a", y="b")),
    "gemm_batched": _params("in a b, out c, i64 m n kk lda ldb ldc, i32 trans_a trans_b, "
                            "i64 stride_a stride_b stride_c batch, value alpha beta, i32 flags"),
    "gemm_batched_argmax": _params("in a b, out c, index_out argmax, i64 m n kk lda ldb ldc ldargmax, "
                                   "i32 trans_a trans_b, i64 stride_a stride_b stride_c stride_argmax batch"),
    "backward_a_batched": _params((_BACKWARD_PARAMS + _BACKWARD_STRIDES).format(x="b", y="a")),
    "backward_b_batched": _params((_BACKWARD_PARAMS + _BACKWARD_STRIDES).format(x="a", y="b")),
    "counting": _params("in a_values a_counts b_values b_counts, out c_values c_counts, i64 m n kk lda_values "
                        "lda_counts ldb_values ldb_counts ldc_values ldc_counts, i32 trans_a trans_b, "
                        "i64 stride_a_values stride_a_counts stride_b_values stride_b_counts stride_c_values "
                        "stride_c_counts batch"),
    "bits": _params("words_in a bt, any_out c, i64 m n kk lda ldb ldc, i32 output, "
                    "i64 stride_a stride_b stride_c batch"),
}


def signature(kernel):
    """The name of a kernel's parameter list in KERNEL_PARAMS (both tiers of a kernel share it)."""
    if kernel.op in DEVICE_OPS:
        return kernel.op.value
    if kernel.semiring in STRUCTURED_SEMIRINGS:
        return kernel.semiring.value
    return kernel.op.value

# Spelling of each kind of parameter in a fragment's declaration (value_t: the element type) and as a
# member of the argument struct the host fills (a value: the address of one element, passed as is).
PARAM_DEVICE = {"in": "const value_t* __restrict__", "out": "value_t* __restrict__",
                "index_in": "const int* __restrict__", "index_out": "int* __restrict__",
                "words_in": "const unsigned* __restrict__", "any_out": "void* __restrict__",
                "i64": "long long", "i32": "int", "value": "value_t"}
PARAM_HOST = {"in": "const void*", "out": "void*", "index_in": "const std::int32_t*", "index_out": "std::int32_t*",
              "words_in": "const std::uint32_t*", "any_out": "void*", "i64": "long long", "i32": "int",
              "value": "const void*"}


# ---------------------------------------------------------------- the C ABI's values
# The value of each semiring, element type and op in the C ABI's enums (include/tropical/tropical.h:
# TROPICAL_<SEMIRING>, TROPICAL_<TYPE>, TROPICAL_OP_<OP>). The values are the ABI: never renumber; a new
# one takes the next free value. Packed booleans (BITS over B32) have calls of their own and no value.
C_VALUE = {
    Semiring.MAXPLUS: 0, Semiring.MINPLUS: 1, Semiring.MAXMUL: 2, Semiring.MAXMIN: 3, Semiring.MINMAX: 4,
    Semiring.ANDOR: 5, Semiring.COUNTING: 6,
    Type.F32: 0, Type.F64: 1, Type.I32: 2, Type.I64: 3, Type.U8: 4, Type.I16: 5,
    Op.GEMM: 0, Op.GEMM_ARGMAX: 1, Op.BACKWARD_A: 2, Op.BACKWARD_B: 3, Op.GEMM_BATCHED: 4,
    Op.GEMM_BATCHED_ARGMAX: 5, Op.BACKWARD_A_BATCHED: 6, Op.BACKWARD_B_BATCHED: 7,
}
# The name of each element type in NumPy, torch and CuPy (the Python package's dtype names).
TYPE_ARRAY_NAME = {Type.F32: "float32", Type.F64: "float64", Type.I32: "int32", Type.I64: "int64", Type.U8: "uint8",
                   Type.I16: "int16", Type.B32: "uint32"}


def c_enumerator(x):
    """The C ABI's enumerator of a semiring, type or op: TROPICAL_MAXPLUS, TROPICAL_F32, TROPICAL_OP_GEMM."""
    return "TROPICAL_" + ("OP_" if isinstance(x, Op) else "") + x.value.upper()


# ---------------------------------------------------------------- device ops
# Kernels the library runs for its own plans (the einsum's permutes), not products of the public API: no C ABI or
# Python value, a semiring only where the op lists some (semirings None: named tropical_<op>_<type>), one tier,
# a parameter list and a launch shape of their own. An op is one device_op() call and one template: generate.py
# adds its kernels to the catalog, its argument struct to tropical/kernel_args.hpp and its kernels to the lookup
# catalog::device_kernel<Op, T, S>() there, which detail::launch_device_op (src/launch.hpp) launches.
class DeviceOp(enum.Enum):
    PERMUTE = "permute"
    PERMUTE_BOXED = "permute_boxed"
    BITS_TRANSPOSE = "bits_transpose"
    BITS_WGMMA = "bits_wgmma"


# template: its template (templates/); types (and semirings, or None) it is generated for; launch: the geometry
# its template and its host code read (block_x, block_y, tile_m, tile_n and any key of its own); doc: one line
# for the catalog's comments.
# feature_arch: nonzero where the fragment uses the arch-specific features of sm_<feature_arch>a (wgmma): NVRTC
# compiles it for that arch as sm_<feature_arch>a (jit::compile_options), its launcher takes it on devices of that
# arch alone, it ships no PTX (codegen/ptx.py), and compiled for any other arch its kernel is a stub that traps.
DeviceOpSpec = collections.namedtuple("DeviceOpSpec", "template types semirings launch doc feature_arch",
                                      defaults=(0,))
DEVICE_OPS = {}

# Host and device spellings of a struct field's kind.
_FIELD_HOST = {"i32": "int", "i64": "std::int64_t"}
_FIELD_DEVICE = {"i32": "int", "i64": "long long"}
_FIELD_BYTES = {"i32": 4, "i64": 8}
StructField = collections.namedtuple("StructField", "name kind count")


def param_struct(name, doc, text):
    """Declares struct `name` (fields written "kind name name, kind[count] name, ...", kinds i32 and i64) as a
    parameter kind: passed by value, defined alike in the fragments that take it and in kernel_args.hpp."""
    fields = []
    for group in text.split(","):
        kind, *names = group.split()
        kind, _, count = kind.partition("[")
        assert kind in _FIELD_HOST and names, group
        fields += [StructField(n, kind, int(count[:-1]) if count else 0) for n in names]
    PARAM_STRUCTS[name] = {"doc": doc, "fields": fields, "bytes": _struct_bytes(fields)}
    PARAM_DEVICE[name] = name
    PARAM_HOST[name] = name


def _struct_bytes(fields):
    """sizeof of the struct (natural alignment, as both the host compiler and NVRTC lay it out)."""
    size, align = 0, 1
    for f in fields:
        a = _FIELD_BYTES[f.kind]
        size = (size + a - 1) // a * a + a * max(f.count, 1)
        align = max(align, a)
    return (size + align - 1) // align * align


def struct_definition(name, device):
    """The C++ definition of parameter struct `name`, for a fragment (device) or the host (members zeroed unless
    given, so that a designated initializer may name some)."""
    spell = _FIELD_DEVICE if device else _FIELD_HOST
    lines = [f"/// {PARAM_STRUCTS[name]['doc']}", f"struct {name} {{"]
    for f in PARAM_STRUCTS[name]["fields"]:
        lines.append(f"  {spell[f.kind]} {f.name}" + (f"[{f.count}]" if f.count else "") + ("" if device else " = {}")
                     + ";")
    lines += ["};", f"static_assert(sizeof({name}) == {PARAM_STRUCTS[name]['bytes']}, \"{name}: one layout on both "
              "sides\");"]
    return "\n".join(lines)


def device_op(op, params, **spec):
    """Adds device op `op` taking the parameter list `params` (written as KERNEL_PARAMS's) to the catalog."""
    DEVICE_OPS[op] = DeviceOpSpec(**spec)
    KERNEL_PARAMS[op.value] = _params(params)
    OP_ENUM[op] = "k" + "".join(p.capitalize() for p in op.value.split("_"))


# A strided copy (the einsum's permutes): dst at (i_0..i_{rank-1}) = src there, each with its own element strides.
# The host (src/permute.cpp) merges the axes contiguous on both sides and picks one of three modes. Tiled (mode 1):
# where the source's and the destination's fastest axes differ and both have at least min_tiled_axis elements (a
# tile a quarter used), they go first and second: blocks of 32 x 16 threads move 64 x 64 tiles of them through
# shared memory, so that reads and writes are both coalesced. Plain (mode 0), where the destination's fastest axis
# is a run of at least min_plain_run elements of the source too: it goes first and blocks copy runs of plain_bytes
# along it (at most 8 elements a thread). Both fitted to 64 registers, 2 blocks of 512 threads per SM, no spill
# (sm_90, ptxas -v); the other axes come from the block index. Boxed, for the rest (many short axes: the
# intermediates of bond dimension 2), is a kernel of its own (permute_boxed: no shared memory, registers of its
# own): axes 0..inner-1 form a box of at most box_per_thread elements a thread (the destination's and the source's
# fastest axes taken in turn, first until the box covers 32-element runs of both sides, then while they fit), each
# thread's offsets in the box computed once and each of at most box_blocks_per_sm blocks an SM copying a run of
# consecutive boxes of the other axes (a box's source runs read whole through L1; fewer blocks with longer runs
# pay the set-up less often: the n = 200 einsum's copies 2.0 -> 1.6 ms in tools' lab, 256 x 8 at 4 a SM). Elements are copied as integers of their width: one kernel per width serves every type.
param_struct("StridedCopy", "A strided copy: dst at index (i_0..i_{rank-1}) = src at that index, each side with "
             "its own element strides; axes below `inner` form the boxed mode's box.",
             "i32 rank inner, i64[32] size src_stride dst_stride")
device_op(DeviceOp.PERMUTE, "in src, out dst, StridedCopy copy, i32 mode",
          template="permute.cu.j2", types=(Type.U8, Type.I16, Type.I32, Type.I64), semirings=None,
          launch={"block_x": 32, "block_y": 16, "tile_m": 64, "tile_n": 64, "smem_bytes": 0, "plain_bytes": 16384,
                  "min_blocks": 2, "min_tiled_axis": 16, "min_plain_run": 32},
          doc="a strided copy of elements of one width")
device_op(DeviceOp.PERMUTE_BOXED, "in src, out dst, StridedCopy copy",
          template="permute_boxed.cu.j2", types=(Type.U8, Type.I16, Type.I32, Type.I64), semirings=None,
          launch={"block_x": 256, "block_y": 1, "tile_m": 1, "tile_n": 1, "smem_bytes": 0, "min_blocks": 4,
                  "box_per_thread": 8, "box_blocks_per_sm": 4},
          doc="the strided copy's boxed mode, for many short axes")

# The transpose of a bit-packed matrix (tropical/bits.hpp's layout), the closure's step between squarings
# (src/bits_closure.hpp): dst (cols x rows bits) = src (rows x cols bits) transposed, or ORed with the identity
# (identity 1: the closure's I or A), its words past the last bit's left alone and its bits past `rows` zero;
# where count is not null, the set bits written are added to *count (unsigned long long: the matrix's pairs).
# Blocks of 32 x 8 threads move tiles of tile_m rows x tile_n words (256 x 256 bits) through shared memory (each
# side's rows read and written as whole 32-byte sectors); each warp transposes the tile's 32 x 32 blocks of one
# word column by five rounds of shuffles. One tile a block; past 2^31 - 1 tiles the kernel loops.
device_op(DeviceOp.BITS_TRANSPOSE, "words_in src, out dst, any_out count, i64 rows cols lds ldd, i32 identity",
          template="bits_transpose.cu.j2", types=(Type.B32,), semirings=None,
          launch={"block_x": 32, "block_y": 8, "tile_m": 256, "tile_n": 8, "smem_bytes": 0, "min_blocks": 4},
          doc="the transpose of a bit-packed matrix, optionally ORed with the identity, its pairs counted")

# The packed AndOr product on Hopper's warpgroup tensor cores (templates/bits_wgmma.cu.j2: wgmma m64n256k256 .b1
# .and.popc, sm_90a only), which src/bits_gemm.cpp takes instead of the catalog's AndOrBits kernel on sm_90 devices
# where A's and B's rows and batch strides are whole 16-byte vectors (the same arguments, the same three output
# forms and batch). Blocks of 128 x 256 of C and three warpgroups: a producer filling a ring of `stages` stages of
# stage_bits bits of k (A's 128 rows then B's 256, rows of 128 bytes in the 128-byte swizzle wgmma reads) by
# cp.async, handing each over by full / empty mbarriers, and two consumers of 64 x 256 (128 int32 accumulators a
# thread). Blocks are taken `group` block rows at a time (one grid dimension of tiles, z the batch). Lab w7
# (tools/bits_wgmma_lab.cu): 5.02 P packed bits and 4.44 P witness counts at 16384^3 on an H200, against the
# mma.sync tile's 3.03 / 2.6; 193 KB of shared memory, one block an SM.
device_op(DeviceOp.BITS_WGMMA, "words_in a bt, any_out c, i64 m n kk lda ldb ldc, i32 output, "
          "i64 stride_a stride_b stride_c batch",
          template="bits_wgmma.cu.j2", types=(Type.B32,), semirings=None,
          launch={"block_x": 384, "block_y": 1, "tile_m": 128, "tile_n": 256,
                  "smem_bytes": 4 * (128 + 256) * 128 + 1024 + 2 * 4 * 8, "stages": 4, "stage_bits": 1024,
                  "group": 16, "min_blocks": 1},
          doc="the packed AndOr product on wgmma (sm_90a)", feature_arch=90)
