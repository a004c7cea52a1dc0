#!/usr/bin/env python3
"""Generate the tropical kernel catalog: spec + templates in, sources out.

Writes, into --outdir:
  catalog.hpp          semiring tags, Op, KernelId, launch info, the (semiring, type, op) -> id table
  catalog_sources.hpp  constexpr table {id, name, CUDA fragment, SHA-256}
  catalog_tiers.hpp    the quick tier: fragments, launch shapes of both tiers, cost model
  kernel_args.hpp      the argument struct of each kernel parameter list, and each kernel's list
  c_abi_enums.hpp      the C ABI's enums checked against the spec, and their dispatch to C++ types
With --python-abi FILE it writes the Python package's generated module (C enums, ctypes prototypes; the package
imports it as tropical._abi) to FILE; --outdir may then be left out.
With --faces DIR it writes the C++ faces' BLAS-style functions (operations.py) there: gpu_face.hpp,
cpu_face.hpp, reference_face.hpp; with --c-api FILE the C ABI's products (c_api_products.cpp).
With --fragments DIR it also writes each fragment as DIR/<name>.cu, for reading.

Deterministic: the same spec and templates give byte-identical files.
"""

import argparse
import functools
import hashlib
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faces  # noqa: E402
import operations  # noqa: E402
import spec  # noqa: E402

ADD_ENUM = {"max": "kMax", "min": "kMin", "or": "kOr"}
MUL_ENUM = {"add": "kAdd", "mul": "kMul", "min": "kMin", "max": "kMax", "and": "kAnd"}
IDENTITY_ENUM = {"lowest": "kLowest", "highest": "kHighest", "zero": "kZero", "one": "kOne"}


def identity_value(name, type_):
    """Spelling, inside a fragment, of a semiring identity for one element type."""
    literal = {"zero": "0", "one": "1"}
    if name == "lowest":
        return spec.TYPE_LOWEST[type_]
    if name == "highest":
        return spec.TYPE_HIGHEST[type_]
    return f"({spec.TYPE_DEVICE[type_]}){literal[name]}"


def render_device_fragment(env, kernel):
    """The fragment of a device op's kernel (spec.DEVICE_OPS): its element type, its semiring's arithmetic where it
    has one, its launch geometry, its parameter list and the definitions of the structs that list takes."""
    s, t, d = kernel.semiring, kernel.type, spec.DEVICE_OPS[kernel.op]
    params = spec.KERNEL_PARAMS[spec.signature(kernel)]
    structs = list(dict.fromkeys(p.kind for p in params if p.kind in spec.PARAM_STRUCTS))
    semiring = {} if s is None else {
        "semiring_doc": spec.SEMIRING_DOC[s], "zero": identity_value(spec.SEMIRING_ZERO[s], t),
        "one": identity_value(spec.SEMIRING_ONE[s], t), "add": spec.SEMIRING_ADD[s], "mul": spec.SEMIRING_MUL[s]}
    return env.get_template(d.template).render(
        template_name=d.template, k=kernel, name=kernel.name, op=kernel.op.value, doc=d.doc, type=t.value,
        value_t=spec.TYPE_DEVICE[t], element_bytes=spec.TYPE_BYTES[t], is_float=spec.TYPE_IS_FLOAT[t], launch=kernel.launch,
        parameter_structs="\n\n".join(spec.struct_definition(n, device=True) for n in structs),
        parameters=functools.partial(faces.declaration, params), **semiring)


def render_fragment(env, kernel, tier=spec.Tier.TUNED):
    if kernel.op in spec.DEVICE_OPS:
        return render_device_fragment(env, kernel)
    s, t = kernel.semiring, kernel.type
    quick = tier == spec.Tier.QUICK
    template_name = spec.QUICK_TEMPLATE[kernel.op] if quick else spec.OP_TEMPLATE[kernel.op]
    if s in spec.STRUCTURED_SEMIRINGS:
        template_name = (spec.STRUCTURED_QUICK_TEMPLATE if quick else spec.STRUCTURED_TEMPLATE)[s][kernel.op]
    if isinstance(kernel.tile, spec.SkinnyTile):
        template_name = spec.STRUCTURED_SKINNY_TEMPLATE[s] if s in spec.STRUCTURED_SEMIRINGS else "gemm_skinny.cu.j2"
    if isinstance(kernel.tile, spec.SplitTile):
        template_name = spec.SPLIT_TEMPLATE
    return env.get_template(template_name).render(
        template_name=template_name,
        k=kernel,
        name=kernel.quick_name if quick else kernel.name,
        op=kernel.op.value,
        argmax=kernel.op in spec.ARGMAX_OPS,
        type=t.value,
        semiring_doc=spec.SEMIRING_DOC[s],
        value_t=spec.TYPE_DEVICE[t],
        is_float=spec.TYPE_IS_FLOAT[t],
        lowest=spec.TYPE_LOWEST[t],
        highest=spec.TYPE_HIGHEST[t],
        fmax=spec.TYPE_FMAX.get(t),
        fmin=spec.TYPE_FMIN.get(t),
        batched=kernel.op in spec.BATCHED_OPS,
        zero=identity_value(spec.SEMIRING_ZERO[s], t),
        add=spec.SEMIRING_ADD[s],
        mul=spec.SEMIRING_MUL[s],
        launch=kernel.quick_launch if quick else kernel.launch,
        parameters=functools.partial(faces.declaration, spec.KERNEL_PARAMS[spec.signature(kernel)]),
    )


