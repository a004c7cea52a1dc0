"""tropical on CuPy arrays and on device arrays of other frameworks through DLPack and
__cuda_array_interface__: results are CuPy arrays over the same memory (no copies). Skips without CuPy or a GPU."""

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
import tropical  # noqa: E402

if tropical.device_count() == 0:
    pytest.skip("no CUDA device", allow_module_level=True)


def test_cupy_product_equals_the_cpu_path_and_writes_in_place():
    rng = np.random.default_rng(0)
    a = (rng.integers(-8, 8, (65, 33)) / 2).astype(np.float32)
    b = (rng.integers(-8, 8, (33, 17)) / 2).astype(np.float32)
    da, db = cupy.asarray(a), cupy.asarray(b)
    c, arg = tropical.matmul_argmax(da, db, "maxplus")
    assert isinstance(c, cupy.ndarray)
    expect_c, expect_arg = tropical.matmul_argmax(a, b, "maxplus")
    assert np.array_equal(cupy.asnumpy(c), expect_c) and np.array_equal(cupy.asnumpy(arg), expect_arg)
    out = cupy.empty((65, 17), cupy.float32)
    assert tropical.matmul(cupy.asfortranarray(da), db, out=out) is out
    assert np.array_equal(cupy.asnumpy(out), expect_c)


def test_foreign_device_arrays_are_viewed_without_a_copy():
    torch = pytest.importorskip("torch")
    x = torch.randn(8, 8, device="cuda")

    class DLPackOnly:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    class InterfaceOnly:
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    for wrapped in (DLPackOnly(x), InterfaceOnly(x)):
        view = tropical._arrays.describe(wrapped, "a")
        assert view.kind == "cupy" and view.ptr == x.data_ptr()
        c = tropical.matmul(wrapped, wrapped)
        assert isinstance(c, cupy.ndarray)
        assert np.array_equal(cupy.asnumpy(c), tropical.matmul(x.cpu().numpy(), x.cpu().numpy()))


def test_jax_arrays_if_jax_is_there():
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX has no GPU here")
    import jax.numpy as jnp
    a = jax.device_put(jnp.arange(12, dtype=jnp.float32).reshape(3, 4), gpus[0])
    b = jax.device_put(jnp.ones((4, 2), jnp.float32), gpus[0])
    c = tropical.matmul(a, b)
    assert isinstance(c, cupy.ndarray)
    assert np.array_equal(cupy.asnumpy(c), tropical.matmul(np.asarray(a), np.asarray(b)))
