"""Compile-fail test: a source must (or must not) compile, with a readable message.

Usage: check.py {fail|pass} SOURCE EXPECTED_TEXT -- COMPILER ARGS...
"""

import subprocess
import sys


def main():
    mode, source, expected = sys.argv[1:4]
    compiler = sys.argv[sys.argv.index("--") + 1:]
    proc = subprocess.run(compiler + ["-fsyntax-only", source], capture_output=True, text=True)
    if mode == "pass":
        if proc.returncode != 0:
            print(proc.stderr)
            return 1
        return 0
    if proc.returncode == 0:
        print(f"{source} compiled, but it must not")
        return 1
    if expected not in proc.stderr:
        print(f"the diagnostic does not say {expected!r}:\n{proc.stderr}")
        return 1
    print(f"rejected as expected: {expected!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
