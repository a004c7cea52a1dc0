"""The public operations, described once: each BLAS-style function's parameter list, every parameter mapped onto
the tropical::Product or tropical::Gradient field it fills (include/tropical/problem.hpp). generate.py renders
from this table the wrappers of the three C++ faces (tropical/gemm.hpp on the GPU, tropical/cpu/gemm.hpp,
tropical/reference.hpp; their doc comments are operation_docs.py's), the C ABI's products (both forms) and
c_abi.PRODUCTS' parameter lists, which tropical.h declares (tests/faces_test.py checks all of them)."""

from dataclasses import dataclass

import spec


@dataclass(frozen=True)
class Matrix:
    """A matrix argument: its pointer, leading dimension and (batched) stride parameters, the operand of the
    problem it fills, its shape (op(X) is rows x cols), its transpose parameter ("": kNo) and its element."""
    field: str
    data: str
    ld: str
    stride: str
    rows: str
    cols: str
    trans: str = ""
    element: str = "T"
    output: bool = False


A = Matrix("a", "a", "lda", "stride_a", "m", "k", "ta")
B = Matrix("b", "b", "ldb", "stride_b", "k", "n", "tb")
C = Matrix("c", "c", "ldc", "stride_c", "m", "n", output=True)
ARGMAX = Matrix("argmax", "argmax", "ldargmax", "stride_argmax", "m", "n", element="std::int32_t", output=True)
GRAD_C = Matrix("grad_c", "grad_c", "ldgc", "stride_gc", "m", "n")
ARGMAX_IN = Matrix("argmax", "argmax", "ldargmax", "stride_argmax", "m", "n", element="std::int32_t")
# A gradient's other operand (read for MaxMul only) and the gradient, laid out like the operand it belongs to.
OPERAND = {"a": Matrix("operand", "a", "lda", "stride_a", "m", "k", "ta"),
           "b": Matrix("operand", "b", "ldb", "stride_b", "k", "n", "tb")}
GRAD = {"a": Matrix("grad", "grad_a", "ldga", "stride_ga", "m", "k", "ta", output=True),
        "b": Matrix("grad", "grad_b", "ldgb", "stride_gb", "k", "n", "tb", output=True)}
# The dense gemm's operands: untransposed, leading dimensions from the shape (locals of its body).
DENSE = (Matrix("a", "a", "lda", "", "m", "k"), Matrix("b", "b", "ldbc", "", "k", "n"),
         Matrix("c", "c", "ldbc", "", "m", "n", output=True))
DENSE_LOCALS = "const std::int64_t lda = k > 1 ? k : 1, ldbc = n > 1 ? n : 1;"


@dataclass(frozen=True)
class Function:
    """One public function: its name, the catalog op it runs, its matrices in parameter order, whether it
    takes alpha and beta (alpha before the first matrix, beta before C), a batch, which operand a gradient is
    of ("" for a product), and `key`, which names its doc comments (operation_docs.DOCS) and tells overloads
    apart. `dense`: the packed overload (m, n, k, a, b, c), GPU and CPU faces only; `c_abi`: the C ABI's form."""
    key: str
    name: str
    op: spec.Op
    matrices: tuple
    scaled: bool = False
    batched: bool = False
    wrt: str = ""
    dense: bool = False
    c_abi: bool = True


def _product(name, op, scaled=False, argmax=False, batched=False, c_abi=True, key=None):
    matrices = (A, B, C) + ((ARGMAX,) if argmax else ())
    return Function(key or name, name, op, matrices, scaled, batched, "", False, c_abi)


def _gradient(wrt, batched):
    other = "b" if wrt == "a" else "a"
    name = f"backward_{wrt}" + ("_batched" if batched else "")
    return Function(name, name, spec.Op(name), (GRAD_C, ARGMAX_IN, OPERAND[other], GRAD[wrt]), False, batched, wrt)


# Every public function of the faces, in their headers' order (the C ABI's products keep this order too).
FUNCTIONS = (
    _product("gemm", spec.Op.GEMM, c_abi=False),
    _product("gemm", spec.Op.GEMM, scaled=True, key="gemm_scaled"),
    Function("gemm_dense", "gemm", spec.Op.GEMM, DENSE, dense=True, c_abi=False),
    _product("gemm_argmax", spec.Op.GEMM_ARGMAX, argmax=True),
    _gradient("a", False),
    _gradient("b", False),
    _product("gemm_batched", spec.Op.GEMM_BATCHED, batched=True, c_abi=False),
    _product("gemm_batched", spec.Op.GEMM_BATCHED, scaled=True, batched=True, key="gemm_batched_scaled"),
    _product("gemm_batched_argmax", spec.Op.GEMM_BATCHED_ARGMAX, argmax=True, batched=True),
    _gradient("a", True),
    _gradient("b", True),
)


