"""The Python wheel end to end, as a user gets it:

1. built by `python3 -m build --wheel --no-isolation` (pyproject.toml, meson-python) from a copy of this
   checkout, into a directory outside the tree: exactly one wheel, tagged py3-none-manylinux_2_N_<arch>
   where glibc 2.N has every GLIBC_ symbol version its ELF files need, at most 100 MB, holding only the
   package `tropical` (its library in tropical/_native) and its dist-info;
2. `auditwheel`-style: `ldd` of every ELF file in the unpacked wheel resolves, and only to the system's
   glibc, libstdc++, libgcc and libcrypto.so.3 or to the wheel's own files;
3. installed with `pip install --no-deps` into a fresh venv (`--system-site-packages`, for Debian's NumPy and
   pytest) outside the tree, after the copy it was built from is deleted: from a directory outside the tree,
   with no PYTHONPATH, TROPICAL_LIBRARY or LD_LIBRARY_PATH, `tropical` and the library it loads are the
   venv's, and the package's suite (tests/python, TROPICAL_TEST_INSTALLED=1: its conftest refuses the
   source tree's package or library; the torch and CuPy tests skip where those are absent) passes.

Skips (77) where python3-build or python3-mesonpy is not installed.

Usage: wheel_test.py SOURCE_ROOT
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

SOURCE = os.path.realpath(sys.argv[1])
MAX_WHEEL_BYTES = 100 * 1000 * 1000
# What an ELF file of the wheel may need from the system (the manylinux set, plus OpenSSL 3's libcrypto).
SYSTEM_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libstdc++.so.6",
                    "libgcc_s.so.1", "libcrypto.so.3", "ld-linux-x86-64.so.2", "linux-vdso.so.1"}


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(cmd, **kwargs):
    """Runs cmd (echoed) and returns its stdout; its output is shown when it fails or echo is set."""
    echo = kwargs.pop("echo", False)
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if echo or proc.returncode != 0:
        sys.stdout.write(proc.stdout + proc.stderr)
    proc.check_returncode()
    return proc.stdout


def copy_source_tree(dest):
    """Copies this checkout's files (tracked and untracked, not ignored: no build directory)."""
    try:
        files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=SOURCE).split("\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("build*", ".git", "__pycache__"))
        return
    for name in files:
        path = os.path.join(SOURCE, name)
        if name and os.path.isfile(path) and not os.path.islink(path):
            os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(path, os.path.join(dest, name))
        elif name and os.path.islink(path):
            os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
            os.symlink(os.readlink(path), os.path.join(dest, name))


def build_wheel(tmp, env):
    """The wheel built from a copy of the checkout (deleted afterwards), and its path."""
    copy = os.path.join(tmp, "source")
    copy_source_tree(copy)
    dist = os.path.join(tmp, "dist")
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, copy], env=env, cwd=tmp)
    shutil.rmtree(copy)
    wheels = os.listdir(dist)
    check(len(wheels) == 1 and wheels[0].endswith(".whl"), f"expected one wheel, found {wheels}")
    return os.path.join(dist, wheels[0])


def check_contents(wheel, unpacked):
    """Tag, size and files of the wheel; returns the glibc minor version its tag promises."""
    name = os.path.basename(wheel)
    match = re.fullmatch(r"(\w+)-([\w.]+)-py3-none-manylinux_2_(\d+)_" + re.escape(os.uname().machine) + r"\.whl",
                         name)
    check(match is not None, f"wheel {name} is not tagged py3-none-manylinux_2_N_{os.uname().machine}")
    size = os.path.getsize(wheel)
    check(size <= MAX_WHEEL_BYTES, f"wheel {name} is {size} bytes, over {MAX_WHEEL_BYTES}")
    print(f"wheel: {name}, {size} bytes")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        whl.extractall(unpacked)
        wheel_info = whl.read(f"{match.group(1)}-{match.group(2)}.dist-info/WHEEL").decode()
    check(f"Tag: py3-none-manylinux_2_{match.group(3)}_" in wheel_info and "Root-Is-Purelib: false" in wheel_info,
          f"the WHEEL file does not match the file name:\n{wheel_info}")
    stray = [n for n in names if not n.startswith(("tropical/", f"{match.group(1)}-{match.group(2)}.dist-info/"))]
    check(not stray, f"the wheel holds files outside the package: {stray}")
    for required in ("tropical/__init__.py", "tropical/_lib.py", "tropical/_install.py", "tropical/tropical_abi.py",
                     "tropical/_native/libtropical.so.0"):
        check(required in names, f"the wheel lacks {required}")
    return int(match.group(3))


