"""The Python package's tests run against the build tree (meson test sets TROPICAL_LIBRARY and PYTHONPATH)
or, run by hand from the source tree, against build/ next to it. Each session gets its own cache directory:
nothing here touches the user's cache."""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

if "TROPICAL_LIBRARY" not in os.environ:
    for candidate in ("build/src/libtropical.so.0", "build/src/libtropical.so"):
        path = os.path.join(SOURCE, candidate)
        if os.path.exists(path):
            os.environ["TROPICAL_LIBRARY"] = path
            break
if not any(os.path.exists(os.path.join(p, "tropical", "__init__.py")) for p in sys.path if p):
    sys.path.insert(0, os.path.join(SOURCE, "python"))
os.environ.setdefault("TROPICAL_CACHE_DIR", tempfile.mkdtemp(prefix="tropical-pytest-cache-"))
os.environ.setdefault("TROPICAL_CACHE_LAYERS", "")
