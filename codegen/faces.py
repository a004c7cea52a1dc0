"""What generate.py renders from a kernel's parameter list (spec.KERNEL_PARAMS): its declaration in a
fragment, and the argument struct the host fills (tropical/kernel_args.hpp)."""

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
        members = [{"name": p.name, "host": spec.PARAM_HOST[p.kind],
                    "pointer": f"const_cast<void*>({p.name})" if p.kind == "value" else f"&{p.name}"}
                   for p in params]
        values = [p.name for p in params if p.kind == "value"]
        structs.append({"signature": name, "name": struct_name(name), "enumerator": signature_enumerator(name),
                        "members": members, "by_value": values})
    return structs