def build_kernels(env):
    kernels = spec.catalog()
    for k in kernels:
        k.launch = dict(spec.launch(k))
        k.launch["threads"] = k.launch["block_x"] * k.launch["block_y"]
        # The widest C a variant takes: its tile, or any n for a skinny tile (catalog::pick_tile).
        k.max_n = "INT64_MAX" if isinstance(k.tile, spec.SkinnyTile) else k.launch["tile_n"]
        k.op_enum = spec.OP_ENUM[k.op]
        k.semiring_tag = spec.SEMIRING_TAG.get(k.semiring, "")
        k.semiring_name = k.semiring.value if k.semiring else ""
        k.type_host = spec.TYPE_HOST[k.type]
        k.signature_enumerator = faces.signature_enumerator(spec.signature(k))
        k.base = next(b for b in kernels if (b.op, b.semiring, b.type, b.tile) == (k.op, k.semiring, k.type, None))
        k.source = render_fragment(env, k)
        if ")TROPICAL_SRC" in k.source:
            raise SystemExit(f"{k.name}: fragment contains the raw-string delimiter")
        k.digest = hashlib.sha256(k.source.encode()).hexdigest()
        k.feature_arch = spec.DEVICE_OPS[k.op].feature_arch if k.op in spec.DEVICE_OPS else 0
        add_quick_tier(env, k)
    return kernels


def add_quick_tier(env, k):
    """Sets k.quick_* (name, launch, source, digest; source "" for one tier) and k.cost."""
    k.quick_name = spec.quick_name(k)
    k.quick_launch = spec.quick_launch(k)
    k.quick_source, k.quick_digest = "", ""
    k.cost = {"quick_macs_per_ns": 0.0, "tuned_compile_ms": 0.0}
    if k.quick_launch is None:
        k.quick_launch = dict(k.launch)
        return
    k.quick_launch = dict(k.quick_launch)
    k.quick_launch["threads"] = k.quick_launch["block_x"] * k.quick_launch["block_y"]
    k.quick_source = render_fragment(env, k, spec.Tier.QUICK)
    if ")TROPICAL_SRC" in k.quick_source:
        raise SystemExit(f"{k.quick_name}: fragment contains the raw-string delimiter")
    k.quick_digest = hashlib.sha256(k.quick_source.encode()).hexdigest()
    k.cost = {"quick_macs_per_ns": spec.quick_macs_per_ns(k),
              "tuned_compile_ms": spec.TUNED_COMPILE_MS[k.op]}


