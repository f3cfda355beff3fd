"""Device tensors: allocation, poison, HBM accounting, OOM, free and use after free."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import pypto as pto
from pypto import dtypes
from pypto.errors import DeviceOutOfMemoryError, TensorFreedError
from pypto.runtime import Device, Tensor, alloc_tensor, default_device, poison_value


def test_alloc_tensor_attributes() -> None:
    t = alloc_tensor(64)
    assert isinstance(t, Tensor)
    assert t.dtype is dtypes.float32
    assert (t.nbytes, t.size, t.shape, t.itemsize) == (64, 16, (16,), 4)
    assert t.data.shape == (16,) and t.data.dtype == np.float32
    assert not t.freed
    assert t.device is default_device()


@pytest.mark.parametrize("dtype, expected", [
    (np.float32, dtypes.float32), ("int32", dtypes.int32), (dtypes.int64, dtypes.int64),
    (np.float16, dtypes.float16), (ml_dtypes.bfloat16, dtypes.bfloat16), (np.bool_, dtypes.bool_),
])
def test_dtype_accepts_numpy_and_pypto_spellings(dtype: object, expected: dtypes.DType) -> None:
    t = Tensor(8 * expected.itemsize, dtype)
    assert t.dtype is expected
    assert t.size == 8
    assert t.data.dtype == expected.np_dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_fresh_float_memory_is_nan(dtype: object) -> None:
    t = alloc_tensor(32 * np.dtype(dtype).itemsize, dtype)
    assert np.isnan(t.data.astype(np.float64)).all()


def test_fresh_int_memory_holds_the_badbad_pattern() -> None:
    t32 = alloc_tensor(16, np.int32)
    assert (t32.data == 0x7FBADBAD).all()
    t64 = alloc_tensor(16, np.int64)
    assert (t64.data == 0x7FBADBAD7FBADBAD).all()
    assert poison_value(np.int32) == 0x7FBADBAD
    assert alloc_tensor(4, np.bool_).data.all()


@pytest.mark.parametrize("nbytes", [0, -4, 6, 1])
def test_nbytes_must_be_a_positive_multiple_of_the_itemsize(nbytes: int) -> None:
    with pytest.raises(ValueError, match="nbytes"):
        alloc_tensor(nbytes)


@pytest.mark.parametrize("nbytes", [16.0, "16", True, None])
def test_nbytes_must_be_an_int(nbytes: object) -> None:
    with pytest.raises(TypeError, match="nbytes"):
        alloc_tensor(nbytes)  # type: ignore[arg-type]


def test_nbytes_accepts_numpy_ints() -> None:
    assert alloc_tensor(np.int64(12)).size == 3


def test_unsupported_dtype_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not supported"):
        alloc_tensor(16, np.complex64)


def test_accounting_follows_alloc_and_free(small_device: Device) -> None:
    assert small_device.used_bytes == 0
    a = Tensor(256, device=small_device)
    b = Tensor(512, np.int32, device=small_device)
    assert small_device.used_bytes == 768
    assert small_device.free_bytes == 1024 - 768
    a.free()
    assert small_device.used_bytes == 512
    b.free()
    assert small_device.used_bytes == 0


def test_garbage_collected_tensor_releases_its_memory(small_device: Device) -> None:
    t = Tensor(1024, device=small_device)
    assert small_device.used_bytes == 1024
    del t
    gc.collect()
    assert small_device.used_bytes == 0


def test_out_of_memory_says_in_use_requested_and_capacity(small_device: Device) -> None:
    keep = Tensor(768, device=small_device)
    with pytest.raises(DeviceOutOfMemoryError) as info:
        Tensor(512, device=small_device)
    message = str(info.value)
    assert "requested 512 bytes" in message
    assert "768 bytes in use" in message
    assert "capacity 1.0 KiB (1024 bytes)" in message
    assert "tiny" in message
    # The failed allocation charged nothing; after a free the same request fits.
    assert small_device.used_bytes == 768
    keep.free()
    assert Tensor(512, device=small_device).nbytes == 512


def test_exact_capacity_fits(small_device: Device) -> None:
    assert Tensor(1024, device=small_device).nbytes == 1024


def test_default_device_capacity_is_the_target_hbm() -> None:
    device = default_device()
    assert device.capacity_bytes == device.target.hbm_bytes
    # Rejected by the accounting before any host memory is touched.
    with pytest.raises(DeviceOutOfMemoryError, match="capacity 4.0 GiB"):
        alloc_tensor(device.target.hbm_bytes + 4)


def test_oom_collects_unreachable_cycles_before_failing(small_device: Device) -> None:
    holder: dict[str, object] = {"tensor": Tensor(1024, device=small_device)}
    holder["self"] = holder  # a reference cycle: only the cycle collector can reclaim it
    del holder
    assert Tensor(1024, device=small_device).nbytes == 1024


def test_free_is_idempotent_and_data_raises_afterwards(small_device: Device) -> None:
    t = Tensor(64, device=small_device)
    t.free()
    t.free()
    assert t.freed
    assert small_device.used_bytes == 0
    with pytest.raises(TensorFreedError, match="freed"):
        _ = t.data
    assert "freed" in repr(t)


def test_repr_names_dtype_size_and_device() -> None:
    t = alloc_tensor(40, np.int32)
    assert repr(t) == "<pto.Tensor pto.int32[10] (40 bytes) on 'pto-default'>"


def test_with_block_frees_on_exit(small_device: Device) -> None:
    with Tensor(128, device=small_device) as t:
        assert small_device.used_bytes == 128
        assert t.data.size == 32
    assert t.freed
    assert small_device.used_bytes == 0


def test_with_block_frees_when_the_body_raises(small_device: Device) -> None:
    with pytest.raises(KeyError):
        with Tensor(128, device=small_device) as t:
            raise KeyError("boom")
    assert t.freed
    assert small_device.used_bytes == 0


def test_entering_a_freed_tensor_raises() -> None:
    t = alloc_tensor(16)
    t.free()
    with pytest.raises(TensorFreedError):
        with t:
            pass


def test_repr_shows_the_host_shape_as_numpy_does() -> None:
    a = np.arange(64 * 50, dtype=np.float32).reshape(64, 50)
    t = pto.tensor(a)
    assert t.shape == a.shape and t.ndim == 2
    assert repr(t).startswith("<pto.Tensor pto.float32[64, 50] (12800 bytes) on 'pto-default'")
    assert np.array_equal(t.numpy(), a)
    assert repr(pto.empty((2, 3, 4), np.int32)).startswith("<pto.Tensor pto.int32[2, 3, 4] ")
