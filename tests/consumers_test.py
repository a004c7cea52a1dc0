"""Every way of consuming tropical, from clean directories, with no
LD_LIBRARY_PATH anywhere:

1. installed: `meson setup` + `meson install` into a temporary prefix (not
   searched by the loader); the installed files (public headers only: no
   tropical/jit/ or internal header), the soname, the lean public header (no
   Boost or internal header in <tropical/tropical.hpp>, a bound on its
   preprocessed lines, only -I flags from pkg-config), and the installed
   `tropical --version` and `tropical list`; with -Dprebuilt_archs=sm_90 (for
   three cheap kernels, -Dprebuilt_kernels, so that CI stays quick): a user
   with an empty cache compiles none of them, before and after the prefix is
   moved;
2. pkg-config: programs compiled by hand with
   `c++ ... $(pkg-config --cflags --libs tropical)` (the README's complete
   program, examples/first_product, among them), and a meson project
   (examples/installed) that finds it through pkg-config;
3. CMake: examples/cmake, through find_package(tropical) (skipped, with a
   message, where cmake is not installed);
4. subproject: examples/consumer with this source tree as its
   subprojects/tropical and the parent's default options (werror=false), with
   a compiler warning injected in one of tropical's headers: it must warn,
   build and run, and build neither the tool nor anything to install.

Every program runs its CPU-only path. The installed Python package (PYTHONPATH = the prefix's site
directory, nothing else) finds the prefix's own library, also once the prefix is moved, and passes the
package's test suite (tests/python, TROPICAL_TEST_INSTALLED=1); a C99 program builds against the installed
tropical.h.

Usage: consumers_test.py SOURCE_ROOT
"""

import concurrent.futures
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.abspath(sys.argv[1])
# A warning every compiler of the project reports (-Wall: unused variable), in
# a header that the library's own sources and the consumer both include.
INJECTED_HEADER = "include/tropical/error.hpp"
INJECTED_WARNING = "\nnamespace tropical {\ninline int injected_warning() {\n  int unused = 0;\n  return 1;\n}\n}\n"


class Failure(Exception):
    pass


def run(cmd, **kwargs):
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def output(cmd, echo=True, **kwargs):
    """Runs cmd and returns its stdout; echoes stdout and stderr (always when it fails)."""
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if echo or proc.returncode != 0:
        sys.stdout.write(proc.stdout + proc.stderr)
    proc.check_returncode()
    return proc.stdout


def check(condition, message):
    if not condition:
        raise Failure(message)


def copy_source_tree(dest):
    """Copy the files of this checkout (tracked and untracked, not ignored)."""
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=SOURCE, check=True,
                               capture_output=True, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        files = None
    if files is None:
        shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("build*", ".git"), symlinks=True)
        return
    for rel in filter(None, files):
        src = os.path.join(SOURCE, rel)
        if not os.path.lexists(src) or rel.startswith("examples/"):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), os.path.join(dest, rel))
        else:
            shutil.copy2(src, os.path.join(dest, rel))


# Kernels of the prebuilt layer: cheap ones (tens of ms each to compile).
PREBUILT = ["tropical_backward_a_maxplus_f32", "tropical_backward_b_maxplus_f32"]


