"""Batch mode's block-local fast paths against NumPy and the general path, on generated kernels.

Each example writes a small kernel (L1 staging, a branch on block-local ids or the warp number
that reads a shifted L1 address, a barrier, a mirrored read back), runs it with the fast paths
on and off, and checks: the same outcome both ways (the same bits, or the same error message)
and, when it ran, the result of a NumPy emulation of the kernel.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.profiles import examples

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.errors import KernelError

_COUNTER = itertools.count()

TEMPLATE = '''\
import pypto as pto


@pto.kernel
def gen(x, out, n):
    tid = pto.get_local_id()
    i = pto.get_global_id()
    buf = pto.alloc_local({block})
    v = 0.0
    if i < n:
        v = pto.load(x + i)
    pto.store(buf + tid, v)
    pto.barrier_block()
    acc = pto.load(buf + tid)
    if {cond}:
        acc = acc + pto.load(buf + tid + {shift}) * 2.0
    pto.barrier_block()
    pto.store(buf + tid, acc)
    pto.barrier_block()
    pto.store(out + i, pto.load(buf + ({block} - 1 - tid)))
'''

OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
       "==": np.equal, "!=": np.not_equal}


def _load(tmp: Path, source: str):
    path = tmp / f"gen_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.gen


def _emulate(x: np.ndarray, n: int, block: int, blocks: int, active: np.ndarray,
             shift: int) -> np.ndarray | None:
    """The kernel in NumPy, per block; None when an active lane reads outside the buffer."""
    xs = np.where(np.arange(blocks * block) < n, x, np.float32(0)).reshape(blocks, block)
    tid = np.arange(block)
    if ((tid + shift < 0) | (tid + shift >= block))[active].any():
        return None
    acc = xs.copy()
    src = np.clip(tid + shift, 0, block - 1)
    acc[:, active] = acc[:, active] + xs[:, src[active]] * np.float32(2.0)
    return acc[:, ::-1].reshape(-1)


def _run(kernel, grid, block, args):
    ck = pto.compile(kernel, args=args, block=(block, 1, 1))
    pto.launch(ck, grid=grid, block=block, args=args)
    pto.sync()


def _both_ways(kernel, grid: int, block: int, x: np.ndarray, out_size: int,
               n: int) -> list[tuple[str, object]]:
    """Run `kernel(x, out, n)` with the fast paths on, then off: ("ok", out) or ("error",
    message) for each."""
    saved = FAST_PATHS.on
    outcomes: list[tuple[str, object]] = []
    try:
        for on in (True, False):
            FAST_PATHS.on = on
            dx = pto.alloc_tensor(x.nbytes, dtype=np.float32)
            pto.memcpy_h2d(dx, x)
            out = np.zeros(out_size, np.float32)
            dout = pto.alloc_tensor(out.nbytes, dtype=np.float32)
            pto.memcpy_h2d(dout, out)
            try:
                _run(kernel, grid, block, (dx, dout, n))
                pto.memcpy_d2h(out, dout)
                outcomes.append(("ok", out))
            except KernelError as exc:
                outcomes.append(("error", str(exc)))
    finally:
        FAST_PATHS.on = saved
    return outcomes


def _check(outcomes: list[tuple[str, object]], expect: np.ndarray | None) -> None:
    """Both ways gave the same outcome, and it is the emulation's (None: an error)."""
    (kind_fast, fast), (kind_general, general) = outcomes
    assert kind_fast == kind_general
    if kind_fast == "error":
        assert fast == general and expect is None, fast
    else:
        assert np.array_equal(fast, general)
        assert expect is not None and np.array_equal(fast, expect)


@settings(max_examples=examples(12, 40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block=st.sampled_from([32, 64, 96, 128]), blocks=st.integers(1, 5),
       kind=st.sampled_from(["tid", "warp"]), op=st.sampled_from(sorted(OPS)),
       bound=st.integers(-2, 130), shift=st.integers(-40, 40), cut=st.integers(0, 40),
       seed=st.integers(0, 2**16))
def test_generated_block_kernels(tmp_path, block, blocks, kind, op, bound, shift, cut, seed):
    tid = np.arange(block)
    if kind == "tid":
        cond = f"tid {op} {bound}"
        active = OPS[op](tid, bound)
    else:
        warp = bound % 4
        cond = f"pto.get_warp_id() {op} {warp}"
        active = OPS[op](tid // 32, warp)
    kernel = _load(tmp_path, TEMPLATE.format(block=block, cond=cond, shift=shift))
    x = np.random.default_rng(seed).random(blocks * block, dtype=np.float32)
    n = max(0, blocks * block - cut)
    outcomes = _both_ways(kernel, blocks, block, x, x.size, n)
    _check(outcomes, _emulate(x, n, block, blocks, active, shift))


ROWS_TEMPLATE = '''\
import pypto as pto


@pto.kernel
def gen(x, out, ncols):
    row = pto.get_block_id()
    tid = pto.get_local_id()
    red = pto.alloc_local({block})
    src = x + row * ncols
    acc = 0.0
    for c0 in range(0, ncols, {block}):
        c = c0 + tid
        if c < ncols:
            acc = acc + pto.load(src + c + {shift})
    pto.store(red + tid, acc)
    pto.barrier_block()
    if tid < {cut}:
        pto.store(out + row * {block} + tid, pto.load(red + tid) + pto.load(red + ({block} - 1 - tid)))
'''


def _emulate_rows(x: np.ndarray, rows: int, ncols: int, block: int, shift: int,
                  cut: int) -> np.ndarray | None:
    acc = np.zeros((rows, block), np.float32)
    for c0 in range(0, ncols, block):
        c = c0 + np.arange(block)
        live = c < ncols
        idx = np.arange(rows)[:, None] * ncols + c[None, :] + shift
        if ((idx < 0) | (idx >= x.size))[:, live].any():
            return None
        acc[:, live] = acc[:, live] + x[np.clip(idx, 0, x.size - 1)][:, live]
    out = np.zeros((rows, block), np.float32)
    t = np.arange(block) < cut
    out[:, t] = (acc + acc[:, ::-1])[:, t]
    return out.reshape(-1)


@settings(max_examples=examples(10, 30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block=st.sampled_from([32, 64, 128]), rows=st.integers(1, 6), ncols=st.integers(1, 300),
       shift=st.integers(-3, 3), cut=st.integers(0, 128), seed=st.integers(0, 2**16))
def test_generated_row_kernels(tmp_path, block, rows, ncols, shift, cut, seed):
    """Rows of HBM per block (`x + row * ncols + c`), a windowed branch, a gathered read."""
    kernel = _load(tmp_path, ROWS_TEMPLATE.format(block=block, shift=shift, cut=cut))
    x = np.random.default_rng(seed).random(rows * ncols + 2, dtype=np.float32)
    outcomes = _both_ways(kernel, rows, block, x, rows * block, ncols)
    _check(outcomes, _emulate_rows(x, rows, ncols, block, shift, cut))
