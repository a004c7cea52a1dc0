#!/usr/bin/env python3
"""The faces generated from the catalog's spec agree with it and with what is checked in: every kernel declares
spec.KERNEL_PARAMS' list (both tiers), the argument structs of tropical/kernel_args.hpp list the same members in
the same order, include/tropical/tropical.h declares the enums of spec.C_VALUE and codegen/c_abi.py and the
functions of codegen/c_abi.py, the build's tropical_abi.py (the Python package's tropical._abi) is what the
generator writes now and defines every name the package takes from it, and no generated Python module is
checked in beside the package's sources; the C++ faces' functions and the C ABI's products generated from
codegen/operations.py have the table's parameters, constraints and docs.

usage: faces_test.py SOURCE_ROOT BUILT_TROPICAL_ABI_PY
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "codegen"))
import c_abi  # noqa: E402
import operation_docs  # noqa: E402
import operations  # noqa: E402
import spec  # noqa: E402

HEADER = os.path.join(ROOT, "include", "tropical", "tropical.h")
BUILT_ABI_PY = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build", "src", "tropical_abi.py")
PACKAGE = os.path.join(ROOT, "python", "tropical")


def declared_parameters(source, name):
    """[(type, name), ...] of kernel `name`'s declaration in a fragment."""
    match = re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*' + re.escape(name) +
                      r"\(([^)]*)\)\s*\{", source)
    if match is None:
        raise AssertionError(f"no kernel {name} in its fragment")
    return [tuple(" ".join(p.split()).rsplit(" ", 1)) for p in match.group(1).split(",")]


def header_enums(text):
    """{enum name: {enumerator: value}} of every typedef'd enum of a C header."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    enums = {}
    for body, name in re.findall(r"typedef enum \w+ \{([^}]*)\} (\w+);", text):
        enums[name] = {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", body)}
    return enums


def header_functions(text):
    """{name: (result, [(C type, name), ...])} of every TROPICAL_API function of a C header."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    found = {}
    for result, name, params in re.findall(r"TROPICAL_API\s+([\w\s*]+?)\s*\b(tropical_\w+)\s*\(([^)]*)\)\s*;", text):
        params = " ".join(params.split())
        found[name] = (" ".join(result.split()), [] if params == "void" else
                       [tuple(p.strip().rsplit(" ", 1)) for p in params.split(",")])
    return found


def generated_functions(text):
    """[(doc lines, requires, name, [parameter, ...], body)] of every function template of a generated face."""
    found = []
    pattern = r"((?:^///.*\n)+)template <[^>]*>\n(?:  requires (.*)\n)?void (\w+)\(([^)]*)\) \{\n((?:  .*\n)*)\}"
    for doc, requires, name, params, body in re.findall(pattern, text, re.M):
        lines = [line[4:] if line.startswith("/// ") else line[3:] for line in doc.rstrip("\n").split("\n")]
        found.append((lines, requires, name, [" ".join(p.split()) for p in params.split(",")], body))
    return found


class FacesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.frag = os.path.join(cls.tmp.name, "frag")
        cls.abi_py = os.path.join(cls.tmp.name, "_abi.py")
        cls.faces, cls.c_api = os.path.join(cls.tmp.name, "faces"), os.path.join(cls.tmp.name, "c_api_products.cpp")
        subprocess.run([sys.executable, os.path.join(ROOT, "codegen", "generate.py"), "--templates",
                        os.path.join(ROOT, "templates"), "--outdir", cls.out, "--fragments", cls.frag,
                        "--python-abi", cls.abi_py, "--faces", cls.faces, "--c-api", cls.c_api], check=True,
                       stdout=subprocess.DEVNULL)
        with open(HEADER, encoding="utf-8") as f:
            cls.header = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_kernel_declares_its_spec_parameters_on_both_tiers(self):
        for k in spec.catalog():
            want = [(spec.PARAM_DEVICE[p.kind], p.name) for p in spec.KERNEL_PARAMS[spec.signature(k)]]
            for name in (k.name, spec.quick_name(k)):
                path = os.path.join(self.frag, name + ".cu")
                if not os.path.exists(path):
                    continue  # a kernel with one tier
                with open(path, encoding="utf-8") as f:
                    self.assertEqual(declared_parameters(f.read(), name), want, name)

    def test_argument_structs_list_the_spec_parameters_in_order(self):
        with open(os.path.join(self.out, "kernel_args.hpp"), encoding="utf-8") as f:
            text = f.read()
        for signature, params in spec.KERNEL_PARAMS.items():
            struct = "".join(p.capitalize() for p in signature.split("_")) + "Args"
            body = re.search(r"struct " + struct + r" \{(.*?)\n\};", text, re.S)
            self.assertIsNotNone(body, struct)
            members = [m for m in re.findall(r"^  (.+) (\w+);$", body.group(1), re.M) if "static" not in m[0]]
            self.assertEqual(members, [(spec.PARAM_HOST[p.kind], p.member) for p in params], struct)
            self.assertIn(f"std::array<void*, {len(params)}> pointers()", body.group(1), struct)

    def test_the_c_header_has_the_spec_enums(self):
        enums = header_enums(self.header)
        for c_name, kind in (("tropical_semiring", spec.Semiring), ("tropical_dtype", spec.Type),
                             ("tropical_op", spec.Op)):
            want = {spec.c_enumerator(x): v for x, v in spec.C_VALUE.items() if isinstance(x, kind)}
            self.assertEqual(enums[c_name], want, c_name)
        for c_name, names in (("tropical_status", c_abi.STATUS), ("tropical_trans", c_abi.TRANS),
                              ("tropical_bits_output", [n for n, _ in c_abi.BITS_OUTPUT])):
            self.assertEqual(enums[c_name], {"TROPICAL_" + n: i for i, n in enumerate(names)}, c_name)
        self.assertEqual(set(enums), {"tropical_semiring", "tropical_dtype", "tropical_op", "tropical_status",
                                      "tropical_trans", "tropical_bits_output"})
        self.assertIn(f"#define TROPICAL_ABI_VERSION {c_abi.ABI_VERSION}\n", self.header)

    def test_the_c_header_declares_the_functions_of_c_abi(self):
        declared = header_functions(self.header)
        want = c_abi.functions()
        self.assertEqual(sorted(declared), sorted(want))
        for name, (result, params) in want.items():
            self.assertEqual(declared[name], (result, params), name)

    def test_the_python_abi_module_is_what_the_spec_generates(self):
        with open(self.abi_py, "rb") as f, open(BUILT_ABI_PY, "rb") as g:
            self.assertEqual(g.read(), f.read(), f"{BUILT_ABI_PY} differs from what the spec generates: rebuild")

    def test_the_package_uses_only_names_the_python_abi_module_defines(self):
        namespace = {}
        with open(BUILT_ABI_PY, encoding="utf-8") as f:
            exec(compile(f.read(), BUILT_ABI_PY, "exec"), namespace)
        for name in sorted(os.listdir(PACKAGE)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
                used = set(re.findall(r"\b_abi\.([A-Za-z_]\w*)", f.read()))
            self.assertEqual(sorted(used - set(namespace)), [], f"python/tropical/{name} uses names tropical._abi "
                                                                "does not define")

    def test_the_python_abi_module_is_generated_only(self):
        for name in ("_abi.py", "tropical_abi.py"):
            self.assertFalse(os.path.exists(os.path.join(PACKAGE, name)),
                             f"python/tropical/{name}: the generated module lives in the build directory only")

    def test_each_face_has_the_table_s_functions_with_their_parameters_constraints_and_docs(self):
        for face, fc in operations.FACES.items():
            with open(os.path.join(self.faces, face + "_face.hpp"), encoding="utf-8") as f:
                got = generated_functions(f.read())
            want = [f for f in operations.FUNCTIONS if not (f.dense and face == "reference")]
            self.assertEqual([g[2] for g in got], [f.name for f in want], face)
            for (doc, requires, name, params, body), f in zip(got, want):
                where = f"{face} {f.key}"
                tail = [fc.tail] if fc.tail else []
                self.assertEqual(params, [f"{t} {n}" for t, n in operations.parameters(f)] + tail, where)
                self.assertEqual(requires, fc.requires_gradient if f.wrt else fc.requires_product, where)
                self.assertEqual(doc, operation_docs.DOCS[face][f.key].split("\n"), where)
                # Every parameter reaches the problem (or the launch): none is dropped on the way.
                for _, n in operations.parameters(f):
                    self.assertRegex(body, r"\b" + n + r"\b", where)

    def test_the_c_abi_products_define_what_tropical_h_declares(self):
        with open(self.c_api, encoding="utf-8") as f:
            text = f.read()
        defined = {}
        for name, params in re.findall(r"^tropical_status (tropical_\w+)\(([^)]*)\) \{", text, re.M):
            defined[name] = [tuple(" ".join(p.split()).rsplit(" ", 1)) for p in params.split(",")]
        declared = header_functions(self.header)
        want = {f"tropical_{p}{f.name}" for f in operations.FUNCTIONS if f.c_abi for p in ("", "cpu_")}
        self.assertEqual(set(defined), want)
        for name, params in defined.items():
            self.assertEqual(declared[name], ("tropical_status", params), name)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
