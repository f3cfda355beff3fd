"""`pto.launch`'s memo of the last planned launch (pypto.compiler `_LAST`): the very same argument
objects reuse the plan without building its key, and every check the key stands for still
runs — a freed tensor, a changed PYPTO_RACE_CHECK / PYPTO_VALIDATE, another argument object, a
cleared cache, a changed module constant (docs/interpreter.md#fixed-cost-of-a-launch)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.compiler import CompiledKernel
from pypto.errors import TensorFreedError

FACTOR = 2.0


@pto.kernel
def scale(o, n, k):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(o + i) * k)


@pto.kernel
def scale_by_module_constant(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(o + i) * FACTOR)


def _tensor(values: np.ndarray) -> pto.Tensor:
    t = pto.alloc_tensor(values.nbytes, dtype=values.dtype)
    pto.memcpy_h2d(t, values)
    return t


def _host(t: pto.Tensor) -> np.ndarray:
    out = np.empty(t.size, np.float32)
    pto.memcpy_d2h(out, t)
    return out


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[CompiledKernel]:
    """The compiled kernels launches ran, in order."""
    seen: list[CompiledKernel] = []
    execute = CompiledKernel.execute

    def recorded(self, grid, block, args, backend=None):
        seen.append(self)
        execute(self, grid, block, args, backend)

    monkeypatch.setattr(CompiledKernel, "execute", recorded)
    return seen


def test_the_same_arguments_reuse_the_plan_and_another_object_takes_the_key(ran):
    d = _tensor(np.ones(64, np.float32))
    args = (d, 64, 2.0)
    for _ in range(3):
        pto.launch(scale, grid=1, block=64, args=args)
    pto.launch(scale, grid=1, block=64, args=(d, 64, 3.0))  # another float: the same plan
    pto.launch(scale, grid=1, block=64, args=(d, 32, 2.0))  # another n: only half the lanes
    pto.sync()
    assert len({id(c) for c in ran}) == 1
    expected = np.full(64, 2.0 ** 3 * 3.0, np.float32)
    expected[:32] *= 2.0
    assert np.array_equal(_host(d), expected)


def test_a_tensor_freed_after_a_memoised_launch_raises_at_the_launch():
    d = _tensor(np.ones(64, np.float32))
    args = (d, 64, 2.0)
    for _ in range(2):
        pto.launch(scale, grid=1, block=64, args=args)
    pto.sync()
    d.free()
    with pytest.raises(TensorFreedError, match="argument 0"):
        pto.launch(scale, grid=1, block=64, args=args)


def test_settings_changed_between_memoised_launches_pick_their_specialisation(
        ran, monkeypatch: pytest.MonkeyPatch):
    d = _tensor(np.ones(64, np.float32))
    args = (d, 64, 2.0)
    monkeypatch.delenv("PYPTO_VALIDATE", raising=False)
    steps = [("PYPTO_RACE_CHECK", "0"), ("PYPTO_RACE_CHECK", "1"),
             ("PYPTO_VALIDATE", "canonicalize"), ("PYPTO_VALIDATE", "0"),
             ("PYPTO_RACE_CHECK", "0")]
    for name, value in steps:
        monkeypatch.setenv(name, value)
        for _ in range(2):
            pto.launch(scale, grid=1, block=64, args=args)
    pto.sync()
    prepended = [c.pipeline.startswith("canonicalize,") for c in ran]
    assert prepended == [False] * 4 + [True] * 2 + [False] * 4
    ids = [id(c) for c in ran]  # one specialisation per (race check, validate) pair
    assert ids[0] == ids[1] == ids[8] == ids[9] and ids[2] == ids[3] == ids[6] == ids[7]
    assert len({ids[0], ids[2], ids[4]}) == 3
    assert np.array_equal(_host(d), np.full(64, 2.0 ** 10, np.float32))


def test_clear_cache_and_a_changed_module_constant_compile_again(ran):
    global FACTOR
    d = _tensor(np.ones(64, np.float32))
    args = (d, 64)
    try:
        for factor in (2.0, 2.0, 3.0, 3.0):
            FACTOR = factor
            pto.launch(scale_by_module_constant, grid=1, block=64, args=args)
        scale_by_module_constant.clear_cache()
        pto.launch(scale_by_module_constant, grid=1, block=64, args=args)
        pto.sync()
    finally:
        FACTOR = 2.0
    ids = [id(c) for c in ran]
    assert ids[0] == ids[1] != ids[2] == ids[3] != ids[4]
    assert np.array_equal(_host(d), np.full(64, 2.0 * 2.0 * 3.0 * 3.0 * 3.0, np.float32))


def test_the_memo_does_not_keep_a_dropped_tensor_alive():
    """The memo holds its tensors weakly: a tensor the program drops after its launches is
    freed (its device memory released) as without the memo, and a new tensor that happens to
    get the dropped one's id is not mistaken for it."""
    import gc
    import weakref

    d = _tensor(np.ones(64, np.float32))
    watch = weakref.ref(d)
    for _ in range(2):
        pto.launch(scale, grid=1, block=64, args=(d, 64, 2.0))
    pto.sync()
    del d
    gc.collect()
    assert watch() is None
    e = _tensor(np.ones(64, np.float32))  # (may reuse the freed tensor's id)
    for _ in range(2):
        pto.launch(scale, grid=1, block=64, args=(e, 64, 2.0))
    pto.sync()
    assert np.array_equal(_host(e), np.full(64, 4.0, np.float32))
