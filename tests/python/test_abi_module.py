"""The generated module tropical._abi: found beside the library that TROPICAL_LIBRARY names, and, where it is
nowhere, an ImportError that names it and every place looked in."""

import os
import shutil
import subprocess
import sys

import pytest

import tropical

SOURCE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(tropical.__file__)))
INSTALLED = os.path.isfile(os.path.join(os.path.dirname(tropical.__file__), "tropical_abi.py"))


def run(library, tmp_path):
    env = dict(os.environ, TROPICAL_LIBRARY=library, PYTHONPATH=SOURCE_PACKAGE)
    code = "import tropical; print(tropical._abi.__file__)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)


@pytest.mark.skipif(INSTALLED, reason="an installed package holds its own tropical_abi.py")
def test_a_library_without_the_module_beside_it_is_a_clear_import_error(tmp_path):
    library = tmp_path / "libtropical.so.0"
    shutil.copy(os.environ["TROPICAL_LIBRARY"], library)
    done = run(str(library), tmp_path)
    assert done.returncode != 0
    assert "ImportError: tropical: the generated module tropical_abi.py" in done.stderr, done.stderr
    assert str(tmp_path / "tropical_abi.py") in done.stderr, done.stderr


@pytest.mark.skipif(INSTALLED, reason="an installed package holds its own tropical_abi.py")
def test_the_module_copied_beside_a_copied_library_is_used(tmp_path):
    built = os.path.realpath(os.environ["TROPICAL_LIBRARY"])
    shutil.copy(built, tmp_path / "libtropical.so.0")
    shutil.copy(os.path.join(os.path.dirname(built), "tropical_abi.py"), tmp_path / "tropical_abi.py")
    done = run(str(tmp_path / "libtropical.so.0"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "tropical_abi.py")
