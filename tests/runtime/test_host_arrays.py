"""NumPy arrays at every entry point (docs/runtime.md#numpy-arrays): `pto.compile`,
`pto.profile`, the debugger's API and `pto.autotune` take them as a launch does: copied in as
device tensors of their dtype and shape, and copied back where the entry point runs the kernel.
Checked against NumPy."""

from __future__ import annotations

import io

import numpy as np
import pytest

import pypto as pto
import pypto.debug as dbg
from pypto.runtime.host_arrays import stage_host_arrays


@pto.kernel
def axpy(x, y, o, a, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(x + i) * a + pto.load(y + i))


def _inputs(n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32),
            np.zeros(n, np.float32))


def test_compile_takes_arrays_as_tensors_of_their_dtype() -> None:
    x, y, o = _inputs()
    ck = pto.compile(axpy, args=(x, y, o, 2.0, x.size), block=128)
    assert "!pto.ptr<f32, global>" in ck.mlir
    assert np.all(o == 0)  # compiling runs nothing: the arrays are untouched
    same = pto.compile(axpy, args=(pto.tensor(x), pto.tensor(y), pto.empty(x.size), 2.0,
                                   x.size), block=128)
    assert same.mlir == ck.mlir
    ck[3, 128](x, y, o, 2.0, x.size)  # the compiled kernel launches on arrays too
    assert np.array_equal(o, x * np.float32(2.0) + y)


def test_compile_names_an_array_of_a_dtype_no_tensor_holds() -> None:
    x, y, o = _inputs(8)
    with pytest.raises(pto.LaunchError, match=r"pto.compile of kernel 'axpy': argument 1 "
                       r"\(parameter 'y'\) is a NumPy complex64 array.*astype"):
        pto.compile(axpy, args=(x, y.astype(np.complex64), o, 2.0, 8), block=128)


def test_profile_runs_on_arrays_and_writes_the_output_back() -> None:
    x, y, o = _inputs()
    prof = pto.profile(axpy, grid=3, block=128, args=(x, y, o, 3.0, x.size))
    assert prof.total_cycles > 0
    assert np.array_equal(o, x * np.float32(3.0) + y)
    on_device = pto.profile(axpy, grid=3, block=128, args=(pto.tensor(x), pto.tensor(y),
                                                          pto.empty(x.size), 3.0, x.size))
    assert on_device.total_cycles == prof.total_cycles


def test_read_only_arrays_are_inputs_and_are_not_written() -> None:
    x, y, o = _inputs(64)
    x.flags.writeable = False
    pto.profile(axpy, grid=1, block=64, args=(x, y, o, 1.0, 64))
    assert np.array_equal(o, x + y)


def test_the_debugger_api_takes_arrays_and_copies_the_block_back_when_it_finishes() -> None:
    x, y, o = _inputs(256)
    session = dbg.debug_kernel(axpy, args=(x, y, o, 2.0, 256), grid=1, block=256,
                               out=io.StringIO())
    assert np.all(o == 0)  # paused before the first instruction: nothing copied back yet
    session.continue_()
    assert session.finished
    assert np.array_equal(o, x * np.float32(2.0) + y)


def test_the_same_array_twice_is_one_tensor_and_a_failed_run_copies_nothing() -> None:
    x, _, _ = _inputs(16)
    with stage_host_arrays((x, x, 1.0), entry="test") as staged:
        assert staged.args[0] is staged.args[1]
        assert isinstance(staged.args[0], pto.Tensor) and staged.args[0].shape == (16,)
    grid = np.ones((4, 4), np.float32)
    before = grid.copy()
    with pytest.raises(RuntimeError):
        with stage_host_arrays((grid,), entry="test") as staged:
            assert staged.args[0].shape == (4, 4)
            staged.args[0].data[...] = 5.0
            raise RuntimeError("the kernel failed")
    assert np.array_equal(grid, before) and staged.staged == []