@dataclass(frozen=True)
class Face:
    """A C++ face: its namespace, template head, the constraints of products and gradients ("" for none), the
    trailing parameter, and how a body hands the problem on: {problem} the braced Product or Gradient, {run}
    "product" or "gradient", {launch} and {op} the GPU's launcher (GPU_LAUNCHER) and the op's enumerator."""
    namespace: str
    header: str
    template: str
    requires_product: str
    requires_gradient: str
    tail: str
    call: str


FACES = {
    "gpu": Face("tropical", "tropical/gemm.hpp", "template <Semiring S, Element T>", "", "",
                "CUstream stream = nullptr",
                "detail::{launch}(kernel_id<S, T, Op::{op}>(), erased({problem}), sizeof(T), stream);"),
    "cpu": Face("tropical::cpu", "tropical/cpu/gemm.hpp", "template <Semiring S, Element T>", "Supported<S, T>",
                "HasBackward<S, T>", "int threads = 0", "{run}<S, T>({problem}, threads);"),
    "reference": Face("tropical::reference", "tropical/reference.hpp", "template <class S, class T>",
                      "SupportedPair<S, T>", "SupportedPair<S, T> && Differentiable<S>", "",
                      "{run}<S, T>({problem});"),
}

# The GPU launcher of each op (tropical/gemm.hpp's detail::launch_*).
GPU_LAUNCHER = {
    spec.Op.GEMM: "launch_gemm", spec.Op.GEMM_ARGMAX: "launch_gemm_argmax",
    spec.Op.BACKWARD_A: "launch_backward", spec.Op.BACKWARD_B: "launch_backward",
    spec.Op.GEMM_BATCHED: "launch_gemm_batched", spec.Op.GEMM_BATCHED_ARGMAX: "launch_gemm_batched",
    spec.Op.BACKWARD_A_BATCHED: "launch_backward_batched", spec.Op.BACKWARD_B_BATCHED: "launch_backward_batched",
}


def parameters(f):
    """[(C++ type, name), ...] of f's parameters in a C++ face, without the face's trailing one."""
    if f.dense:
        found = [("std::int64_t", s) for s in ("m", "n", "k")]
        return found + [("T*" if x.output else "const T*", x.data) for x in f.matrices]
    found = [("Trans", "ta"), ("Trans", "tb")] + [("std::int64_t", s) for s in ("m", "n", "k")]
    for i, x in enumerate(f.matrices):
        if f.scaled and i == 0:
            found.append(("T", "alpha"))
        if f.scaled and x.field == "c":
            found.append(("T", "beta"))
        found.append((f"{'' if x.output else 'const '}{x.element}*", x.data))
        found.append(("std::int64_t", x.ld))
        if f.batched:
            found.append(("std::int64_t", x.stride))
    if f.batched:
        found.append(("std::int64_t", "batch"))
    return found


_C_TYPE = {"Trans": "tropical_trans", "std::int64_t": "int64_t", "T": "const void*", "const T*": "const void*",
           "T*": "void*", "std::int32_t*": "int32_t*", "const std::int32_t*": "const int32_t*"}


def c_parameters(f):
    """f's C ABI parameter list as tropical.h spells it (without the GPU form's trailing stream)."""
    params = [("tropical_semiring", "semiring"), ("tropical_dtype", "dtype")]
    params += [(_C_TYPE[t], n) for t, n in parameters(f)]
    return ", ".join(f"{t} {n}" for t, n in params)


def _operand(x, batched):
    """The braced Operand of matrix x (trans and stride left out where they are the defaults)."""
    items = [x.data, x.rows, x.cols, x.ld]
    if batched:
        items += [x.trans or "Trans::kNo", x.stride]
    elif x.trans:
        items.append(x.trans)
    return "{" + ", ".join(items) + "}"


def problem(f):
    """Which problem f builds ("Product" or "Gradient") and the items of its braced initializer."""
    ops = {x.field: ("Operand<std::int32_t>" if x.field == "argmax" and not f.wrt else "")
           + _operand(x, f.batched) for x in f.matrices}
    batch = ["batch"] if f.batched else []
    if f.wrt:
        return "Gradient", [f"Wrt::k{f.wrt.upper()}", ops["grad_c"], ops["argmax"], ops["operand"],
                            "S::kMul == MulKind::kMul", ops["grad"]] + batch
    tail = [ops.get("argmax", "{}"), "reference::scaling<S, T>(alpha, beta)" if f.scaled else "{}"] + batch
    while tail and tail[-1] == "{}":
        tail.pop()
    return "Product", [ops["a"], ops["b"], ops["c"]] + tail


