"""The runtime under load (issue 9): several streams fed from several host threads, 10^4 small
launches, tensors filling the device, one failing kernel among good ones, torn reads, and Ctrl-C
in the middle of a long kernel. Real kernels (compiled and interpreted), results against NumPy."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import pypto as pto
from pypto.backend.targets import default_target
from pypto.runtime import Device


@pto.kernel
def add_scalar(o, v, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(o + i) + v)


@pto.kernel
def fill_value(o, v, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, v)


@pto.kernel
def past_the_end(o, n):
    pto.store(o + pto.get_global_id() + n, 1.0)


def _upload(values: np.ndarray, device: Device | None = None) -> pto.Tensor:
    t = pto.alloc_tensor(values.nbytes, values.dtype, device=device)
    pto.memcpy_h2d(t, values)
    return t


def _download(t: pto.Tensor) -> np.ndarray:
    out = np.empty(t.size, t.dtype.np_dtype)
    pto.memcpy_d2h(out, t)
    return out


def test_streams_fed_from_threads_each_compute_their_own_result():
    threads, launches, n = 6, 40, 96
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            stream = pto.Stream()
            t = _upload(np.zeros(n, np.float32))
            for step in range(launches):
                pto.launch(add_scalar, grid=2, block=64, args=(t, float(k + 1), n),
                           stream=stream)
                if step % 10 == 9:
                    stream.synchronize()
            results[k] = _download(t)
            t.free()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(120)
    assert not errors, errors
    for k in range(threads):
        assert np.array_equal(results[k], np.full(n, launches * (k + 1), np.float32)), k


def test_ten_thousand_small_launches():
    t = _upload(np.zeros(32, np.int32))
    for _ in range(10_000):
        pto.launch(add_scalar, grid=1, block=32, args=(t, 1, 32))
    assert np.array_equal(_download(t), np.full(32, 10_000, np.int32))
    t.free()


def test_tensors_near_device_capacity():
    target = dataclasses.replace(default_target(), name="small", hbm_bytes=1 << 20)
    device = Device(target)
    quarter = (1 << 20) // 4
    tensors = [pto.alloc_tensor(quarter, device=device) for _ in range(4)]
    assert device.free_bytes == 0
    with pytest.raises(pto.DeviceOutOfMemoryError):
        pto.alloc_tensor(4, device=device)
    n = quarter // 4
    for k, t in enumerate(tensors):
        pto.launch(fill_value, grid=(n + 255) // 256, block=256, args=(t, float(k), n))
    for k, t in enumerate(tensors):
        assert np.array_equal(_download(t), np.full(n, k, np.float32))
    tensors[0].free()
    again = pto.alloc_tensor(quarter, device=device)  # the freed quarter is usable again
    pto.launch(fill_value, grid=(n + 255) // 256, block=256, args=(again, 7.0, n))
    assert np.array_equal(_download(again), np.full(n, 7, np.float32))
    for t in (*tensors[1:], again):
        t.free()
    assert device.used_bytes == 0


def test_one_failing_kernel_surfaces_once_and_other_streams_keep_their_results():
    good_streams = [pto.Stream() for _ in range(3)]
    bad_stream = pto.Stream()
    goods = [_upload(np.zeros(64, np.float32)) for _ in good_streams]
    bad = _upload(np.zeros(64, np.float32))
    for k, (stream, t) in enumerate(zip(good_streams, goods)):
        pto.launch(add_scalar, grid=1, block=64, args=(t, 1.0, 64), stream=stream)
    pto.launch(past_the_end, grid=1, block=64, args=(bad, 64), stream=bad_stream)
    pto.launch(add_scalar, grid=1, block=64, args=(bad, 1.0, 64), stream=bad_stream)  # dropped
    for k, (stream, t) in enumerate(zip(good_streams, goods)):
        pto.launch(add_scalar, grid=1, block=64, args=(t, float(k), 64), stream=stream)
    with pytest.raises(pto.MemoryAccessError) as info:
        pto.sync()
    assert "past_the_end" in str(info.value)
    assert any("1 later operation(s)" in note for note in info.value.__notes__)
    pto.sync()  # surfaced once: the next sync is clean
    for k, t in enumerate(goods):
        assert np.array_equal(_download(t), np.full(64, 1.0 + k, np.float32))
    assert np.all(np.isnan(_download(bad)) | (_download(bad) == 0))  # the dropped add never ran
    pto.launch(add_scalar, grid=1, block=64, args=(bad, 2.0, 64), stream=bad_stream)
    assert np.array_equal(_download(bad), np.full(64, 2.0, np.float32))  # the stream is usable


def test_memcpy_d2h_never_sees_a_kernel_half_way():
    """A reader thread copies while a writer thread launches whole-tensor fills and syncs: every
    snapshot must hold one launch's value everywhere (no torn reads)."""
    n = 4096
    t = _upload(np.zeros(n, np.float32))
    stop = threading.Event()
    torn: list[np.ndarray] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            k = 0
            while not stop.is_set():
                k += 1
                pto.launch(fill_value, grid=n // 256, block=256, args=(t, float(k), n))
                pto.sync()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    th = threading.Thread(target=writer)
    th.start()
    try:
        for _ in range(300):
            snapshot = _download(t)
            if not (snapshot == snapshot[0]).all():
                torn.append(snapshot)
    finally:
        stop.set()
        th.join(60)
    assert not errors and not torn, (errors, len(torn))
