"""The examples run and check themselves: examples/python/spin_glass.py and independent_set.py (NumPy on the CPU
backend; spin_glass.py also checks tropical.torch.einsum's gradient where torch is present, on the GPU where
there is one)."""

import os
import subprocess
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_example(name, args):
    import tropical
    script = os.path.join(SOURCE, "examples", "python", name)
    env = dict(os.environ)
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(tropical.__file__)))
    env["PYTHONPATH"] = package_dir + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, script] + args, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "MISMATCH" not in out.stdout
    return out.stdout


def test_spin_glass_ground_state_by_einsum():
    for args in (["4", "4", "1"], ["3", "5", "7"]):
        assert "ground-state energy" in run_example("spin_glass.py", args)


def test_independent_set_size_set_and_count_by_einsum():
    for args in (["20", "1", "greedy"], ["18", "4", "treesa"]):
        out = run_example("independent_set.py", args)
        assert "maximum independent set size" in out and "brute force" in out
