"""What the package refuses before anything runs (on NumPy, the CPU path): outputs it was not given to write
(read-only arrays, immutable bytes, read-only mappings), alpha/beta the element type cannot hold, names with
NUL bytes, integers that would wrap through ctypes, a library that is not libtropical."""

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import reference as ref
import tropical

A = np.arange(12, dtype=np.float32).reshape(3, 4)
B = np.arange(8, dtype=np.float32).reshape(4, 2)


def read_only(shape, dtype):
    x = np.zeros(shape, dtype)
    x.flags.writeable = False
    return x


@pytest.mark.parametrize("call", [
    lambda out: tropical.matmul(A, B, out=out),
    lambda out: tropical.matmul(A, B, "maxplus", alpha=0.0, beta=0.0, out=out),
    lambda out: tropical.matmul_argmax(A, B, out=out),
    lambda out: tropical.matmul_argmax(A, B, out_argmax=out.view(np.int32)),
    lambda out: tropical.counting_matmul(A, A, B, B, out=(out, np.zeros((3, 2), np.float32))),
    lambda out: tropical.counting_matmul(A, A, B, B, out=(np.zeros((3, 2), np.float32), out)),
], ids=["matmul", "matmul_beta", "argmax_c", "argmax_index", "counting_values", "counting_counts"])
def test_a_read_only_output_is_refused_and_left_as_it_was(call):
    out = read_only((3, 2), np.float32)
    with pytest.raises(tropical.InvalidArgument, match="read-only"):
        call(out)
    assert not out.any()
    immutable = bytes(24)
    with pytest.raises(tropical.InvalidArgument, match="read-only"):
        call(np.frombuffer(immutable, np.float32).reshape(3, 2))
    assert immutable == bytes(24)


def test_read_only_mappings_as_outputs_are_refused_without_a_crash(tmp_path):
    """These killed the interpreter with SIGSEGV (the library wrote into a PROT_READ mapping): run in a child."""
    path = tmp_path / "c.bin"
    path.write_bytes(bytes(24))
    code = textwrap.dedent(f"""
        import mmap, numpy as np, tropical
        a, b = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
        refused = 0
        with open({str(path)!r}, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            for out in (np.frombuffer(m, np.float32).reshape(3, 2),
                        np.memmap({str(path)!r}, np.float32, mode="r", shape=(3, 2))):
                try:
                    tropical.matmul(a, b, out=out)
                except tropical.InvalidArgument as e:
                    refused += "read-only" in str(e)
        print("refused", refused)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split() == ["refused", "2"]
    assert path.read_bytes() == bytes(24)


def test_a_misaligned_output_is_refused():
    raw = np.zeros(3 * 2 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(3, 2)
    with pytest.raises(tropical.InvalidArgument, match="aligned"):
        tropical.matmul(A, B, out=raw)


@pytest.mark.parametrize("dtype,name,value,shown", [
    (np.int32, "alpha", 2**32 + 5, "int32"),
    (np.int32, "beta", -2**31 - 1, "int32"),
    (np.int16, "beta", 70000, "int16"),
    (np.int64, "alpha", 2**63, "int64"),
    (np.int32, "alpha", 1.5, "int32"),
    (np.int16, "alpha", "3", "int16"),
    (np.int32, "alpha", True, "int32"),
    (np.float32, "alpha", "x", "float32"),
    (np.float64, "beta", 1j, "float64"),
])
def test_alpha_and_beta_the_element_type_cannot_hold_are_refused(dtype, name, value, shown):
    a, b = A.astype(dtype), B.astype(dtype)
    out = np.zeros((3, 2), dtype)
    with pytest.raises(tropical.InvalidArgument, match=f"{name} = .*{shown}"):
        tropical.matmul(a, b, **{name: value}, out=out)
    assert not out.any()


def test_alpha_and_beta_in_range_are_used_exactly():
    a, b = A.astype(np.int16), B.astype(np.int16)
    c = np.array([[30000, -3], [7, 40], [-100, 32000]], np.int16)
    want = ref.matmul("maxplus", a, b, np.int16(-32767), np.int16(32767), c.copy())
    got = tropical.matmul(a, b, alpha=-32767, beta=32767, out=c)
    np.testing.assert_array_equal(got, want)
    assert tropical.matmul(A.astype(np.int32), B.astype(np.int32), alpha=2.0).dtype == np.int32  # 2.0 is 2


def test_names_with_nul_bytes_and_ints_that_would_wrap_are_refused():
    with pytest.raises(tropical.InvalidArgument, match="NUL"):
        tropical.warm("tropical_gemm_maxplus_f32\0junk", arch=90)
    with pytest.raises(tropical.InvalidArgument, match="threads"):
        tropical.set_cpu_threads(2**32 + 3)
    with pytest.raises(tropical.InvalidArgument, match="threads"):
        tropical.set_cpu_threads(-1)
    with pytest.raises(tropical.InvalidArgument, match="arch"):
        tropical.warm(["tropical_gemm_maxplus_f32"], arch=2**32 + 90)
    with pytest.raises(tropical.InvalidArgument, match="threads"):
        tropical.warm(["tropical_gemm_maxplus_f32"], arch=90, threads=2**32)
    assert tropical.cpu_threads() >= 1


def test_an_arch_nvrtc_cannot_target_is_named_with_the_ones_it_can():
    try:
        with pytest.raises(tropical.InvalidArgument, match=r"sm_12 is not a target of NVRTC .*compiles for sm_\d+"):
            tropical.warm(["tropical_gemm_maxplus_f32"], arch=12)
    except tropical.Unavailable as e:
        pytest.skip(f"no NVRTC here: {e}")


def test_a_library_that_is_not_libtropical_is_unavailable(tmp_path):
    """TROPICAL_LIBRARY naming another shared library (here libc) raises Unavailable, not AttributeError."""
    code = "import tropical\ntry:\n    tropical.version()\nexcept tropical.Unavailable as e:\n    print('unavailable', e)"
    env = dict(os.environ, TROPICAL_LIBRARY="libc.so.6")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("unavailable") and "libc.so.6" in done.stdout and "tropical_" in done.stdout


def test_the_tests_use_their_own_cache_directory():
    cache = os.path.realpath(os.environ["TROPICAL_CACHE_DIR"])
    assert os.path.basename(cache).startswith("tropical-pytest-cache-")
    assert os.path.dirname(cache) == os.path.realpath(tempfile.gettempdir())