def header_context(kernels):
    semirings = [
        {
            "tag": spec.SEMIRING_TAG[s],
            "short": s.value,
            "doc": spec.SEMIRING_DOC[s],
            "add_enum": ADD_ENUM[spec.SEMIRING_ADD[s]],
            "mul_enum": MUL_ENUM[spec.SEMIRING_MUL[s]],
            "zero_enum": IDENTITY_ENUM[spec.SEMIRING_ZERO[s]],
            "one_enum": IDENTITY_ENUM[spec.SEMIRING_ONE[s]],
        }
        for s in spec.Semiring if s not in spec.STRUCTURED_SEMIRINGS
    ]
    # Every semiring tag, scalar or structured, in the enum's order (the kernel table's index).
    semiring_tags = [spec.SEMIRING_TAG[s] for s in spec.Semiring]
    structured = [{"tag": spec.SEMIRING_TAG[s], "short": s.value, "doc": spec.SEMIRING_DOC[s],
                   "concept": spec.STRUCTURED_CONCEPT[s], "why": spec.STRUCTURED_WHY[s][0],
                   "header": spec.STRUCTURED_WHY[s][1], "elements": spec.STRUCTURED_WHY[s][2], "types": [spec.TYPE_HOST[t] for t in spec.SEMIRING_TYPES[s]]}
                  for s in spec.STRUCTURED_SEMIRINGS]
    ops = [{"enum": spec.OP_ENUM[o], "short": o.value} for o in spec.Op]
    # The device ops follow the products in the C++ enum (the products' values index kDefaultKernels).
    device_ops = [{"enum": spec.OP_ENUM[o], "short": o.value, "doc": d.doc} for o, d in spec.DEVICE_OPS.items()]
    # element: a type of a scalar semiring (the Element concept); packed words are BITS's alone.
    scalar_types = {t for s in spec.Semiring if s not in spec.STRUCTURED_SEMIRINGS for t in spec.SEMIRING_TYPES[s]}
    types = [{"host": spec.TYPE_HOST[t], "short": t.value, "element": t in scalar_types} for t in spec.Type]
    pairs = [(spec.SEMIRING_TAG[s], spec.TYPE_HOST[t]) for s in spec.Semiring for t in spec.SEMIRING_TYPES[s]
             if s not in spec.STRUCTURED_SEMIRINGS]
    defaults = [k for k in kernels if not k.variant]
    small = [k for k in kernels if k.variant and not isinstance(k.tile, spec.SplitTile) and not spec.is_few_tiles(k)]
    splits = [k for k in kernels if isinstance(k.tile, spec.SplitTile)]
    # A single product small enough for a small tile of the batched op of its
    # semiring and type runs there as a batch of one (catalog::pick_product).
    batched_of = {spec.Op.GEMM: spec.Op.GEMM_BATCHED, spec.Op.GEMM_ARGMAX: spec.Op.GEMM_BATCHED_ARGMAX}
    single = []
    for k in defaults:
        if k.op in batched_of:
            tiles = [t for t in small if t.base.op == batched_of[k.op] and t.base.semiring == k.semiring
                     and t.base.type == k.type]
            single.extend((k, t) for t in tiles)
    # (semiring, type, op) -> id of the default tile, -1 where the catalog has none: a flat
    # table indexed (semiring * types + type) * ops + op, in the enums' order.
    default_id = {(k.semiring, k.type, k.op): k.id for k in defaults}
    kernel_table = [default_id.get((s, t, o), -1) for s in spec.Semiring for t in spec.Type for o in spec.Op]
    return {"semirings": semirings, "semiring_tags": semiring_tags, "structured": structured, "ops": ops,
            "device_ops": device_ops, "types": types, "pairs": pairs, "kernels": kernels,
            "defaults": defaults, "small": small, "splits": splits, "single": single, "kernel_table": kernel_table,
            # pick_product's early exit: the most rows and columns a square small tile holds, the most rows a
            # skinny one does
            "single_max_m": max([t.launch["tile_m"] for _, t in single] or [0]),
            "single_max_n": max([t.launch["tile_n"] for _, t in single if t.max_n != "INT64_MAX"] or [0]),
            "single_skinny_m": max([t.launch["tile_m"] for _, t in single if t.max_n == "INT64_MAX"] or [0]),
            "catalog_contents": catalog_contents(defaults), "structs": faces.argument_structs(),
            "param_structs": [spec.struct_definition(n, device=False) for n in spec.PARAM_STRUCTS],
            "device_kernels": [k for k in kernels if k.op in spec.DEVICE_OPS],
            "device_geometry": [{"short": o.value, "name": faces.struct_name(o.value)[:-len("Args")] + "Geometry",
                                 "constants": [("k" + "".join(w.capitalize() for w in key.split("_")), v)
                                               for key, v in d.launch.items()]}
                                for o, d in spec.DEVICE_OPS.items()]}


def catalog_contents(defaults):
    """What the catalog has, in words, for the static_assert of an unsupported combination:
    "gemm, gemm_argmax for MaxPlus, MinPlus over float, double; AndOr over std::uint8_t; ...".
    Ops with the same (semiring, type) pairs are named together, semirings with the same types too."""
    pairs_of = {}
    for k in defaults:
        pairs_of.setdefault(k.op, set()).add((k.semiring, k.type))
    groups = {}
    for o in spec.Op:
        if o in pairs_of:
            groups.setdefault(frozenset(pairs_of[o]), []).append(o)
    parts = []
    for pairs, ops in groups.items():
        types_of = {}
        for s in spec.Semiring:
            types = tuple(t for t in spec.Type if (s, t) in pairs)
            if types:
                types_of.setdefault(types, []).append(s)
        where = "; ".join(", ".join(spec.SEMIRING_TAG[s] for s in semirings) + " over "
                          + ", ".join(spec.TYPE_HOST[t] for t in types) for types, semirings in types_of.items())
        parts.append(", ".join(o.value for o in ops) + " for " + where)
    return "; and ".join(parts)


