"""Lifetime safety (the article's pitfall 2): queued launches keep their tensors alive."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from pypto.errors import DeviceUnavailableError, TensorFreedError
from pypto.runtime import (Device, Stream, Tensor, alloc_tensor, launch, memcpy_d2h, memcpy_h2d,
                           profile_on_npu, sync)


def test_del_right_after_launch_is_safe(fakes, small_device: Device) -> None:
    n = 64
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    d_a = alloc_tensor(n * 4, device=small_device)
    d_b = alloc_tensor(n * 4, device=small_device)
    d_o = alloc_tensor(n * 4, device=small_device)
    memcpy_h2d(d_a, a)
    memcpy_h2d(d_b, b)
    launch(fakes.add(), 1, n, (d_a, d_b, d_o))
    watch = weakref.ref(d_a)
    del d_a, d_b
    gc.collect()
    assert watch() is not None          # the queued launch still holds it
    assert small_device.used_bytes == 3 * n * 4
    sync()
    gc.collect()
    assert watch() is None              # released once the launch has run
    assert small_device.used_bytes == n * 4
    out = np.empty(n, np.float32)
    memcpy_d2h(out, d_o)
    np.testing.assert_array_equal(out, a + b)


def test_with_tensor_waits_for_the_kernels_that_use_it(fakes) -> None:
    n = 16
    result = alloc_tensor(n * 4)
    with Tensor(n * 4) as d_a:
        memcpy_h2d(d_a, np.arange(n, dtype=np.float32))
        launch(fakes.scale(), 1, n, (d_a, 3))
        launch(fakes.copy(), 1, n, (d_a, result))
        assert fakes.log == []
    assert fakes.log == ["scale", "copy"]
    assert d_a.freed
    np.testing.assert_array_equal(result.data, np.arange(n) * 3)


def test_free_waits_only_for_work_up_to_the_last_use(fakes) -> None:
    t, other = alloc_tensor(16), alloc_tensor(16)
    t.data[:] = 1
    other.data[:] = 1
    launch(fakes.scale("uses_t"), 1, 4, (t, 2))
    launch(fakes.scale("uses_other"), 1, 4, (other, 2))
    launch(fakes.copy("t_to_other"), 1, 4, (t, other))
    launch(fakes.scale("after"), 1, 4, (other, 5))
    t.free()
    assert fakes.log == ["uses_t", "uses_other", "t_to_other"]
    np.testing.assert_array_equal(other.data, 2.0)
    sync()
    assert fakes.log[-1] == "after"
    np.testing.assert_array_equal(other.data, 10.0)


def test_free_waits_on_every_stream_that_uses_the_tensor(fakes) -> None:
    s1, s2 = Stream(), Stream()
    t = alloc_tensor(16)
    t.data[:] = 1
    launch(fakes.scale("s1"), 1, 4, (t, 2), stream=s1)
    launch(fakes.scale("s2"), 1, 4, (t, 3), stream=s2)
    launch(fakes.kernel("unrelated", 0), 1, 32, (), stream=s2)
    t.free()
    assert fakes.log == ["s1", "s2"]
    assert s2.pending == 1


def test_launch_of_a_freed_tensor_raises(fakes) -> None:
    t = alloc_tensor(16)
    t.free()
    with pytest.raises(TensorFreedError, match="argument 0"):
        launch(fakes.scale(), 1, 4, (t, 2))


def test_dropping_every_reference_without_sync_still_completes(fakes) -> None:
    out = alloc_tensor(16)

    def producer() -> None:
        scratch = alloc_tensor(16)
        memcpy_h2d(scratch, np.array([4, 3, 2, 1], np.float32))
        launch(fakes.copy(), 1, 4, (scratch, out))
        # `scratch` goes out of scope here, with its copy and launch still queued.

    producer()
    gc.collect()
    host = np.empty(4, np.float32)
    memcpy_d2h(host, out)
    np.testing.assert_array_equal(host, [4, 3, 2, 1])


def test_profile_on_npu_is_unavailable_and_points_to_the_model(fakes) -> None:
    d = alloc_tensor(16)
    with pytest.raises(DeviceUnavailableError) as info:
        profile_on_npu(fakes.add("vector_add"), args=(d, d, d), grid=(4, 1, 1), block=(256, 1, 1))
    message = str(info.value)
    assert "no NPU backend is available" in message
    assert ('pto.profile(vector_add, grid=(4, 1, 1), block=(256, 1, 1), args=..., '
            'model="fused")') in message
    assert fakes.log == []  # it does not even run the kernel
