"""Both ways of consuming tropical, from clean directories:

1. installed: `meson install` into a temporary prefix, then a meson project
   that finds it through pkg-config (examples/installed);
2. subproject: examples/consumer with this source tree as its
   subprojects/tropical (codegen runs inside the consumer's build), run on
   its CPU-only path.

Usage: consumers_test.py SOURCE_ROOT
"""

import os
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.abspath(sys.argv[1])


def run(cmd, **kwargs):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


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


def main():
    tmp = tempfile.mkdtemp(prefix="tropical-consumers-")
    env = dict(os.environ, TROPICAL_CACHE_DIR=os.path.join(tmp, "cache"))
    try:
        # 1. Installed library, found through pkg-config.
        prefix = os.path.join(tmp, "prefix")
        run(["meson", "setup", os.path.join(tmp, "lib"), SOURCE, "--prefix", prefix, "--libdir", "lib",
             "-Dtests=false", "-Dbenchmarks=false"])
        run(["meson", "install", "-C", os.path.join(tmp, "lib"), "--quiet"])
        for path in ["include/tropical/catalog.hpp", "include/tropical/gemm.hpp", "include/tropical/jit/registry.hpp",
                     "lib/pkgconfig/tropical.pc", "bin/tropical"]:
            if not os.path.exists(os.path.join(prefix, path)):
                print(f"not installed: {path}")
                return 1
        installed_env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"),
                             LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
        run(["meson", "setup", os.path.join(tmp, "installed"), os.path.join(SOURCE, "examples", "installed")],
            env=installed_env)
        run(["ninja", "-C", os.path.join(tmp, "installed")], env=installed_env)
        run([os.path.join(tmp, "installed", "installed_consumer")], env=installed_env)
        run([os.path.join(prefix, "bin", "tropical"), "list", "--arch", "sm_90"], env=installed_env,
            stdout=subprocess.DEVNULL)

        # 2. Subproject: the consumer's subprojects/tropical holds this tree.
        consumer = os.path.join(tmp, "consumer")
        shutil.copytree(os.path.join(SOURCE, "examples", "consumer"), consumer)
        copy_source_tree(os.path.join(consumer, "subprojects", "tropical"))
        run(["meson", "setup", os.path.join(consumer, "build"), consumer], env=env)
        run(["ninja", "-C", os.path.join(consumer, "build")], env=env)
        run([os.path.join(consumer, "build", "consumer")], env=env)
        print("both consumers built and ran")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
