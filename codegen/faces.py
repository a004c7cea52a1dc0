"""What generate.py renders from a kernel's parameter list (spec.KERNEL_PARAMS): its declaration in a
fragment, and the argument struct the host fills (tropical/kernel_args.hpp)."""

import c_abi
import spec


def declaration(params, width, start=13, indent=13):
    """The parameters of a kernel's declaration, wrapped as its template lays them out: the first line
    continues at column `start` of the template's text, the next ones start at column `indent`, and no line
    with the closing ") {" is longer than `width`. Columns count the template's text (the kernel's name as
    written there), so a fragment's line breaks never depend on the kernel's name."""
    lines, line = [], " " * start
    for i, p in enumerate(params):
        last = i == len(params) - 1
        item = f"{spec.PARAM_DEVICE[p.kind]} {p.name}" + ("" if last else ",")
        if line.strip() and len(line) + 1 + len(item) + (3 if last else 0) > width:
            lines.append(line)
            line = " " * indent + item
        else:
            line = line + (" " if line.strip() else "") + item
    lines.append(line)
    return "\n".join(lines)[start:]


def struct_name(signature):
    """The C++ argument struct of a signature: "gemm_batched" -> "GemmBatchedArgs"."""
    return "".join(part.capitalize() for part in signature.split("_")) + "Args"


def signature_enumerator(signature):
    """The catalog::Signature enumerator of a signature: "gemm_batched" -> "kGemmBatched"."""
    return "k" + struct_name(signature)[:-len("Args")]


def argument_structs():
    """The context of templates/kernel_args.hpp.j2: one struct per signature, with the kernels it serves."""
    structs = []
    for name, params in spec.KERNEL_PARAMS.items():
        members = [{"name": p.member, "host": spec.PARAM_HOST[p.kind],
                    "pointer": f"const_cast<void*>({p.member})" if p.kind == "value" else f"&{p.member}"}
                   for p in params]
        values = [p.member for p in params if p.kind == "value"]
        structs.append({"signature": name, "name": struct_name(name), "enumerator": signature_enumerator(name),
                        "members": members, "by_value": values})
    return structs


def c_enums_context():
    """The context of templates/c_abi_enums.hpp.j2: the catalog's enumerators of the C ABI with their values."""
    def entry(x, **more):
        return {"enumerator": spec.c_enumerator(x), "short": x.value, **more}
    semirings = [entry(s, tag=spec.SEMIRING_TAG[s], structured=s in spec.STRUCTURED_SEMIRINGS)
                 for s in spec.Semiring if s in spec.C_VALUE]
    types = [entry(t, host=spec.TYPE_HOST[t]) for t in spec.Type if t in spec.C_VALUE]
    ops = [entry(o, enum=spec.OP_ENUM[o]) for o in spec.Op]
    enumerators = [{"name": spec.c_enumerator(x), "value": v} for x, v in spec.C_VALUE.items()]
    return {"semirings": semirings, "types": types, "ops": ops, "enumerators": enumerators}


_CTYPES = {"int": "_int", "unsigned": "_uint", "int64_t": "_i64", "uint32_t": "_u32", "size_t": "_size",
           "const char*": "_str"}


def ctype(c_type, name=""):
    """The ctypes spelling (tropical._abi's aliases) of a C ABI parameter or result type."""
    if c_type.startswith("tropical_"):
        return "_enum"
    if c_type.endswith("*") and c_type != "const char*":
        if name in c_abi.BY_REFERENCE:
            return f"ctypes.POINTER({_CTYPES[c_type.replace('const ', '')[:-1]]})"
        return "_ptr"
    return _CTYPES[c_type]


def _wrap(head, items, tail, indent, width=118):
    """head + the items joined by ", " + tail, on lines of at most `width` (continuations at `indent`)."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else "")
        if len(line) + len(piece.rstrip()) > width and line.strip():
            lines.append(line.rstrip())
            line = " " * indent
        line += piece
    lines.append(line + tail)
    return lines


def _mapping(name, pairs):
    """The lines of `name = {key: value, ...}` (keys and values spelled already)."""
    return _wrap(f"{name} = {{", [f"{k}: {v}" for k, v in pairs], "}", len(name) + 4)


def abi_py_context():
    """The context of templates/abi.py.j2 (the Python package's tropical._abi)."""
    def py(x):
        return spec.c_enumerator(x)[len("TROPICAL_"):]
    enums = [
        {"c_name": "tropical_status", "enumerators": [(n, i) for i, n in enumerate(c_abi.STATUS)]},
        {"c_name": "tropical_semiring", "enumerators": [(py(s), v) for s, v in spec.C_VALUE.items()
                                                   if isinstance(s, spec.Semiring)]},
        {"c_name": "tropical_dtype", "enumerators": [(py(t), v) for t, v in spec.C_VALUE.items() if isinstance(t, spec.Type)]},
        {"c_name": "tropical_op", "enumerators": [(py(o), v) for o, v in spec.C_VALUE.items() if isinstance(o, spec.Op)]},
        {"c_name": "tropical_trans", "enumerators": [(n, i) for i, n in enumerate(c_abi.TRANS)]},
        {"c_name": "tropical_bits_output", "enumerators": [(n, i) for i, (n, _) in enumerate(c_abi.BITS_OUTPUT)]},
    ]
    c_types = [t for t in spec.Type if t in spec.C_VALUE]
    prototypes = []
    for name, (result, params) in c_abi.functions().items():
        prototypes += _wrap(f'    "{name}": ([', [ctype(t, n) for t, n in params], f"], {ctype(result)}),",
                            len(f'    "{name}": (['))
    bits = [n for n in c_abi.functions() if c_abi.is_bits(n)]
    return {
        "abi_version": c_abi.ABI_VERSION, "enums": enums,
        "names": (_mapping("SEMIRINGS", [(f'"{s.value}"', py(s)) for s in spec.Semiring if s in spec.C_VALUE])
                  + _mapping("DTYPES", [(f'"{spec.TYPE_ARRAY_NAME[t]}"', py(t)) for t in c_types])
                  + _mapping("DTYPE_BYTES", [(py(t), spec.TYPE_BYTES[t]) for t in c_types])
                  + _mapping("OPS", [(f'"{o.value}"', py(o)) for o in spec.Op])
                  + _mapping("BITS_OUTPUTS", [(f'"{short}"', n) for n, short in c_abi.BITS_OUTPUT])),
        "prototypes": prototypes,
        "bits_functions": _wrap("    ", [f'"{n}"' for n in bits], ",", 4),
    }
