"""The examples run and check themselves: examples/python/spin_glass.py (needs torch; on the GPU where
there is one, else on the CPU path)."""

import os
import subprocess
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_spin_glass_ground_state_from_the_gradient():
    pytest.importorskip("torch")
    import tropical
    script = os.path.join(SOURCE, "examples", "python", "spin_glass.py")
    env = dict(os.environ)
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(tropical.__file__)))
    env["PYTHONPATH"] = package_dir + os.pathsep + env.get("PYTHONPATH", "")
    for args in (["4", "4", "1"], ["3", "5", "7"]):
        out = subprocess.run([sys.executable, script] + args, capture_output=True, text=True, timeout=600, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "ground-state energy" in out.stdout and "MISMATCH" not in out.stdout