def prebuilt_layer_compiles_nothing(tool, env, where):
    """A fresh cache directory, the installed layer: `warm` compiles none of PREBUILT."""
    cache = tempfile.mkdtemp(prefix="tropical-fresh-")
    try:
        summary = output([tool, "warm", "--arch", "sm_90", *PREBUILT, "--cache-dir", cache], env=env)
        check(f"{len(PREBUILT)} kernels, 0 compiled" in summary, f"{where}: the prebuilt layer was not used: {summary}")
        stats = json.loads(output([tool, "stats", "--json", "--cache-dir", cache], env=env, echo=False))
        layer = stats["tiers"][-1]
        check(layer["kind"] == "layer" and layer["location"].endswith(os.path.join("share", "tropical", "cache"))
              and layer["usable"] and layer["entries"] == len(PREBUILT), f"{where}: prebuilt layer: {layer}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def installed(tmp, env):
    """Installs into tmp/prefix with the default (multiarch) libdir; returns (prefix, libdir)."""
    prefix = os.path.join(tmp, "prefix")
    build = os.path.join(tmp, "lib")
    run(["meson", "setup", build, SOURCE, "--prefix", prefix, "-Dtests=false", "-Dbenchmarks=false",
         "-Dprebuilt_archs=sm_90", "-Dprebuilt_kernels=" + ",".join(PREBUILT)], env=env)
    run(["meson", "install", "-C", build, "--quiet"], env=env)
    pcs = glob.glob(os.path.join(prefix, "**", "pkgconfig", "tropical.pc"), recursive=True)
    check(len(pcs) == 1, f"tropical.pc not installed under {prefix}")
    libdir = os.path.dirname(os.path.dirname(pcs[0]))
    for path in ["include/tropical/catalog.hpp", "include/tropical/gemm.hpp", "include/tropical/tropical.hpp",
                 "bin/tropical"]:
        check(os.path.exists(os.path.join(prefix, path)), f"not installed: {path}")
    for path in ["include/tropical/catalog_sources.hpp", "include/tropical/catalog_tiers.hpp",
                 "include/tropical/jit", "include/tropical/internal"]:
        check(not os.path.exists(os.path.join(prefix, path)), f"internal header installed: {path}")
    check(os.path.islink(os.path.join(libdir, "libtropical.so")), "no libtropical.so link for the linker")
    check(os.path.exists(os.path.join(libdir, "libtropical.so.0")), "no versioned libtropical.so.0")
    if shutil.which("readelf"):
        dynamic = output(["readelf", "-d", os.path.join(libdir, "libtropical.so")], echo=False)
        check("[libtropical.so.0]" in dynamic, "the soname is not libtropical.so.0")
    return prefix, libdir


# What one user translation unit that includes <tropical/tropical.hpp> and calls gemm<MaxPlus, float> costs.
# Generous sanity bounds, not the targets (bench/RESULTS.md records those: <= 1.0 s, <= 150 MB at -O2 on the
# 2-core machine): with Boost.Hana's catalog and the registry's headers it was 125,135 lines; now ~68,000,
# nearly all of them the standard library's.
LEAN_SOURCE = """#include <tropical/tropical.hpp>

void product(const float* a, const float* b, float* c, CUstream stream) {
  tropical::gemm<tropical::MaxPlus, float>(64, 64, 64, a, b, c, stream);
}
"""
LEAN_MAX_LINES = 90_000


def public_header_is_lean(prefix, env):
    """The installed tropical.hpp pulls in no internal header, no Boost, and few lines; its cflags are lean."""
    cflags = shlex.split(output(["pkg-config", "--cflags", "tropical"], env=env))
    for flag in cflags:
        check(flag.startswith("-I"), f"pkg-config --cflags gives {flag!r}, which a user's compile does not need")
        check("hiredis" not in flag and "boost" not in flag, f"pkg-config --cflags gives {flag!r}")
    proc = subprocess.run(["c++", "-std=c++20", "-E", "-H", *cflags, "-x", "c++", "-", "-o", os.devnull], env=env,
                          input=LEAN_SOURCE, text=True, capture_output=True)
    check(proc.returncode == 0, f"the lean consumer does not preprocess:\n{proc.stderr}")
    included = [line.lstrip(". ") for line in proc.stderr.splitlines() if line.startswith(".")]
    for header in included:
        check("/tropical/jit/" not in header and "/tropical/internal/" not in header and "boost/" not in header,
              f"<tropical/tropical.hpp> includes {header}")
    lines = subprocess.run(["c++", "-std=c++20", "-E", *cflags, "-x", "c++", "-"], env=env, input=LEAN_SOURCE,
                           text=True, capture_output=True, check=True).stdout.count("\n")
    print(f"<tropical/tropical.hpp> + one gemm call: {len(included)} headers, {lines} preprocessed lines", flush=True)
    check(lines <= LEAN_MAX_LINES, f"<tropical/tropical.hpp> grew to {lines} preprocessed lines (> {LEAN_MAX_LINES})")
    obj = os.path.join(prefix, "lean.o")
    run(["c++", "-std=c++20", "-O2", "-c", "-x", "c++", "-", "-o", obj, *cflags], env=env, input=LEAN_SOURCE,
        text=True)


def headers_compile_alone(prefix, env):
    """Every installed header compiles on its own with the flags pkg-config gives."""
    cflags = shlex.split(output(["pkg-config", "--cflags", "tropical"], env=env))
    headers = sorted(glob.glob(os.path.join(prefix, "include", "tropical", "**", "*.hpp"), recursive=True))

    def compile_alone(header):
        rel = os.path.relpath(header, os.path.join(prefix, "include"))
        proc = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", *cflags, "-x", "c++", "-"], env=env,
                              input=f"#include <{rel}>\n", text=True, capture_output=True)
        return rel, proc

    print(f"+ c++ -fsyntax-only on each of {len(headers)} installed headers", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for rel, proc in pool.map(compile_alone, headers):
            check(proc.returncode == 0, f"installed <{rel}> does not compile alone:\n{proc.stderr}")


PYTHON_CHECK = """
import os, sys, numpy, tropical
from tropical import _lib
path = _lib.lib()._name
assert path.startswith(sys.argv[1]), (path, sys.argv[1])
abi = tropical._abi.__file__  # the generated module, installed into the package
assert abi == os.path.join(os.path.dirname(tropical.__file__), "tropical_abi.py"), abi
c, k = tropical.matmul_argmax(numpy.array([[0, 1, 2], [3, 4, 5]], numpy.float32),
                              numpy.array([[1, 0], [0, 1], [2, 2]], numpy.float32))
assert c.tolist() == [[4, 4], [7, 7]] and k.tolist() == [[2, 2], [2, 2]], (c, k)
print("installed tropical", tropical.version(), "from", path)
"""


def python_and_c_from_prefix(prefix, env, where):
    """The installed Python package (on PYTHONPATH alone, no TROPICAL_LIBRARY) finds the prefix's own library
    and computes; a C99 program builds against the installed tropical.h and runs."""
    inits = glob.glob(os.path.join(prefix, "**", "tropical", "__init__.py"), recursive=True)
    check(len(inits) == 1, f"the Python package is not installed under {prefix} ({where})")
    site = os.path.dirname(os.path.dirname(inits[0]))
    py_env = dict(env, PYTHONPATH=site)
    py_env.pop("TROPICAL_LIBRARY", None)
    run([sys.executable, "-c", PYTHON_CHECK, os.path.realpath(prefix)], env=py_env, cwd=prefix)
    has_pytest = subprocess.run([sys.executable, "-c", "import pytest"], capture_output=True).returncode == 0
    if where == "installed" and not has_pytest:
        print(f"SKIPPED the Python suite against the install: {sys.executable} has no pytest "
              "(apt-get install python3-pytest)")
    elif where == "installed":
        # The package's own suite against the install (tests/python/conftest.py checks that neither this
        # tree's package nor its build's library is used); torch and CuPy tests skip where those are absent.
        run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
             os.path.join(SOURCE, "tests", "python")], env=dict(py_env, TROPICAL_TEST_INSTALLED="1"), cwd=prefix)