def elf_files(unpacked):
    for root, _, files in os.walk(unpacked):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def check_elf_files(unpacked, glibc_minor, env):
    """ldd of every ELF file resolves to the system's allowed libraries or the wheel's own files, and no symbol
    version needs a glibc newer than the tag's."""
    root = os.path.realpath(unpacked) + os.sep
    found = list(elf_files(unpacked))
    check(found, "the wheel holds no ELF file")
    for path in found:
        for line in run(["ldd", path], env=env).splitlines():
            line = line.strip()
            soname = line.split()[0]
            resolved = line.split("=>")[1].split("(")[0].strip() if "=>" in line else ""
            check(resolved != "not found", f"ldd {path}: {soname} not found")
            inside = resolved != "" and os.path.realpath(resolved).startswith(root)
            base = os.path.basename(soname)
            check(inside or base in SYSTEM_LIBRARIES,
                  f"ldd {path}: {soname} => {resolved or '(loader)'} is neither the system's nor the wheel's")
        needed = [int(v) for v in re.findall(r"\bGLIBC_2\.(\d+)\b", run(["objdump", "-T", path], env=env))]
        check(max(needed, default=0) <= glibc_minor,
              f"{path} needs GLIBC_2.{max(needed)}, newer than its tag's manylinux_2_{glibc_minor}")
        print(f"ok: {os.path.relpath(path, unpacked)} (needs GLIBC_2.{max(needed, default=0)})")


def check_installed(wheel, tmp, env):
    """The wheel in a fresh venv, used from a directory outside the tree."""
    venv = os.path.join(tmp, "venv")
    run(["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable, "-m", "venv",
         "--system-site-packages", venv], env=env)
    python = os.path.join(venv, "bin", "python")
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q", wheel],
        env=env)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    probe = ("import os, numpy as np, tropical\n"
             "from tropical import _lib\n"
             "a = np.arange(12, dtype=np.float32).reshape(3, 4)\n"
             "b = np.arange(8, dtype=np.float32).reshape(4, 2)\n"
             "assert (tropical.matmul(a, b) == (a[:, :, None] + b[None]).max(1)).all()\n"
             "print(os.path.realpath(tropical.__file__))\n"
             "print(_lib.path())\n")
    package, library = run([python, "-c", probe], env=env, cwd=work).split()
    site = os.path.realpath(venv) + os.sep
    check(package.startswith(site), f"tropical was imported from {package}, not the venv {venv}")
    check(library.startswith(site), f"tropical loaded {library}, not the venv's library")
    check(not package.startswith(SOURCE + os.sep) and not library.startswith(SOURCE + os.sep),
          "the installed package used the source tree")
    print(f"installed: {package}, library {library}")
    run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", os.path.join(SOURCE, "tests", "python")],
        env=dict(env, TROPICAL_TEST_INSTALLED="1"), cwd=work, echo=True)


def main():
    for module in ("build", "mesonpy", "pytest", "numpy"):
        try:
            __import__(module)
        except ImportError:
            print(f"skipped: {sys.executable} has no {module} (apt-get install python3-build python3-mesonpy "
                  "python3-pytest python3-numpy python3-venv)")
            return 77
    tmp = tempfile.mkdtemp(prefix="tropical-wheel-")
    check(not os.path.realpath(tmp).startswith(SOURCE + os.sep), f"the temporary directory {tmp} is in the tree")
    home = os.path.join(tmp, "home")  # the build's tools write dot files of their own (rustup's shims): not the user's
    os.makedirs(home)
    env = dict(os.environ, TROPICAL_CACHE_DIR=os.path.join(tmp, "cache"), TROPICAL_CACHE_LAYERS="", HOME=home,
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    for name in ("PYTHONPATH", "TROPICAL_LIBRARY", "LD_LIBRARY_PATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    try:
        wheel = build_wheel(tmp, env)
        unpacked = os.path.join(tmp, "unpacked")
        glibc_minor = check_contents(wheel, unpacked)
        check_elf_files(unpacked, glibc_minor, env)
        check_installed(wheel, tmp, env)
    except (Failure, subprocess.CalledProcessError) as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
