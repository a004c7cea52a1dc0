"""Finds and imports the generated module tropical._abi (the C ABI's enums and ctypes prototypes). codegen writes
it as tropical_abi.py into the build directory only, beside libtropical; an install puts it into the package.

Looked for, in order: the package's own directory (a wheel, a meson install prefix); beside the library that
$TROPICAL_LIBRARY names, as given and with its links resolved (the build tree: build/src/libtropical.so.0, or a
copy of the library with tropical_abi.py copied beside it); a top-level module tropical_abi on sys.path (its
directory on PYTHONPATH). Nothing is found: ImportError naming every place tried."""

import importlib.util
import os
import sys

FILE = "tropical_abi.py"
NAME = "tropical._abi"


def _places():
    """The files that may hold the generated module, in lookup order (existing or not)."""
    places = [os.path.join(os.path.dirname(os.path.abspath(__file__)), FILE)]
    library = os.environ.get("TROPICAL_LIBRARY")
    if library and os.path.dirname(library):
        for directory in (os.path.dirname(os.path.abspath(library)), os.path.dirname(os.path.realpath(library))):
            candidate = os.path.join(directory, FILE)
            if candidate not in places:
                places.append(candidate)
    return places


def load():
    """The module tropical._abi, imported once (sys.modules keeps it); raises ImportError if it is nowhere."""
    if NAME in sys.modules:
        return sys.modules[NAME]
    places = _places()
    spec = next((importlib.util.spec_from_file_location(NAME, p) for p in places if os.path.isfile(p)), None)
    if spec is None:
        found = importlib.util.find_spec("tropical_abi")
        if found is not None and found.origin:
            spec = importlib.util.spec_from_file_location(NAME, found.origin)
    if spec is None:
        raise ImportError(
            "tropical: the generated module " + FILE + " (the C ABI's enums and ctypes prototypes) is missing; "
            "looked in " + ", ".join(places) + " and for a module tropical_abi on sys.path. Build the project "
            "(ninja -C build writes build/src/" + FILE + " beside libtropical) and set TROPICAL_LIBRARY to "
            "build/src/libtropical.so.0, copy " + FILE + " beside the library TROPICAL_LIBRARY names, or install "
            "the package", name=NAME)
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[NAME]
        raise
    return module
