"""A merged tree step's inner data-dependent `if` as selects (tree_selects.py,
docs/native.md#merged-tree-steps): argmin block's two-array step with ties, NaN and -0, bit for
bit against the interpreter (the oracle) and a NumPy model of the lockstep tree; an inner `if`
that could raise (a division) stays a branch, and its error is raised only where the
interpreter raises it."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

import pypto as pto
from pypto.backend.native.fast_blocks import BLOCK_ATTR
from pypto.backend.native.tree_selects import select_tree_steps
from pypto.errors import KernelError
from tests.backend.native.helpers import both, same_bits
from tests.kernels.test_users_zoo import BIG, argmin_block

BLOCK, LOG2, N = 128, 7, 1000
GRID = -(-N // BLOCK)


def _with_block(func, lanes):
    f = func.clone()
    f.attributes[BLOCK_ATTR] = ArrayAttr([IntegerAttr(v, i64) for v in (lanes, 1, 1)])
    return f


@pytest.fixture(scope="module")
def argmin():
    x = np.zeros(N, np.float32)
    return pto.compile(argmin_block, args=(x, np.zeros(GRID, np.int32), np.zeros(GRID, np.float32),
                                           N, BLOCK, LOG2), block=BLOCK)


def argmin_ref(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's tree in lockstep: every admitted lane reads, then writes."""
    vals = np.full(GRID * BLOCK, np.float32(BIG))
    vals[:N] = x
    vals = vals.reshape(GRID, BLOCK)
    ids = np.arange(GRID * BLOCK, dtype=np.int32).reshape(GRID, BLOCK)
    s = BLOCK // 2
    for _ in range(LOG2):
        a, b = vals[:, :s].copy(), vals[:, s:2 * s].copy()
        ia, ib = ids[:, :s].copy(), ids[:, s:2 * s].copy()
        with np.errstate(invalid="ignore"):
            take = (b < a) | ((b == a) & (ib < ia))
        vals[:, :s] = np.where(take, b, a)
        ids[:, :s] = np.where(take, ib, ia)
        s //= 2
    return ids[:, 0].copy(), vals[:, 0].copy()


def test_the_step_becomes_selects(argmin):
    """The inner `if` is gone: two selects and the stores under the step's own condition."""
    func = _with_block(argmin.func, BLOCK)
    selected = select_tree_steps(func)
    assert selected is not func
    assert len([o for o in selected.walk() if isinstance(o, arith.SelectOp)]) == 2
    step = next(o for o in selected.walk() if isinstance(o, scf.IfOp) and
                any(isinstance(i, scf.IfOp) for i in o.true_region.blocks[0].ops))
    inner = [o for o in step.true_region.blocks[0].ops if isinstance(o, scf.IfOp)]
    assert len(inner) == 1 and inner[0].cond is step.cond


@pytest.mark.parametrize("kind", ["ties", "nan", "zeros"])
def test_argmin_bit_exact(argmin, kind):
    """Many equal values (the index decides), NaN (no comparison holds: the pair's first
    stays), -0 against +0 (equal: the smaller index wins, its own zero kept)."""
    rng = np.random.default_rng(len(kind))
    if kind == "ties":
        x = rng.integers(-3, 3, N).astype(np.float32)
    elif kind == "nan":
        x = rng.standard_normal(N).astype(np.float32)
        x[rng.random(N) < 0.3] = np.nan
    else:
        x = np.where(rng.random(N) < 0.5, np.float32(-0.0), np.float32(0.0))
        x[rng.random(N) < 0.05] = 1.0
    outs = [np.zeros(GRID, np.int32), np.zeros(GRID, np.float32)]
    interp, native = both(argmin, GRID, BLOCK, [x, *outs], (N, BLOCK, LOG2))
    assert same_bits(interp, native)
    idx, val = argmin_ref(x)
    assert np.array_equal(native[1], idx)
    assert np.array_equal(native[2].view(np.uint32), val.view(np.uint32))


@pto.kernel
def tree_div(x, out, k, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """A max tree whose inner `if` divides: with `k == 0` it raises only where `b > a`."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK, dtype=pto.int32)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier_block()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            a = pto.load(buf + tid)
            b = pto.load(buf + tid + s)
            if b > a:
                pto.store(buf + tid, b // k)
        pto.barrier_block()
        s = s // 2
    if tid == 0:
        pto.store(out + pto.get_block_id(), pto.load(buf))


@pytest.fixture(scope="module")
def divided():
    x = np.zeros(4 * 64, np.int32)
    return pto.compile(tree_div, args=(x, np.zeros(4, np.int32), 3, 64, 6), block=64)


def test_a_step_that_can_raise_keeps_its_branch(divided):
    func = _with_block(divided.func, 64)
    assert select_tree_steps(func) is func


def test_its_division_raises_only_where_taken(divided):
    """Equal values: no lane takes the branch, `k == 0` divides nothing (both backends);
    distinct ones: both raise the interpreter's error."""
    same = np.full(256, 7, np.int32)
    interp, native = both(divided, 4, 64, [same, np.zeros(4, np.int32)], (0, 64, 6))
    assert same_bits(interp, native) and (native[1] == 7).all()
    rising = np.arange(256, dtype=np.int32)
    interp, native = both(divided, 4, 64, [rising, np.zeros(4, np.int32)], (3, 64, 6))
    assert same_bits(interp, native)
    messages = []
    for backend in ("interpreter", "native"):
        with pytest.raises(KernelError) as info:
            pto.launch(divided, 4, 64, (rising.copy(), np.zeros(4, np.int32), 0, 64, 6),
                       backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "division by zero" in messages[0]
