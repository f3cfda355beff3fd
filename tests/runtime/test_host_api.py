"""The NumPy-friendly host API (docs/runtime.md#api): pto.tensor / empty / zeros, t.shape, t.dtype,
t.numpy(), kernel[grid, block](*args), NumPy arrays as launch arguments; checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto


@pto.kernel
def axpy(a, x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, a * pto.load(x + i) + pto.load(y + i))


@pto.kernel
def scale_in_place(x, s, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(x + i, pto.load(x + i) * s)


@pto.kernel
def add_one_int(x, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(x + i, pto.load(x + i) + 1)


def _data(n, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def test_tensor_from_array_keeps_shape_dtype_and_contents():
    host = _data(24).reshape(2, 3, 4)
    t = pto.tensor(host)
    assert t.shape == (2, 3, 4) and t.ndim == 3
    assert t.dtype == pto.float32 and t.size == 24 and t.nbytes == 96
    out = t.numpy()
    assert out.shape == (2, 3, 4) and out.dtype == np.float32
    assert np.array_equal(out, host)
    assert out is not host


def test_tensor_snapshots_the_array_like_memcpy_h2d():
    host = np.arange(8, dtype=np.int32)
    t = pto.tensor(host)
    host[:] = -1  # modifying the host array after the call does not change the device copy
    assert np.array_equal(t.numpy(), np.arange(8, dtype=np.int32))


def test_tensor_dtype_conversion_and_python_lists():
    t = pto.tensor([1, 2, 3], dtype=pto.float16)
    assert t.dtype == pto.float16
    assert np.array_equal(t.numpy(), np.array([1, 2, 3], np.float16))
    assert pto.tensor([1.5, 2.5]).dtype.name == "float64"  # np.asarray's dtype, as CuPy


def test_empty_is_poisoned_and_zeros_is_zero():
    e = pto.empty((3, 5), np.float32)
    assert e.shape == (3, 5)
    assert np.isnan(e.numpy()).all()  # uninitialised memory is NaN, never plausible zeros
    z = pto.zeros((3, 5), pto.int32)
    assert z.shape == (3, 5) and z.dtype == pto.int32
    assert np.array_equal(z.numpy(), np.zeros((3, 5), np.int32))
    assert pto.zeros(7).shape == (7,) and pto.zeros(7).dtype == pto.float32


def test_byte_tensors_keep_their_flat_shape():
    t = pto.alloc_tensor(64)
    assert t.shape == (16,)
    pto.memcpy_h2d(t, np.arange(16, dtype=np.float32))
    assert np.array_equal(t.numpy(), np.arange(16, dtype=np.float32))


@pytest.mark.parametrize("bad, match", [
    (0, "positive"), ((2, 0), "positive"), ((2, -1), "positive"), (2.5, "int"), ((True,), "int"),
])
def test_bad_shapes_are_usage_errors(bad, match):
    with pytest.raises(pto.UsageError, match=match):
        pto.empty(bad)


def test_tensor_of_unsupported_or_empty_arrays():
    with pytest.raises(pto.UsageError, match="not supported"):
        pto.tensor(np.zeros(4, np.uint8))
    with pytest.raises(pto.UsageError, match="empty"):
        pto.tensor(np.zeros(0, np.float32))
    with pytest.raises(pto.UsageError, match="already a device tensor"):
        pto.tensor(pto.zeros(4))


def test_numpy_waits_for_the_kernel():
    n = 1000
    x, y = _data(n, seed=1), _data(n, seed=2)
    tx, ty, to = pto.tensor(x), pto.tensor(y), pto.empty(n)
    axpy[(n + 255) // 256, 256](np.float32(2.0), tx, ty, to, n)
    assert np.array_equal(to.numpy(), np.float32(2.0) * x + y)


@pytest.mark.parametrize("grid", [4, (4,), (4, 1, 1), lambda meta: ((meta["n"] + 255) // 256,)])
def test_kernel_subscript_launch_grid_forms(grid):
    n = 1000
    x, y = _data(n, seed=3), _data(n, seed=4)
    to = pto.empty(n)
    axpy[grid, 256](1.5, pto.tensor(x), pto.tensor(y), to, n)
    assert np.array_equal(to.numpy(), np.float32(1.5) * x + y)


def test_grid_callable_receives_the_arguments_by_parameter_name():
    seen = {}

    def grid(meta):
        seen.update(meta)
        return 1

    x = pto.zeros(32)
    scale_in_place[grid, 32](x, 2.0, 32)
    pto.sync()
    assert set(seen) == {"x", "s", "n"} and seen["x"] is x and seen["n"] == 32


def test_kernel_subscript_on_a_stream_and_on_a_compiled_kernel():
    n = 64
    x = _data(n, seed=5)
    t = pto.tensor(x)
    s = pto.Stream()
    scale_in_place[1, 64, s](t, 3.0, n)
    s.synchronize()
    ck = pto.compile(scale_in_place, args=(t, 3.0, n), block=64)
    ck[1, 64](t, 3.0, n)
    assert np.array_equal(t.numpy(), x * np.float32(3.0) * np.float32(3.0))


def test_kernel_subscript_needs_grid_and_block():
    with pytest.raises(pto.LaunchError, match=r"\[grid, block\]"):
        scale_in_place[4]
    with pytest.raises(pto.LaunchError, match="grid"):
        scale_in_place[0, 32](pto.zeros(4), 1.0, 4)


def test_numpy_arrays_are_copied_in_and_back():
    n = 1000
    x, y = _data(n, seed=6), _data(n, seed=7)
    x0, y0 = x.copy(), y.copy()
    o = np.full(n, -7.0, np.float32)
    axpy[4, 256](2.0, x, y, o, n)  # synchronous: o holds the result on return
    assert np.array_equal(o, np.float32(2.0) * x0 + y0)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)


def test_numpy_arrays_in_pto_launch_and_in_place_update():
    x = np.arange(100, dtype=np.int32).reshape(10, 10)
    pto.launch(add_one_int, grid=1, block=128, args=(x, 100))
    assert np.array_equal(x, np.arange(100, dtype=np.int32).reshape(10, 10) + 1)


def test_numpy_array_views_get_the_result_back():
    base = np.zeros((8, 8), np.int32)
    view = base[:, 2]  # a strided view: written in place, the base sees it
    add_one_int[1, 32](view, 8)
    expected = np.zeros((8, 8), np.int32)
    expected[:, 2] = 1
    assert np.array_equal(base, expected)


def test_read_only_arrays_are_inputs_only():
    x = _data(64, seed=8)
    x.flags.writeable = False
    o = np.empty(64, np.float32)
    axpy[1, 64](1.0, x, np.zeros(64, np.float32), o, 64)
    assert np.array_equal(o, x)


def test_numpy_arrays_mixed_with_device_tensors():
    n = 256
    x, y = _data(n, seed=9), _data(n, seed=10)
    to = pto.empty(n)
    axpy[1, 256](0.5, x, pto.tensor(y), to, n)
    assert np.array_equal(to.numpy(), np.float32(0.5) * x + y)


def test_numpy_argument_errors_name_the_parameter():
    with pytest.raises(pto.LaunchError, match=r"argument 1 \(parameter 'x'\) is a NumPy uint8"):
        axpy[1, 32](1.0, np.zeros(32, np.uint8), np.zeros(32, np.float32),
                    np.zeros(32, np.float32), 32)
    with pytest.raises(pto.LaunchError, match=r"argument 4 \(parameter 'n'\) is a NumPy int8"):
        axpy[1, 32](1.0, pto.zeros(32), pto.zeros(32), pto.zeros(32), np.int8(32))
    with pytest.raises(pto.LaunchError, match=r"argument 0 \(parameter 'a'\) has unsupported "
                                              r"type str"):
        pto.launch(axpy, 1, 32, ("x", pto.zeros(32), pto.zeros(32), pto.zeros(32), 32))


def test_empty_numpy_argument_is_a_launch_error():
    with pytest.raises(pto.LaunchError, match=r"argument 0 \(parameter 'x'\) is an empty"):
        add_one_int[1, 32](np.zeros(0, np.int32), 0)


def test_kernel_error_with_numpy_arguments_raises_at_the_launch():
    x = np.zeros(16, np.float32)
    with pytest.raises(pto.MemoryAccessError):
        scale_in_place[1, 32](x, 2.0, 32)  # lanes 16..31 store past the 16-element array
    assert np.array_equal(x, np.zeros(16, np.float32))  # nothing is copied back after an error


def test_old_byte_api_still_works():
    n = 1024
    a, b = _data(n, seed=11), _data(n, seed=12)
    d_a, d_b, d_o = (pto.alloc_tensor(n * 4) for _ in range(3))
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    pto.launch(axpy, grid=(4, 1, 1), block=(256, 1, 1), args=(1.0, d_a, d_b, d_o, n))
    o = np.empty(n, np.float32)
    pto.memcpy_d2h(o, d_o)
    assert np.array_equal(o, a + b)
