"""The C ABI itself (include/tropical/tropical.h) through ctypes: status codes and messages, enums, null
pointers, the catalog queries, warm, and a C99 program built against the header. A C++ exception escaping
the ABI would abort this process, so every error path below also checks that none does."""

import ctypes
import os
import shutil
import subprocess
import threading

import numpy as np
import pytest

import tropical
from tropical import _lib

OK, INVALID, UNAVAILABLE, COMPILE, CUDA, NOT_IN_CATALOG = 0, 1, 2, 3, 4, 5
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def dll():
    return _lib.lib()


def message(dll):
    return dll.tropical_last_error().decode()


def cpu_gemm(dll, semiring=0, dtype=0, ta=0, tb=0, m=2, n=2, k=2, a=None, lda=2, b=None, ldb=2, c=None, ldc=2):
    buf = (ctypes.c_double * 16)()
    a = ctypes.addressof(buf) if a is None else a
    b = ctypes.addressof(buf) + 32 if b is None else b
    c = ctypes.addressof(buf) + 64 if c is None else c
    return dll.tropical_cpu_gemm(semiring, dtype, ta, tb, m, n, k, None, a, lda, b, ldb, None, c, ldc)


def test_version_and_abi(dll):
    assert tropical.version() == dll.tropical_version().decode()
    assert tropical.version().count(".") == 2
    assert tropical.abi_version() == _lib.ABI_VERSION == 1


def test_device_count_never_fails(dll):
    count = tropical.device_count()
    assert count >= 0
    if "TROPICAL_TEST_EXPECT_GPU" not in os.environ:
        assert count == 0 or os.path.exists("/dev/nvidiactl")


@pytest.mark.parametrize("kwargs,status,words", [
    (dict(semiring=9), INVALID, "not a tropical_semiring"),
    (dict(dtype=-1), INVALID, "not a tropical_dtype"),
    (dict(ta=2), INVALID, "not a tropical_trans"),
    (dict(semiring=5), NOT_IN_CATALOG, "no gemm for andor over f32"),
    (dict(m=-1), INVALID, "negative size"),
    (dict(lda=1), INVALID, "leading dimension lda = 1"),
    (dict(a=0), INVALID, "A is null"),
    (dict(c=0), INVALID, "C is null"),
    (dict(m=1 << 62, lda=1 << 62), INVALID, "overflow"),
])
def test_bad_arguments_return_a_status_and_a_message(dll, kwargs, status, words):
    assert cpu_gemm(dll, **kwargs) == status
    assert words in message(dll)


def test_a_successful_call_clears_the_message(dll):
    assert cpu_gemm(dll, m=-1) == INVALID
    assert message(dll) != ""
    assert cpu_gemm(dll) == OK
    assert message(dll) == ""


def test_the_message_belongs_to_the_failing_thread(dll):
    assert cpu_gemm(dll, m=-1) == INVALID
    seen = []
    thread = threading.Thread(target=lambda: seen.append(message(dll)))
    thread.start()
    thread.join(10)
    assert seen == [""]
    assert "negative size" in message(dll)


def test_in_place_product_is_refused(dll):
    buf = (ctypes.c_double * 16)()
    assert cpu_gemm(dll, a=ctypes.addressof(buf), c=ctypes.addressof(buf)) == INVALID
    assert "must not overlap" in message(dll)


def test_gpu_call_on_host_memory_is_a_clear_error(dll):
    a = np.ones((2, 2), np.float32)
    c = np.empty((2, 2), np.float32)
    p = a.ctypes.data
    status = dll.tropical_gemm(0, 0, 0, 0, 2, 2, 2, None, p, 2, p, 2, None, c.ctypes.data, 2, None)
    text = message(dll)
    if tropical.device_count() == 0:
        assert status in (UNAVAILABLE, INVALID), text
    else:
        assert status == INVALID
        assert "not memory of a CUDA device" in text
    assert text.startswith("tropical:")


def test_backward_of_a_semiring_without_one_is_not_in_catalog(dll):
    buf = (ctypes.c_float * 16)()
    p = ctypes.addressof(buf)
    status = dll.tropical_cpu_backward_a(3, 0, 0, 0, 2, 2, 2, p, 2, p, 2, p, 2, p + 32, 2)
    assert status == NOT_IN_CATALOG
    assert "backward_a for maxmin" in message(dll)


