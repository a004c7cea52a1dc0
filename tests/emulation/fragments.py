#!/usr/bin/env python3
"""Writes the CUDA fragments of the named catalog kernels for tests/emulation: OUTDIR/<name>.tuned.h and,
where the kernel has a quick tier, OUTDIR/<name>.quick.h (headers to meson: generated, never compiled
alone; tests/emulation/fragment.cpp includes each once, in a namespace of its own).

Usage: fragments.py TEMPLATES OUTDIR DEPFILE NAME... (DEPFILE: the templates and modules read, for the build)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "codegen"))
import generate  # noqa: E402


def main(argv):
    templates, outdir, depfile, names = argv[0], argv[1], argv[2], argv[3:]
    env = generate.environment(templates)
    kernels = {k.name: k for k in generate.build_kernels(env)}
    missing = [n for n in names if n not in kernels]
    if missing:
        raise SystemExit("not in the catalog: " + ", ".join(missing))
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        k = kernels[name]
        generate.write_if_changed(os.path.join(outdir, name + ".tuned.h"), k.source)
        if k.quick_source:
            generate.write_if_changed(os.path.join(outdir, name + ".quick.h"), k.quick_source)
    generate.write_depfile(depfile, os.path.join(outdir, names[0] + ".tuned.h"), env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