def c_program_from_prefix(prefix, env):
    flags = shlex.split(output(["pkg-config", "--cflags", "--libs", "tropical"], env=env))
    exe = os.path.join(prefix, "maxplus_c")
    run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", os.path.join(SOURCE, "examples", "c", "maxplus.c"),
         "-o", exe, *flags], env=env)
    run([exe], env=env)
    os.remove(exe)


def main():
    tmp = tempfile.mkdtemp(prefix="tropical-consumers-")
    env = dict(os.environ, TROPICAL_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("LD_LIBRARY_PATH", None)
    try:
        # 1. Installed into a prefix the loader does not search.
        prefix, libdir = installed(tmp, dict(env, PKG_CONFIG_PATH=os.path.join(tmp, "no-such-dir")))
        env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
        headers_compile_alone(prefix, env)
        public_header_is_lean(prefix, env)
        tool = os.path.join(prefix, "bin", "tropical")
        version = output([tool, "--version"], env=env)
        check(version.startswith("tropical "), f"installed tropical --version printed {version!r}")
        listing = output([tool, "list", "--arch", "sm_90"], env=env)
        check("tropical_gemm_maxplus_f32" in listing, "installed tropical list printed no catalog")
        cache_layer = os.path.join(prefix, "share", "tropical", "cache")
        check(len(glob.glob(os.path.join(cache_layer, "*.entry"))) == len(PREBUILT), "prebuilt layer not installed")
        prebuilt_layer_compiles_nothing(tool, env, "installed")
        python_and_c_from_prefix(prefix, env, "installed")
        c_program_from_prefix(prefix, env)
        moved = os.path.join(tmp, "moved")
        os.rename(prefix, moved)
        # The tool's run path names the old prefix: the loader is told where the library went, and the
        # library finds its layer relative to itself.
        moved_env = dict(env, LD_LIBRARY_PATH=os.path.join(moved, os.path.relpath(libdir, prefix)))
        prebuilt_layer_compiles_nothing(os.path.join(moved, "bin", "tropical"), moved_env, "moved prefix")
        python_and_c_from_prefix(moved, env, "moved prefix")
        os.rename(moved, prefix)

        # 2. pkg-config: by hand, then from a meson project.
        flags = shlex.split(output(["pkg-config", "--cflags", "--libs", "tropical"], env=env))
        by_hand = os.path.join(tmp, "by_hand")
        run(["c++", "-std=c++20", os.path.join(SOURCE, "examples", "installed", "installed_consumer.cpp"), "-o",
             by_hand, *flags], env=env)
        run([by_hand], env=env)
        # The README's complete program, as its header comment builds it.
        first = os.path.join(tmp, "first_product")
        run(["c++", "-std=c++20", os.path.join(SOURCE, "examples", "first_product", "first_product.cpp"), "-o",
             first, *flags], env=env)
        run([first], env=env)
        run(["meson", "setup", os.path.join(tmp, "installed"), os.path.join(SOURCE, "examples", "installed")],
            env=env)
        run(["ninja", "-C", os.path.join(tmp, "installed")], env=env)
        run([os.path.join(tmp, "installed", "installed_consumer")], env=env)

        # 3. CMake: find_package(tropical) and the imported target.
        if shutil.which("cmake") is None:
            print("SKIPPED the CMake consumer: cmake is not installed")
        else:
            check(os.path.exists(os.path.join(libdir, "cmake", "tropical", "tropicalConfig.cmake")),
                  "tropicalConfig.cmake not installed")
            check(os.path.exists(os.path.join(libdir, "cmake", "tropical", "tropicalConfigVersion.cmake")),
                  "tropicalConfigVersion.cmake not installed")
            cmake_build = os.path.join(tmp, "cmake")
            run(["cmake", "-S", os.path.join(SOURCE, "examples", "cmake"), "-B", cmake_build, "-G", "Ninja",
                 "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
            run(["cmake", "--build", cmake_build], env=env)
            run([os.path.join(cmake_build, "cmake_consumer")], env=env)
            # A version the package does not provide is refused (the version file works).
            wrong = os.path.join(tmp, "cmake-wrong")
            os.makedirs(wrong)
            with open(os.path.join(wrong, "CMakeLists.txt"), "w") as f:
                f.write("cmake_minimum_required(VERSION 3.16)\nproject(wrong LANGUAGES CXX)\n"
                        "find_package(tropical 99.0 REQUIRED)\n")
            proc = subprocess.run(["cmake", "-S", wrong, "-B", os.path.join(wrong, "build"),
                                   "-DCMAKE_PREFIX_PATH=" + prefix], env=env, capture_output=True, text=True)
            check(proc.returncode != 0 and "99.0" in proc.stderr,
                  "find_package(tropical 99.0) did not fail: " + proc.stdout + proc.stderr)

        # 4. Subproject, the parent's default options, a warning in tropical's header.
        consumer = os.path.join(tmp, "consumer")
        shutil.copytree(os.path.join(SOURCE, "examples", "consumer"), consumer)
        tree = os.path.join(consumer, "subprojects", "tropical")
        copy_source_tree(tree)
        with open(os.path.join(tree, INJECTED_HEADER), "a") as header:
            header.write(INJECTED_WARNING)
        build = os.path.join(consumer, "build")
        # The copy in subprojects/, not the one installed above.
        env.pop("PKG_CONFIG_PATH")
        run(["meson", "setup", build, consumer, "--force-fallback-for=tropical"], env=env)
        log = output(["ninja", "-C", build], env=env)
        check("Wunused-variable" in log, "the injected warning was not reported: the test checks nothing")
        run([os.path.join(build, "consumer")], env=env)
        check(os.path.isdir(os.path.join(build, "subprojects", "tropical")), "the subproject was not used")
        check(not os.path.exists(os.path.join(build, "subprojects", "tropical", "src", "tropical")),
              "the subproject built the tropical tool without being asked")
        to_install = json.loads(output(["meson", "introspect", "--installed", build], env=env))
        check(to_install == {}, f"the subproject would install files: {sorted(to_install)}")
        print("all consumers built and ran")
        return 0
    except Failure as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
