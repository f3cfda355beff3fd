"""2-D tails (strategies/tail2d.py): a 2-D launch whose last block column / row is partial, guarded by
`if r < h and c < w`, stores its whole blocks as one unmasked view and scatters the partial
edge blocks. Checked: the split is taken (no general-path offsets), and every result equals
NumPy and the general path (`FAST_PATHS.on = False`) bit for bit, under every schedule;
lanes that really collide still take the general path."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import views
from pypto.backend.interpreter.strategies import tail2d
from pypto.backend.interpreter import executor as executor_mod
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from tests.conftest import run_kernel
from tests.kernels.test_users_zoo import add3d, add3d_ref, scale2d_global, scale2d_ids, scale2d_ref

BX, BY = 16, 8
SCHEDULES = [None, "in_order", "reverse", "random:7"]


@pytest.fixture
def fast_paths():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


@pytest.fixture
def taken(monkeypatch):
    """Records what the planned stores did: store_edges' outcomes, and how many times the
    general path's offsets were computed."""
    seen = {"edges": [], "offsets": 0}
    orig = tail2d.store_edges

    def store_edges(*a, **kw):
        done = orig(*a, **kw)
        seen["edges"].append(done)
        return done
    monkeypatch.setattr(tail2d, "store_edges", store_edges)
    from pypto.backend.interpreter import views_forms
    orig_offsets = views_forms.BoxForms.plan_offsets

    def plan_offsets(self, parts):
        seen["offsets"] += 1
        return orig_offsets(self, parts)
    monkeypatch.setattr(views_forms.BoxForms, "plan_offsets", plan_offsets)
    return seen


def both_ways(fast_paths, kernel, grid, block, args, taken, **options):
    """Fast paths on (recording what was taken), then off; the outputs bit-identical."""
    outs = {}
    for on in (False, True):
        fast_paths.on = on
        if on:
            taken["edges"].clear()
            taken["offsets"] = 0
        outs[on] = run_kernel(kernel, grid, block, [a.copy() if isinstance(a, np.ndarray) else a
                                                    for a in args], **options)
    fast_paths.on = True
    for a, b in zip(outs[True], outs[False]):
        assert a.tobytes() == b.tobytes()
    return outs[True]


