"""The access planner (pypto/backend/interpreter/plan.py, views.py).

- the affine analysis normalises every arithmetic form of one address to the same linear form;
- codegen plans the accesses the structured paths do not take, and leaves out the address
  arithmetic only they use;
- planned accesses give the general path's results bit for bit (NumPy references, fast paths
  on and off, lockstep and warp schedules), including offsets that wrap around in int32,
  stores where lanes collide (the highest lane wins), masked partial tails, broadcasts of L1;
- errors (out of bounds, races) are reported word for word as by the general path.
"""

from __future__ import annotations

import numpy as np
import pytest

from xdsl.dialects import func
from xdsl.ir import BlockArgument

import pypto as pto
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.plan import Planner
from pypto.dialects import pto as pto_dialect
from tests.conftest import run_kernel


@pytest.fixture
def fast_paths():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


def both_ways(fast_paths, kernel, grid, block, args, **options):
    """Run with the planner (fast paths on) and without; the outputs must be equal bit for bit.
    Returns the planned run's outputs."""
    outs = {}
    for on in (True, False):
        fast_paths.on = on
        outs[on] = run_kernel(kernel, grid, block, [a.copy() if isinstance(a, np.ndarray) else a
                                                    for a in args], **options)
    for a, b in zip(outs[True], outs[False]):
        assert a.tobytes() == b.tobytes()
    return outs[True]


def generated(kernel, args, block):
    device = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray) else a
              for a in args]
    ck = pto.compile(kernel, args=device, block=block)
    one_d = isinstance(block, int)
    return ck.executable.variant(one_d).source


# --- normalisation ---------------------------------------------------------------------------

@pto.kernel
def three_ways(x, y, w):
    r = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    c = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    a = pto.load(x + (r * w + c))           # parenthesised
    b = pto.load(x + r * w + c)             # pointer, then column
    d = pto.load((x + c) + w * r)           # another order, product reversed
    pto.store(y + (c + r * w), a + b + d)


def test_every_arithmetic_form_has_one_plan():
    x = np.zeros((8, 32), np.float32)
    device = [pto.alloc_tensor(x.nbytes, dtype=x.dtype)] * 2 + [32]
    ck = pto.compile(three_ways, args=device, block=(16, 4))
    kernel = next(op for op in ck.module.walk() if isinstance(op, func.FuncOp))
    planner = Planner(lambda v: isinstance(v, BlockArgument) or
                      isinstance(v.owner, pto_dialect.GetBlockDimOp), lambda v: "w",
                      block_ids_vary=True)
    totals = []
    for op in kernel.walk():
        if isinstance(op, pto_dialect.LoadOp | pto_dialect.StoreOp):
            ptr = op.operands[1 if isinstance(op, pto_dialect.StoreOp) else 0]
            plan = planner.plan(ptr)
            assert plan is not None
            total = plan.parts[0][0]
            for form, _ in plan.parts[1:]:
                total = total + form
            totals.append(total)
    # r * w + c with r = b1 * bd1 + l1, c = b0 * bd0 + l0
    assert len(totals) == 4 and len(set(totals)) == 1
    assert totals[0].coef_polys == {"l0": {(): 1}, "l1": {("w",): 1},
                                    "b0": {("_ctx.block[0]",): 1},
                                    "b1": {("_ctx.block[1]", "w"): 1}}
    src = generated(three_ways, [x, x, 32], (16, 4))
    assert src.count("load_plan(") == 3 and src.count("store_plan(") == 1, src
    assert "_ctx.lanes.load(" not in src and "_ctx.lanes.store(" not in src, src
    # the offset arithmetic is not computed at all
    assert "_addptr" not in src, src


def test_every_arithmetic_form_runs_exactly(fast_paths):
    h, w = 8, 32
    x = np.random.default_rng(0).random((h, w), dtype=np.float32)
    _, y = both_ways(fast_paths, three_ways, (2, 2), (16, 4), [x, np.zeros_like(x), w])
    np.testing.assert_array_equal(y, x + x + x)


@pto.kernel
def interleaved(x, y, s):
    t = pto.get_global_id()
    pto.store(y + t, pto.load(x + 2 * s * t))


def test_products_of_uniforms_are_strided_views(fast_paths):
    x = np.arange(4096, dtype=np.float32)
    src = generated(interleaved, [x, np.zeros(512, np.float32), 3], 128)
    assert "load_plan" in src and "int(v" in src, src
    _, y = both_ways(fast_paths, interleaved, 4, 128, [x, np.zeros(512, np.float32), 3])
    np.testing.assert_array_equal(y, x[::6][:512])


# --- exactness corner cases ---------------------------------------------------------------------

@pto.kernel
def wraps(x, y, big):
    i = pto.get_global_id()
    pto.store(y + i, pto.load(x + (i * big + i)))   # i * 2^32 wraps to 0 in int32