def test_catalog_queries_agree_with_names(dll):
    names = tropical.kernels()
    assert len(names) == dll.tropical_kernel_count() > 100
    kid = ctypes.c_uint32()
    for i in (0, len(names) // 2, len(names) - 1):
        assert dll.tropical_kernel_id(names[i].encode(), ctypes.byref(kid)) == OK
        assert kid.value == i
    assert dll.tropical_kernel_name(len(names)) is None
    assert dll.tropical_kernel_id(b"tropical_gemm_plustimes_f32", ctypes.byref(kid)) == NOT_IN_CATALOG
    assert "no kernel named" in message(dll)
    for s, semiring in enumerate(tropical.SEMIRINGS):
        for dtype, t in _lib.DTYPES.items():
            for op, o in _lib.OPS.items():
                short = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "uint8": "u8",
                         "int16": "i16"}[dtype]
                expect = f"tropical_{op}_{semiring}_{short}" in names
                assert tropical.has_kernel(semiring, dtype, op) == expect, (semiring, dtype, op)
                assert bool(dll.tropical_cpu_has_kernel(s, t, o)) == expect
                status = dll.tropical_find_kernel(s, t, o, ctypes.byref(kid))
                assert status == (OK if expect else NOT_IN_CATALOG)
                if expect:
                    assert names[kid.value] == f"tropical_{op}_{semiring}_{short}"
    assert tropical.has_kernel("maxplus", "float32", "gemm")
    assert not tropical.has_kernel("andor", "float32", "gemm")
    assert dll.tropical_find_kernel(0, 0, 0, None) == INVALID


def test_warm_rejects_bad_ids_and_compiles_a_cheap_kernel(dll):
    bad = (ctypes.c_uint32 * 1)(dll.tropical_kernel_count())
    assert dll.tropical_warm(bad, 1, 90, 1, None, None) == INVALID
    assert "is not below" in message(dll)
    with pytest.raises(tropical.NotInCatalog, match="no kernel named"):
        tropical.warm("tropical_nothing")
    # A backward kernel: the cheapest compile of the catalog (NVRTC runs on the CPU, no GPU needed).
    compiled, ready = tropical.warm(["tropical_backward_a_maxplus_f32"], arch=90, threads=1)
    assert compiled + ready == 1
    assert tropical.warm(["tropical_backward_a_maxplus_f32"], arch=90) == (0, 1)


def loaded_library():
    """The file of the libtropical this process loaded (the build's, or an installed package's own)."""
    return _lib.path()


def test_only_tropical_symbols_are_exported():
    library = loaded_library()
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (apt-get install binutils)")
    out = subprocess.run([nm, "-D", "--defined-only", "-C", library], capture_output=True, text=True, check=True)
    names = [line.split(" ", 2)[2] for line in out.stdout.splitlines() if line.count(" ") >= 2]
    foreign = [n for n in names if not n.startswith("tropical_") and "tropical::" not in n]
    assert foreign == []
    assert "tropical_gemm" in names and "tropical_last_error" in names


def test_a_c99_program_builds_against_the_header_and_runs(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    library = loaded_library()
    if cc is None:
        pytest.skip("needs a C compiler")
    exe = tmp_path / "maxplus"
    libdir = os.path.dirname(os.path.abspath(library))
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", os.path.join(SOURCE, "include"),
                    os.path.join(SOURCE, "examples", "c", "maxplus.c"), "-o", str(exe), library,
                    "-Wl,-rpath," + libdir], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "C = [4 4; 7 7]" in out.stdout


def test_cpu_threads_and_isa():
    assert tropical.cpu_isa() in ("avx512", "avx2", "sse4", "scalar", "avx3", "avx3_zen4", "avx3_spr", "neon", "sve",
                                  "sve2") or tropical.cpu_isa()
    with pytest.raises(tropical.InvalidArgument):
        tropical.set_cpu_threads(-1)
    tropical.set_cpu_threads(1)
    assert tropical.cpu_threads() == 1
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
    one = tropical.matmul(a, a)
    tropical.set_cpu_threads(0)
    assert tropical.cpu_threads() >= 1
    np.testing.assert_array_equal(tropical.matmul(a, a), one)
