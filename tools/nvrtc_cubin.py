#!/usr/bin/env python3
"""nvrtc_cubin: compiles a catalog fragment to a cubin with NVRTC and the
library's tuned-tier options (src/jit/nvrtc.cpp, compile_options), so that
tools/kernel_lab.cu times the code the library runs. `nvcc -cubin` of the same
fragment can differ: on the H100 the f32 gemm_argmax ran 10.89 T from nvcc's
cubin and 10.43 T from the library's (bench/RESULTS.md, "f32 gemm_argmax 8192³").

usage: nvrtc_cubin.py LIBNVRTC FRAGMENT.cu OUT.cubin [--arch sm_90] [NVRTC option...]
Prints NVRTC's log (add --ptxas-options=-v for registers and spills); exit 1 if
the compile fails.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "codegen"))
import ptx  # noqa: E402  (the build's NVRTC calls and options: codegen/ptx.py)

# The library's options for a tuned fragment, less the architecture.
LIBRARY_OPTIONS = ptx.COMMON_OPTIONS


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    libnvrtc, fragment, out, rest = argv[1], argv[2], argv[3], argv[4:]
    arch = "sm_90"
    if rest[:1] == ["--arch"]:
        arch, rest = rest[1], rest[2:]
    with open(fragment, encoding="utf-8") as f:
        source = f.read()
    options = [f"--gpu-architecture={arch}"] + LIBRARY_OPTIONS + rest
    try:
        name = os.path.splitext(os.path.basename(fragment))[0]
        cubin, log = ptx.Nvrtc(libnvrtc).compile(name, source, options, "CUBIN")
    except SystemExit as e:  # the compile failed: its log
        print(e)
        return 1
    if log:
        print(log)
    with open(out, "wb") as f:
        f.write(cubin)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