def test_offsets_that_wrap_take_the_programs_values(fast_paths):
    # i * 65536 + i exceeds int32 for large i: the program's offsets wrap, the planner's form
    # is out of range, so the general path runs on the wrapped offsets and reports the lane
    big = 65536
    x = np.random.default_rng(2).random(300, dtype=np.float32)
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.MemoryAccessError) as e:
            run_kernel(wraps, 2, 128, [x, np.zeros(256, np.float32), big])
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    wrapped = int(np.int32(np.int64(1) * big + 1))  # lane 1: in bounds? no: 65537
    assert f"element {wrapped}" in msgs[0]


@pto.kernel
def wrap_to_zero(x, y, k):
    i = pto.get_global_id()
    j = i * k           # k = 65536: j * 65536 = i * 2^32 = 0 (mod 2^32)
    pto.store(y + i, pto.load(x + (j * k + i)))


def test_wrapped_products_equal_numpy(fast_paths):
    x = np.random.default_rng(3).random(256, dtype=np.float32)
    _, y = both_ways(fast_paths, wrap_to_zero, 2, 128, [x, np.zeros(256, np.float32), 65536])
    np.testing.assert_array_equal(y, x)


@pto.kernel
def collide(x, y):
    i = pto.get_global_id()
    pto.store(y + pto.get_block_id() * 2, pto.load(x + i))   # every lane of a block, one address


def test_colliding_stores_keep_the_highest_lane(fast_paths):
    x = np.random.default_rng(4).random(512, dtype=np.float32)
    _, y = both_ways(fast_paths, collide, 4, 128, [x, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(y[::2], x.reshape(4, 128)[:, -1])


@pto.kernel
def tail2d(x, y, h, w):
    c = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    r = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    if r < h and c < w:
        pto.store(y + (r * w + c), pto.load(x + (r * w + c)) * 2.0)


@pytest.mark.parametrize("h,w", [(37, 70), (64, 64), (1, 5), (17, 16)])
def test_masked_partial_tails(fast_paths, h, w):
    x = np.random.default_rng(5).random((h, w), dtype=np.float32)
    _, y = both_ways(fast_paths, tail2d, ((w + 15) // 16, (h + 7) // 8), (16, 8),
                     [x, np.zeros_like(x), h, w])
    np.testing.assert_array_equal(y, x * np.float32(2.0))


@pto.kernel
def tail_oob(x, y, n):
    i = pto.get_block_id() * pto.get_block_dim() + pto.get_local_id()
    if i < n:
        pto.store(y + i, pto.load(x + i))


def test_a_tail_out_of_bounds_is_reported_like_the_general_path(fast_paths):
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.MemoryAccessError) as e:
            run_kernel(tail_oob, 3, 128, [np.zeros(300, np.float32), np.zeros(400, np.float32),
                                          350])
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "element 300" in msgs[0]


# --- L1: broadcasts, races ---------------------------------------------------------------------

@pto.kernel
def broadcast_l1(x, y, K: pto.constexpr):
    tid = pto.get_local_id()
    taps = pto.alloc_local(K)
    if tid < K:
        pto.store(taps + tid, pto.load(x + pto.get_block_id() * K + tid))
    pto.barrier_block()
    acc = 0.0
    for k in range(K):
        acc = acc + pto.load(taps + k)
    pto.store(y + pto.get_global_id(), acc)


@pytest.mark.parametrize("schedule", [None, "in_order", "reverse", "random:3"])
def test_broadcast_reads_of_l1(fast_paths, schedule):
    x = np.random.default_rng(6).random(8 * 5, dtype=np.float32)
    opts = {"schedule": schedule} if schedule else {}
    _, y = both_ways(fast_paths, broadcast_l1, 8, 64, [x, np.zeros(8 * 64, np.float32), 5],
                     **opts)
    acc = np.zeros(8, np.float32)
    for k in range(5):
        acc = acc + x.reshape(8, 5)[:, k]
    np.testing.assert_array_equal(y, np.repeat(acc, 64))


@pto.kernel
def racy_broadcast(x, y):
    tid = pto.get_local_id()
    buf = pto.alloc_local(64)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.store(y + pto.get_global_id(), pto.load(buf + 40))   # no barrier_block: RAW


@pto.kernel
def racy_pattern(x, y):
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    buf = pto.alloc_local(256)
    pto.store(buf + ty * 16 + tx, pto.load(x + pto.get_global_id(1) * 16 + tx))
    pto.store(y + pto.get_global_id(1) * 16 + tx, pto.load(buf + tx * 16 + ty))   # transposed


@pytest.mark.parametrize("kernel,block", [(racy_broadcast, 64), (racy_pattern, (16, 16))])
def test_races_through_planned_accesses_are_reported_like_the_general_path(fast_paths, kernel,
                                                                           block):
    msgs = []
    grid = 4 if isinstance(block, int) else (1, 4)
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.RaceError) as e:
            run_kernel(kernel, grid, block, [np.zeros(1024, np.float32),
                                             np.zeros(1024, np.float32)], pipeline="")
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "RAW race" in msgs[0]
