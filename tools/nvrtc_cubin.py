#!/usr/bin/env python3
"""nvrtc_cubin: compiles a catalog fragment to a cubin with NVRTC and the
library's tuned-tier options (src/jit/nvrtc.cpp, compile_options), so that
tools/kernel_lab.cu times the code the library runs. `nvcc -cubin` of the same
fragment can differ: on the H100 the f32 gemm_argmax ran 10.89 T from nvcc's
cubin and 10.43 T from the library's (bench/RESULTS.md, 2026-11-28).

usage: nvrtc_cubin.py LIBNVRTC FRAGMENT.cu OUT.cubin [--arch sm_90] [NVRTC option...]
Prints NVRTC's log (add --ptxas-options=-v for registers and spills); exit 1 if
the compile fails.
"""

import ctypes
import sys

# The library's options for a tuned fragment, less the architecture.
LIBRARY_OPTIONS = ["--std=c++17", "--fmad=false", "--ftz=false"]


def compile_cubin(libnvrtc, source, arch, extra):
    """(ok, log, cubin bytes) of NVRTC's compile of `source`."""
    lib = ctypes.CDLL(libnvrtc)
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"fragment.cu", 0, None, None) != 0:
        return False, "nvrtcCreateProgram failed", b""
    try:
        options = [f"--gpu-architecture={arch}"] + LIBRARY_OPTIONS + list(extra)
        argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        status = lib.nvrtcCompileProgram(prog, len(options), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if status != 0:
            return False, log.value.decode(errors="replace"), b""
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        if size.value == 0 or lib.nvrtcGetCUBIN(prog, cubin) != 0:
            return False, "NVRTC produced no cubin for " + arch, b""
        return True, log.value.decode(errors="replace"), cubin.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    libnvrtc, fragment, out, rest = argv[1], argv[2], argv[3], argv[4:]
    arch = "sm_90"
    if rest[:1] == ["--arch"]:
        arch, rest = rest[1], rest[2:]
    with open(fragment, "rb") as f:
        ok, log, cubin = compile_cubin(libnvrtc, f.read(), arch, rest)
    if log.strip():
        print(log.strip())
    if not ok:
        return 1
    with open(out, "wb") as f:
        f.write(cubin)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