@pytest.mark.parametrize("kernel", [scale2d_ids, scale2d_global])
@pytest.mark.parametrize("h, w", [(37, 70), (64, 45), (41, 64), (40, 64), (100, 203), (5, 70)])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_scale2d_edges(fast_paths, taken, kernel, h, w, schedule):
    x = np.random.default_rng(h * w).standard_normal((h, w)).astype(np.float32)
    grid = ((w + BX - 1) // BX, (h + BY - 1) // BY)
    options = {"schedule": schedule} if schedule else {}
    out = both_ways(fast_paths, kernel, grid, (BX, BY),
                    [x, np.zeros_like(x), h, w, 1.5, -0.25], taken, **options)[1]
    assert out.tobytes() == scale2d_ref(x, 1.5, -0.25).tobytes()
    # chosen: the planned store never fell back to the general path's offsets
    assert taken["offsets"] == 0
    if w % BX:  # the box is wider than a row: the whole blocks and the edges apart
        assert taken["edges"] and all(taken["edges"])
    else:  # the box fits the rows: no split needed
        assert taken["edges"] == []


def test_edge_split_is_the_leading_rectangle_of_whole_blocks(fast_paths, taken, monkeypatch):
    """37 x 70 with 16 x 8 blocks: 5 x 5 blocks, of which rows 0..3 x columns 0..3 are whole."""
    splits = []
    orig = tail2d.edge_split

    def edge_split(ctx, shape, mask):
        out = orig(ctx, shape, mask)
        splits.append((list(shape), out))
        return out
    monkeypatch.setattr(tail2d, "edge_split", edge_split)
    x = np.ones((37, 70), np.float32)
    run_kernel(scale2d_ids, (5, 5), (BX, BY), [x, np.zeros_like(x), 37, 70, 1.5, -0.25])
    assert splits and all(s == ([5, 5, BY, BX], (4, 4)) for s in splits)


@pto.kernel
def overrun(x, y, h, w, w2, r0):
    """Rows r0.. run on to column w2 > w: those lanes write the next row's first elements,
    which the next row's own lanes write too (the lanes really collide)."""
    c = pto.get_block_id(0) * pto.get_block_dim(0) + pto.get_local_id(0)
    r = pto.get_block_id(1) * pto.get_block_dim(1) + pto.get_local_id(1)
    if r < h and (c < w or r >= r0 and c < w2):
        pto.store(y + (r * w + c), pto.load(x + c))


@pytest.mark.parametrize("schedule", [None, "reverse"])
@pytest.mark.parametrize("h, r0", [
    (16, 0),    # whole blocks' rows 1.. hit by the edge column's lanes (_in_view refuses)
    (20, 16),   # only the partial last block row runs on: edge lanes hit each other (unique)
    (20, 0),    # both
])
def test_colliding_edges_take_the_general_path(fast_paths, taken, schedule, h, r0):
    w = 40
    x = np.arange(64, dtype=np.float32) + 1
    y = np.zeros(h * w + 64, np.float32)
    options = {"schedule": schedule} if schedule else {}
    out = both_ways(fast_paths, overrun, (3, (h + BY - 1) // BY), (BX, BY),
                    [x, y, h, w, w + 4, r0], taken, **options)[1]
    assert taken["edges"] and not any(taken["edges"])  # refused: nothing written twice
    assert taken["offsets"]
    # NumPy: row r holds x[:w]; rows r0.. also write x[w:w+4] over the next row's start,
    # which only the lane order decides (the general path's: compared above)
    doubled = np.zeros_like(y, dtype=bool)
    for r in range(max(r0, 0), h):
        doubled[(r + 1) * w:(r + 1) * w + 4] = True
    expect = np.zeros_like(y)
    for r in range(h):
        expect[r * w:r * w + w] = x[:w]
    expect[h * w:h * w + 4] = x[w:w + 4]
    keep = ~doubled
    keep[h * w:h * w + 4] = False
    assert out[keep].tobytes() == expect[keep].tobytes()
    assert set(out[doubled].tolist()) <= set(x[:4].tolist()) | set(x[w:w + 4].tolist())


@pytest.mark.parametrize("kernel", [scale2d_ids, scale2d_global])
@pytest.mark.parametrize("chunk_lanes", [1024, 4096])
def test_chunks_of_whole_grid_rows(fast_paths, taken, monkeypatch, kernel, chunk_lanes):
    """A 2-D launch of several chunks (GRID_CHUNK_LANES): each chunk is whole rows of the grid,
    so its blocks are a box and its stores planned views, not the general path."""
    monkeypatch.setattr(executor_mod, "GRID_CHUNK_LANES", chunk_lanes)
    h, w = 45, 70  # 5 x 6 blocks of 128 lanes; chunks of 8 (32) blocks -> 5 (30) blocks
    x = np.random.default_rng(3).standard_normal((h, w)).astype(np.float32)
    out = both_ways(fast_paths, kernel, (5, 6), (BX, BY),
                    [x, np.zeros_like(x), h, w, 1.5, -0.25], taken)[1]
    assert out.tobytes() == scale2d_ref(x, 1.5, -0.25).tobytes()
    assert taken["offsets"] == 0 and taken["edges"] and all(taken["edges"])


@pytest.mark.parametrize("per_chunk, grid, rounded", [
    (8, (5, 6, 1), 5), (32, (5, 6, 1), 30), (4, (5, 6, 1), 4), (8, (5, 1, 1), 8),
    (64, (5, 6, 3), 60), (12, (5, 6, 3), 10), (100, (8, 8, 1), 64)])
def test_whole_grid_rows(per_chunk, grid, rounded):
    assert executor_mod._whole_grid_rows(per_chunk, grid) == rounded


@pytest.mark.parametrize("kernel", [scale2d_ids, scale2d_global])
@pytest.mark.parametrize("short", [1, 3])  # y one element / 3 rows short of h x w
def test_edge_lane_outside_the_buffer_is_reported_as_by_the_general_path(
        fast_paths, taken, kernel, short):
    """An active lane past the end of y (a buffer too small for h x w): the split refuses, the
    general path reports it, word for word as with the fast paths off."""
    h, w = 37, 70
    x = np.ones((h, w), np.float32)
    y = np.zeros(h * w - (1 if short == 1 else 3 * w), np.float32)
    msgs = []
    for on in (True, False):
        fast_paths.on = on
        with pytest.raises(pto.MemoryAccessError) as e:
            run_kernel(kernel, (5, 5), (BX, BY), [x, y, h, w, 1.5, -0.25])
        msgs.append(str(e.value).split("pypto: raised")[0])
    assert msgs[0] == msgs[1]
    assert "out-of-bounds store of HBM buffer 'y'" in msgs[0]
    assert "test_users_zoo.py:" in msgs[0]  # the kernel's source line


@pytest.mark.parametrize("d, h, w", [(5, 9, 20), (4, 8, 16), (3, 12, 19)])
@pytest.mark.parametrize("schedule", [None, "reverse"])
def test_add3d_edges(fast_paths, taken, d, h, w, schedule):
    """3-D blocks (8 x 4 x 2): partial blocks along up to three axes, one edge piece each."""
    rng = np.random.default_rng(d * h * w)
    x = rng.standard_normal((d, h, w)).astype(np.float32)
    y = rng.standard_normal((d, h, w)).astype(np.float32)
    grid = ((w + 7) // 8, (h + 3) // 4, (d + 1) // 2)
    options = {"schedule": schedule} if schedule else {}
    out = both_ways(fast_paths, add3d, grid, (8, 4, 2), [x, y, np.zeros_like(x), d, h, w],
                    taken, **options)[2]
    assert out.tobytes() == add3d_ref(x, y).tobytes()
    assert taken["offsets"] == 0
    if w % 8:
        assert taken["edges"] and all(taken["edges"])
