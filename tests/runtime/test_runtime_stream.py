"""The execution model: lazy in-order queues, synchronising calls, error surfacing, blocking mode."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.errors import KernelError, MemoryAccessError
from pypto.runtime import (Stream, Tensor, alloc_tensor, default_stream, launch, memcpy_d2h,
                           memcpy_h2d, sync)


def host_copy(t: Tensor) -> np.ndarray:
    out = np.empty(t.size, t.dtype.np_dtype)
    memcpy_d2h(out, t)
    return out


def test_nothing_runs_before_a_synchronising_call(fakes) -> None:
    d = alloc_tensor(16)
    memcpy_h2d(d, np.ones(4, np.float32))
    launch(fakes.scale(), 1, 4, (d, 3))
    assert fakes.log == []
    assert np.isnan(d.data).all()  # not even the copy has happened yet
    assert default_stream().pending == 2
    assert not default_stream().query()
    sync()
    assert fakes.log == ["scale"]
    assert default_stream().query()
    np.testing.assert_array_equal(d.data, 3.0)


def test_launches_and_copies_run_in_program_order(fakes) -> None:
    d = alloc_tensor(16)
    memcpy_h2d(d, np.full(4, 1.0, np.float32))
    launch(fakes.scale("times2"), 1, 4, (d, 2))
    launch(fakes.scale("times5"), 1, 4, (d, 5))
    memcpy_h2d(d, np.full(4, 3.0, np.float32))
    launch(fakes.scale("times7"), 1, 4, (d, 7))
    sync()
    assert fakes.log == ["times2", "times5", "times7"]
    np.testing.assert_array_equal(d.data, 21.0)  # (1*2*5 is overwritten by 3) * 7


def test_the_vector_add_program_of_the_article(fakes) -> None:
    n = 1024
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    d_a, d_b, d_o = alloc_tensor(n * 4), alloc_tensor(n * 4), alloc_tensor(n * 4)
    memcpy_h2d(d_a, a)
    memcpy_h2d(d_b, b)
    launch(fakes.add("vector_add"), grid=(4, 1, 1), block=(256, 1, 1), args=(d_a, d_b, d_o))
    o = np.empty(n, np.float32)
    memcpy_d2h(o, d_o)
    np.testing.assert_array_equal(o, a + b)


def test_stream_synchronize_runs_only_that_stream(fakes) -> None:
    s1, s2 = Stream(name="s1"), Stream(name="s2")
    x, y = alloc_tensor(16), alloc_tensor(16)
    launch(fakes.kernel("on_s1", 1), 1, 32, (x,), stream=s1)
    launch(fakes.kernel("on_s2", 1), 1, 32, (y,), stream=s2)
    s2.synchronize()
    assert fakes.log == ["on_s2"]
    assert s1.pending == 1 and s2.pending == 0
    sync()
    assert fakes.log == ["on_s2", "on_s1"]


def test_sync_runs_all_streams_in_enqueue_order(fakes) -> None:
    s1, s2 = Stream(), Stream()
    for i in range(3):
        launch(fakes.kernel(f"a{i}", 0), 1, 32, (), stream=s1)
        launch(fakes.kernel(f"b{i}", 0), 1, 32, (), stream=s2)
    sync()
    assert fakes.log == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_work_on_a_dropped_stream_still_runs(fakes) -> None:
    d = alloc_tensor(16)
    d.data[:] = 1
    stream = Stream()
    launch(fakes.scale(), 1, 4, (d, 4), stream=stream)
    del stream
    sync()
    np.testing.assert_array_equal(d.data, 4.0)


def test_stream_repr_counts_pending_work(fakes) -> None:
    s = Stream(name="mine")
    launch(fakes.kernel("k", 0), 1, 32, (), stream=s)
    assert repr(s) == "<pto.Stream 'mine' on 'pto-default', 1 pending>"


# -- errors ----------------------------------------------------------------------------------------

def test_kernel_error_surfaces_at_sync_not_at_launch(fakes) -> None:
    d = alloc_tensor(16)
    launch(fakes.out_of_bounds(), 1, 32, (d,))  # line of the launch, named in the error note
    with pytest.raises(MemoryAccessError) as info:
        sync()
    error = info.value
    assert isinstance(error, KernelError)
    assert "kern.py:7: in kernel 'oob'" in str(error)
    notes = "\n".join(error.__notes__)
    assert "launch of kernel 'oob'" in notes
    assert "test_runtime_stream.py:" in notes
    assert "surfaced at pto.sync()" in notes
    assert "PYPTO_LAUNCH_BLOCKING=1" in notes


def test_error_discards_the_rest_of_its_stream_and_says_how_much(fakes) -> None:
    d = alloc_tensor(16)
    d.data[:] = 1
    launch(fakes.scale("before"), 1, 4, (d, 2))
    launch(fakes.out_of_bounds(), 1, 32, (d,))
    launch(fakes.scale("after1"), 1, 4, (d, 3))
    memcpy_h2d(d, np.zeros(4, np.float32))
    launch(fakes.scale("after2"), 1, 4, (d, 5))
    with pytest.raises(MemoryAccessError) as info:
        sync()
    assert fakes.log == ["before", "oob"]
    assert info.value.discarded_ops == 3
    assert any("3 later operation(s)" in note and "discarded" in note
               for note in info.value.__notes__)
    np.testing.assert_array_equal(d.data, 2.0)
    # The error is reported once; the stream is usable afterwards.
    sync()
    launch(fakes.scale("again"), 1, 4, (d, 10))
    sync()
    assert fakes.log[-1] == "again"
    np.testing.assert_array_equal(d.data, 20.0)


def test_an_error_on_one_stream_does_not_discard_another_stream(fakes) -> None:
    bad, good = Stream(name="bad"), Stream(name="good")
    d = alloc_tensor(16)
    d.data[:] = 1
    launch(fakes.out_of_bounds(), 1, 32, (d,), stream=bad)
    launch(fakes.kernel("dropped", 0), 1, 32, (), stream=bad)
    launch(fakes.scale("kept"), 1, 4, (d, 6), stream=good)
    with pytest.raises(MemoryAccessError) as info:
        sync()
    assert fakes.log == ["oob", "kept"]
    assert info.value.discarded_ops == 1
    np.testing.assert_array_equal(d.data, 6.0)


def test_errors_of_several_streams_are_all_reported(fakes) -> None:
    s1, s2 = Stream(), Stream()
    launch(fakes.out_of_bounds("first"), 1, 32, (1,), stream=s1)
    launch(fakes.crashing("second"), 1, 32, (1,), stream=s2)
    with pytest.raises(MemoryAccessError, match="'first'") as info:
        sync()
    assert any("another error" in n and "interpreter bug" in n for n in info.value.__notes__)


def test_non_kernel_errors_are_not_swallowed(fakes) -> None:
    launch(fakes.crashing(), 1, 32, (1,))
    launch(fakes.kernel("later", 0), 1, 32, ())
    with pytest.raises(RuntimeError, match="interpreter bug") as info:
        sync()
    assert fakes.log == ["crash"]
    assert any("launch of kernel 'crash'" in note for note in info.value.__notes__)
    assert any("1 later operation(s)" in note for note in info.value.__notes__)


def test_kernel_error_surfaces_at_the_end_of_a_with_block(fakes) -> None:
    with pytest.raises(MemoryAccessError, match="'oob'") as info:
        with Tensor(16) as t:
            launch(fakes.out_of_bounds(), 1, 32, (t,))
            assert fakes.log == []
    assert t.freed  # the memory is released even though the kernel failed
    assert any("Tensor.free()" in note for note in info.value.__notes__)


def test_kernel_error_surfaces_at_free(fakes) -> None:
    t = alloc_tensor(16)
    launch(fakes.out_of_bounds(), 1, 32, (t,))
    with pytest.raises(MemoryAccessError):
        t.free()
    assert t.freed
    t.free()  # idempotent, and the error is not raised twice


def test_launch_blocking_raises_at_the_launch(fakes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_LAUNCH_BLOCKING", "1")
    d = alloc_tensor(16)
    with pytest.raises(MemoryAccessError) as info:
        launch(fakes.out_of_bounds(), 1, 32, (d,))
    assert any("pto.launch() (PYPTO_LAUNCH_BLOCKING=1)" in note for note in info.value.__notes__)
    assert fakes.log == ["oob"]
    sync()  # nothing left to report


def test_launch_blocking_runs_kernels_immediately(fakes, monkeypatch: pytest.MonkeyPatch) -> None:
    d = alloc_tensor(16)
    d.data[:] = 1
    launch(fakes.scale("queued"), 1, 4, (d, 2))
    monkeypatch.setenv("PYPTO_LAUNCH_BLOCKING", "1")  # read at every launch
    launch(fakes.scale("blocking"), 1, 4, (d, 3))
    # The blocking launch ran, after the work queued before it on the same stream.
    assert fakes.log == ["queued", "blocking"]
    np.testing.assert_array_equal(d.data, 6.0)
    memcpy_h2d(d, np.zeros(4, np.float32))
    np.testing.assert_array_equal(d.data, 0.0)


@pytest.mark.parametrize("value", ["0", "", "no"])
def test_launch_blocking_off_values(fakes, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PYPTO_LAUNCH_BLOCKING", value)
    launch(fakes.kernel("k", 0), 1, 32, ())
    assert fakes.log == []
    sync()
    assert fakes.log == ["k"]