def body(f, face):
    """The lines of f's body in `face` (the template indents them): the problem built and handed on."""
    kind, items = problem(f)
    # The GPU face erases the element type, so it names the problem's type; the others take a braced list.
    head, tail = FACES[face].call.format(launch=GPU_LAUNCHER[f.op], op=spec.OP_ENUM[f.op], run=kind.lower(),
                                         problem=(f"{kind}<T>" if face == "gpu" else "") + "{@}").split("@")
    return ([DENSE_LOCALS] if f.dense else []) + _wrap(head, items, tail, width=116, indent=4)


def c_arguments(f, face):
    """The arguments the C ABI's form of f passes to the C++ face's function (C++ types from void*)."""
    found = []
    for t, n in parameters(f):
        if n in ("ta", "tb"):
            found.append("op_" + n[1])
        elif n in ("alpha", "beta"):
            found.append(f"{n}_of<S, T>({n})")
        elif t in ("const T*", "T*"):
            found.append(f"static_cast<{t}>({n})")
        else:
            found.append(n)
    return found + (["static_cast<CUstream>(stream)"] if face == "gpu" else [])


def aligned(f):
    """The pointers the C ABI checks for alignment before it calls f: ([(T pointer, name)], [int32 ones]); a
    gradient's other operand last, null unless the semiring reads it (MaxMul)."""
    names = {"a": "A", "b": "B", "c": "C"}
    elements = [(x.data, names.get(x.data, x.data)) for x in f.matrices if x.element == "T" and x.field != "operand"]
    elements += [(f"S::kMul == tropical::MulKind::kMul ? {x.data} : nullptr", names[x.data])
                 for x in f.matrices if x.field == "operand"]
    return elements, [x.data for x in f.matrices if x.element != "T"]


def _wrap(head, items, tail, width=118, indent=None):
    """head + the items joined by ", " + tail, on lines of at most `width`; continuations start at column
    `indent` (None: under the first item)."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else tail)
        if len(line) + len(piece.rstrip()) > width and line.strip():
            lines.append(line.rstrip())
            line = " " * (len(head) if indent is None else indent)
        line += piece
    lines.append(line)
    return lines


def face_context(face):
    """The context of templates/face.hpp.j2 for `face` (a key of FACES)."""
    import operation_docs
    fc = FACES[face]
    functions = []
    for f in FUNCTIONS:
        if f.dense and face == "reference":
            continue
        params = [f"{t} {n}" for t, n in parameters(f)] + ([fc.tail] if fc.tail else [])
        functions.append({
            "doc": operation_docs.DOCS[face][f.key].split("\n"),
            "requires": fc.requires_gradient if f.wrt else fc.requires_product,
            "signature": _wrap(f"void {f.name}(", params, ") {"),
            "body": body(f, face),
        })
    return {"face": face, "header": fc.header, "namespace": fc.namespace, "template": fc.template,
            "functions": functions}


def c_api_context():
    """The context of templates/c_api_products.cpp.j2: each C ABI product in both forms, GPU first."""
    functions = []
    for face, prefix, tail in (("gpu", "tropical_", ", void* stream"), ("cpu", "tropical_cpu_", "")):
        for f in FUNCTIONS:
            if not f.c_abi:
                continue
            elements, int32 = aligned(f)
            callee = ("tropical::" if face == "gpu" else "cpu::") + f.name + "<S, T>("
            functions.append({
                "signature": _wrap(f"tropical_status {prefix}{f.name}(",
                                   (c_parameters(f) + tail).split(", "), ") {"),
                "op": spec.OP_ENUM[f.op], "gradient": bool(f.wrt),
                "elements": ", ".join(f'{{{p}, "{n}"}}' for p, n in elements),
                "int32": ", ".join(f'{{{p}, "{p}"}}' for p in int32),
                "call": _wrap("      " + callee, c_arguments(f, face), ");")
                        if not f.wrt else _wrap("        " + callee, c_arguments(f, face), ");"),
            })
    return {"functions": functions}


def c_abi_products():
    """c_abi.PRODUCTS' entries of the products of this table: name -> parameter list, as tropical.h spells it."""
    return {f.name: c_parameters(f) for f in FUNCTIONS if f.c_abi}
