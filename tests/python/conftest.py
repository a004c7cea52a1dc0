"""The Python package's tests run against the build tree (meson test sets TROPICAL_LIBRARY and PYTHONPATH),
run by hand from the source tree against build/ next to it, or, with TROPICAL_TEST_INSTALLED=1 (the
consumers test), against an installed package on PYTHONPATH that must find its own prefix's library: then
neither the source tree's package nor its build's library may be used. Each session gets its own cache
directory: nothing here touches the user's cache."""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
INSTALLED = os.environ.get("TROPICAL_TEST_INSTALLED") == "1"

if INSTALLED:
    os.environ.pop("TROPICAL_LIBRARY", None)
else:
    if "TROPICAL_LIBRARY" not in os.environ:
        for candidate in ("build/src/libtropical.so.0", "build/src/libtropical.so"):
            path = os.path.join(SOURCE, candidate)
            if os.path.exists(path):
                os.environ["TROPICAL_LIBRARY"] = path
                break
    if not any(os.path.exists(os.path.join(p, "tropical", "__init__.py")) for p in sys.path if p):
        sys.path.insert(0, os.path.join(SOURCE, "python"))
    # The generated tropical_abi.py lies beside the build's library; on PYTHONPATH, a child process that names
    # another library in TROPICAL_LIBRARY still imports the package.
    if os.environ.get("TROPICAL_LIBRARY"):
        generated = os.path.dirname(os.path.realpath(os.environ["TROPICAL_LIBRARY"]))
        if os.path.isfile(os.path.join(generated, "tropical_abi.py")):
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), generated) if p)
# Always this session's own cache (never the user's, even where TROPICAL_CACHE_DIR is set), no layers, no fleet.
os.environ["TROPICAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tropical-pytest-cache-")
os.environ["TROPICAL_CACHE_LAYERS"] = ""
os.environ.pop("TROPICAL_REMOTE_CACHE", None)


def pytest_sessionstart(session):
    """Installed mode: the package and the library it loads are the prefix's, not this tree's."""
    if not INSTALLED:
        return
    import tropical
    from tropical import _lib
    source = os.path.realpath(SOURCE) + os.sep
    for what, path in (("the package", tropical.__file__), ("its library", _lib.path())):
        if os.path.realpath(path).startswith(source):
            raise RuntimeError(f"TROPICAL_TEST_INSTALLED=1 but {what} comes from the source tree: {path}")


def pytest_report_header(config):
    if INSTALLED:
        import tropical
        from tropical import _lib
        return f"tropical (installed): {os.path.dirname(tropical.__file__)}, library {_lib.path()}"
    return None