def write_if_changed(path, text):
    """Write text to path unless it already holds exactly that (keeps mtimes stable)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


class _RecordingLoader(jinja2.FileSystemLoader):
    """A FileSystemLoader that remembers the file of every template it loads (write_depfile)."""

    def __init__(self, folder):
        super().__init__(folder)
        self.files = set()

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        self.files.add(filename)
        return source, filename, uptodate


def write_depfile(path, target, env):
    """Writes a Makefile-style depfile: `target` depends on every template `env` has loaded and on the codegen
    modules, so that the build reruns the generator when any changes and no list of templates is kept by hand."""
    here = os.path.dirname(os.path.abspath(__file__))
    deps = sorted(env.loader.files) + sorted(os.path.join(here, n) for n in os.listdir(here) if n.endswith(".py"))
    write_if_changed(path, target.replace(" ", "\\ ") + ": " + " ".join(d.replace(" ", "\\ ") for d in deps) + "\n")


def environment(templates):
    """The Jinja2 environment that renders the templates in folder `templates` (recording which: write_depfile)."""
    return jinja2.Environment(
        loader=_RecordingLoader(templates),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def write_faces(env, faces_dir, c_api_path):
    """Writes the C++ faces' functions into faces_dir and the C ABI's products to c_api_path (either may be None)."""
    if faces_dir:
        os.makedirs(faces_dir, exist_ok=True)
        for face in operations.FACES:
            text = env.get_template("face.hpp.j2").render(**operations.face_context(face))
            write_if_changed(os.path.join(faces_dir, face + "_face.hpp"), text)
    if c_api_path:
        write_if_changed(c_api_path, env.get_template("c_api_products.cpp.j2").render(**operations.c_api_context()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", required=True, help="folder of the Jinja2 templates")
    parser.add_argument("--outdir", help="folder for the generated catalog headers")
    parser.add_argument("--faces", help="folder for the C++ faces' generated functions")
    parser.add_argument("--c-api", help="path of the C ABI's generated products")
    parser.add_argument("--fragments", help="also write each CUDA fragment to this folder")
    parser.add_argument("--python-abi", help="write the Python package's tropical_abi.py to this path")
    parser.add_argument("--list", action="store_true", help="print id and name of every kernel")
    parser.add_argument("--depfile", help="also write a depfile of the templates and modules read, to this path")
    args = parser.parse_args(argv)

    outputs = [args.outdir and os.path.join(args.outdir, "catalog.hpp"), args.faces and
               os.path.join(args.faces, "gpu_face.hpp"), args.c_api, args.python_abi, args.fragments]
    outputs = [o for o in outputs if o]
    if not outputs and not args.list:
        parser.error("nothing to do: give --outdir, --faces, --c-api, --python-abi, --fragments or --list")
    env = environment(args.templates)
    write_faces(env, args.faces, args.c_api)
    if args.outdir is not None or args.python_abi or args.fragments or args.list:
        write_catalog(env, args)
    if args.depfile:
        write_depfile(args.depfile, outputs[0], env)
    return 0


def write_catalog(env, args):
    """The catalog's headers, the Python module, the fragments and the kernel list, as args ask."""
    kernels = build_kernels(env)
    context = header_context(kernels)
    if args.outdir is not None:
        os.makedirs(args.outdir, exist_ok=True)
        for name in ("catalog.hpp", "catalog_sources.hpp", "catalog_tiers.hpp", "kernel_args.hpp"):
            text = env.get_template(name + ".j2").render(**context)
            write_if_changed(os.path.join(args.outdir, name), text)
        text = env.get_template("c_abi_enums.hpp.j2").render(**faces.c_enums_context())
        write_if_changed(os.path.join(args.outdir, "c_abi_enums.hpp"), text)
    if args.python_abi:
        write_if_changed(args.python_abi, env.get_template("abi.py.j2").render(**faces.abi_py_context()))
    if args.fragments:
        os.makedirs(args.fragments, exist_ok=True)
        for k in kernels:
            write_if_changed(os.path.join(args.fragments, k.name + ".cu"), k.source)
            if k.quick_source:
                write_if_changed(os.path.join(args.fragments, k.quick_name + ".cu"), k.quick_source)
    if args.list:
        for k in kernels:
            print(f"{k.id:3d} {k.name}")


if __name__ == "__main__":
    sys.exit(main())
