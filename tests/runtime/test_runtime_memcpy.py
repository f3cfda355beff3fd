"""memcpy_h2d / memcpy_d2h: round trips, layouts, mismatches, stream order, synchronisation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pypto.errors import MemoryAccessError, TensorFreedError
from pypto.runtime import alloc_tensor, launch, memcpy_d2h, memcpy_h2d


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32,
                                   np.int64, np.bool_])
def test_round_trip_every_dtype(dtype: object) -> None:
    rng = np.random.default_rng(0)
    src = (rng.standard_normal(37) * 100).astype(dtype)
    d = alloc_tensor(src.nbytes, dtype)
    memcpy_h2d(d, src)
    out = np.zeros_like(src)
    memcpy_d2h(out, d)
    np.testing.assert_array_equal(out, src)


def test_any_shape_is_flattened_in_c_order() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = alloc_tensor(a.nbytes)
    memcpy_h2d(d, a.T)  # a non-contiguous view: its C-order flattening is what lands on the device
    flat = np.empty(12, np.float32)
    memcpy_d2h(flat, d)
    np.testing.assert_array_equal(flat, a.T.ravel())
    grid = np.empty((4, 3), np.float32)
    memcpy_d2h(grid, d)
    np.testing.assert_array_equal(grid, a.T)


def test_d2h_fills_a_non_contiguous_destination_in_place() -> None:
    d = alloc_tensor(6 * 4)
    memcpy_h2d(d, np.arange(6, dtype=np.float32))
    big = np.full((3, 4), -1.0, np.float32)
    view = big[:, 1:3]  # 3x2 strided view into `big`
    memcpy_d2h(view, d)
    np.testing.assert_array_equal(big, [[-1, 0, 1, -1], [-1, 2, 3, -1], [-1, 4, 5, -1]])


def test_h2d_dtype_mismatch_names_both_sides() -> None:
    d = alloc_tensor(16)
    with pytest.raises(TypeError) as info:
        memcpy_h2d(d, np.zeros(4, np.float64))
    message = str(info.value)
    assert "pto.float32" in message and "float64" in message
    assert "dst" in message and "src" in message
    assert ".astype(np.float32)" in message


def test_d2h_dtype_mismatch_names_both_sides() -> None:
    d = alloc_tensor(16, np.int32)
    with pytest.raises(TypeError) as info:
        memcpy_d2h(np.zeros(4, np.float32), d)
    message = str(info.value)
    assert "pto.int32" in message and "float32" in message
    assert "dtype=np.int32" in message


def test_h2d_size_mismatch_names_both_sides() -> None:
    d = alloc_tensor(16)
    with pytest.raises(ValueError) as info:
        memcpy_h2d(d, np.zeros(5, np.float32))
    message = str(info.value)
    assert "holds 4" in message and "(16 bytes)" in message
    assert "has 5 elements" in message and "20 bytes" in message


def test_d2h_size_mismatch_names_both_sides() -> None:
    d = alloc_tensor(16)
    with pytest.raises(ValueError) as info:
        memcpy_d2h(np.zeros((2, 3), np.float32), d)
    message = str(info.value)
    assert "holds 4" in message and "has 6 elements" in message and "(2, 3)" in message


def test_mismatch_leaves_the_device_untouched() -> None:
    d = alloc_tensor(16)
    with pytest.raises(ValueError):
        memcpy_h2d(d, np.zeros(5, np.float32))
    assert np.isnan(d.data).all()


def test_d2h_rejects_a_read_only_destination() -> None:
    d = alloc_tensor(16)
    dst = np.zeros(4, np.float32)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        memcpy_d2h(dst, d)


def test_swapped_arguments_point_at_the_order() -> None:
    d = alloc_tensor(16)
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"memcpy_h2d\(dst, src\)"):
        memcpy_h2d(a, d)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"memcpy_d2h\(dst, src\)"):
        memcpy_d2h(d, a)  # type: ignore[arg-type]


def test_host_side_must_be_a_numpy_array() -> None:
    d = alloc_tensor(16)
    with pytest.raises(TypeError, match="np.asarray"):
        memcpy_h2d(d, [1.0, 2.0, 3.0, 4.0])  # type: ignore[arg-type]


def test_memcpy_of_a_freed_tensor_raises() -> None:
    d = alloc_tensor(16)
    d.free()
    with pytest.raises(TensorFreedError, match="memcpy_h2d: dst"):
        memcpy_h2d(d, np.zeros(4, np.float32))
    with pytest.raises(TensorFreedError, match="memcpy_d2h: src"):
        memcpy_d2h(np.zeros(4, np.float32), d)


def test_h2d_snapshots_the_host_array() -> None:
    """The host array may be reused as soon as memcpy_h2d returns (stream-ordered copy)."""
    a = np.arange(4, dtype=np.float32)
    d = alloc_tensor(16)
    memcpy_h2d(d, a)
    a[:] = 99
    out = np.empty(4, np.float32)
    memcpy_d2h(out, d)
    np.testing.assert_array_equal(out, [0, 1, 2, 3])


def test_h2d_does_not_overtake_an_earlier_launch(fakes) -> None:
    """A copy enqueued after a launch must not change what that launch reads."""
    d_a, d_b = alloc_tensor(16), alloc_tensor(16)
    first, second = np.arange(4, dtype=np.float32), np.full(4, 7.0, np.float32)
    memcpy_h2d(d_a, first)
    launch(fakes.copy(), 1, 4, (d_a, d_b))
    memcpy_h2d(d_a, second)
    assert fakes.log == []
    out_a, out_b = np.empty(4, np.float32), np.empty(4, np.float32)
    memcpy_d2h(out_b, d_b)
    memcpy_d2h(out_a, d_a)
    np.testing.assert_array_equal(out_b, first)
    np.testing.assert_array_equal(out_a, second)


def test_d2h_waits_for_pending_kernels(fakes) -> None:
    d_a, d_b, d_o = alloc_tensor(16), alloc_tensor(16), alloc_tensor(16)
    memcpy_h2d(d_a, np.arange(4, dtype=np.float32))
    memcpy_h2d(d_b, np.full(4, 10.0, np.float32))
    launch(fakes.add(), 1, 4, (d_a, d_b, d_o))
    out = np.empty(4, np.float32)
    memcpy_d2h(out, d_o)
    assert fakes.log == ["add"]
    np.testing.assert_array_equal(out, [10, 11, 12, 13])


def test_d2h_surfaces_a_pending_kernel_error_and_copies_nothing(fakes) -> None:
    d = alloc_tensor(16)
    memcpy_h2d(d, np.ones(4, np.float32))
    launch(fakes.out_of_bounds(), 1, 32, (d,))
    out = np.full(4, -5.0, np.float32)
    with pytest.raises(MemoryAccessError, match="in kernel 'oob'"):
        memcpy_d2h(out, d)
    np.testing.assert_array_equal(out, -5.0)
    # The error was consumed: the next copy works.
    memcpy_d2h(out, d)
    np.testing.assert_array_equal(out, 1.0)
