#!/usr/bin/env python3
"""tools/kernel_lab.cu stays usable: it compiles with nvcc, a catalog fragment
compiles to a cubin with the options its header gives, and the argument list it
passes for each kind of kernel has as many entries as that kernel's parameters
(so a kernel signature change that would make the lab launch garbage fails
here); tools/nvrtc_cubin.py compiles a fragment with NVRTC and the library's
options. Running the lab needs a GPU; this test does not.

usage: kernel_lab_test.py SOURCE_ROOT NVCC
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
NVCC = sys.argv[2] if len(sys.argv) > 2 else "nvcc"
LAB = os.path.join(ROOT, "tools", "kernel_lab.cu")
# One kernel of each kind the lab launches.
KINDS = {
    "gemm": "tropical_gemm_maxplus_f32",
    "argmax": "tropical_gemm_argmax_maxplus_f32",
    "batched": "tropical_gemm_batched_maxplus_f32",
    "bargmax": "tropical_gemm_batched_argmax_maxplus_f32_32x32",
    "counting": "tropical_gemm_counting_f32",
}


def lab_argument_counts(source):
    """kind -> entries of the argument list kernel_lab.cu builds for it."""
    counts = {}
    for kind, body in re.findall(r'kind == "(\w+)"\)\s*\{\s*args = \{([^}]*)\}', source):
        counts[kind] = len([a for a in body.split(",") if a.strip()])
    return counts


def kernel_parameter_count(fragment, name):
    """Parameters of the kernel `name` in a fragment's source."""
    match = re.search(re.escape(name) + r"\(([^)]*)\)\s*\{", fragment)
    if match is None:
        raise AssertionError(f"no kernel {name} in its fragment")
    return len([p for p in match.group(1).split(",") if p.strip()])


class KernelLabTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.frag = os.path.join(cls.tmp.name, "frag")
        subprocess.run([sys.executable, os.path.join(ROOT, "codegen", "generate.py"), "--templates",
                        os.path.join(ROOT, "templates"), "--outdir", os.path.join(cls.tmp.name, "out"),
                        "--fragments", cls.frag], check=True, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_argument_lists_match_the_kernels(self):
        counts = lab_argument_counts(open(LAB).read())
        self.assertEqual(sorted(counts), sorted(KINDS))
        for kind, name in KINDS.items():
            with open(os.path.join(self.frag, name + ".cu")) as f:
                self.assertEqual(counts[kind], kernel_parameter_count(f.read(), name), kind)

    def test_the_lab_and_a_fragment_compile(self):
        stubs = os.path.join(os.path.dirname(os.path.dirname(NVCC)), "lib64", "stubs")
        subprocess.run([NVCC, "-O2", "-arch=sm_90", "-o", os.path.join(self.tmp.name, "kernel_lab"), LAB,
                        "-L" + stubs, "-lcuda"], check=True)
        cubin = os.path.join(self.tmp.name, "k.cubin")
        subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++17", "--fmad=false", "--ftz=false", "-o", cubin,
                        os.path.join(self.frag, KINDS["bargmax"] + ".cu")], check=True)
        self.assertGreater(os.path.getsize(cubin), 0)

    def test_nvrtc_cubin_compiles_with_the_library_options(self):
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        import nvrtc_cubin
        with open(os.path.join(ROOT, "src", "jit", "nvrtc.cpp")) as f:
            library = f.read()
        for option in nvrtc_cubin.LIBRARY_OPTIONS:
            self.assertIn('"' + option + '"', library, "tools/nvrtc_cubin.py and the library's options differ")
        lib64 = os.path.join(os.path.dirname(os.path.dirname(NVCC)), "lib64")
        found = [p for p in (os.path.join(lib64, n) for n in ("libnvrtc.so", "libnvrtc.so.13")) if os.path.exists(p)]
        self.assertTrue(found, "no libnvrtc next to " + NVCC)
        tool = os.path.join(ROOT, "tools", "nvrtc_cubin.py")
        cubin = os.path.join(self.tmp.name, "rtc.cubin")
        subprocess.run([sys.executable, tool, found[0], os.path.join(self.frag, KINDS["argmax"] + ".cu"), cubin],
                       check=True, stdout=subprocess.DEVNULL)
        with open(cubin, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")
        broken = os.path.join(self.tmp.name, "broken.cu")
        with open(broken, "w") as f:
            f.write("extern \"C\" __global__ void k() { undeclared(); }\n")
        run = subprocess.run([sys.executable, tool, found[0], broken, cubin], capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)
        self.assertIn("undeclared", run.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
