"""Lazy loads (strategies/batch_copy.py `LazyLoad`, tiles.py `FreshL1`) against NumPy references.

In batch mode an `async_load` whose blocks' HBM tiles form an affine grid leaves its tiles in
HBM; `mma` multiplies them there, and anything else that touches the loaded L1 bytes (a lane
load or store, a fill, a store to HBM, another copy over part of them, the debugger) or writes
HBM first moves them into L1. Every kernel here is checked bit for bit against a NumPy emulation
of the semantics, with the fast paths on and off, in lockstep and under warp schedules, at the
pto and the fused npu level.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter.strategies import batch_copy
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.instruments import Instrument
from tests.conftest import from_device, to_device

GX, GY = 3, 2            # grid of blocks
T = 8                    # tiles are T x T (64 elements: one per lane)
K = 24                   # A is (GX * GY * T) x K: block b's A tile is rows b*T.., columns 0..T-1
N = GX * T               # B is T x N: block (bx, by) multiplies B's columns bx*T..
NPU_PIPELINE = "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"

PURE, LANE_STORE_HBM, TILE_STORE_HBM, ASYNC_STORE_HBM, PART_RELOAD, LANE_STORE_L1, FILL_PART, \
    LANE_READ, STORE_TILE = range(9)
MODES = {
    PURE: "mma only",
    LANE_STORE_HBM: "lane store to the HBM the A tile came from",
    TILE_STORE_HBM: "tile store over that HBM",
    ASYNC_STORE_HBM: "async store over that HBM",
    PART_RELOAD: "a copy over half of the A tile in L1",
    LANE_STORE_L1: "lane store into the A tile",
    FILL_PART: "fill of part of the A tile",
    LANE_READ: "lane load of the A tile",
    STORE_TILE: "tile store of the A tile",
}


@pto.kernel
def lazy_mma(A, B, C, X, Kd, Nd, MODE: pto.constexpr):
    """C tile of block (bx, by) = A tile of block b @ B tile of column bx, after MODE has done
    something to the A tile (in L1) or its source (in HBM) between its load and the mma."""
    bx = pto.get_block_id(0)
    by = pto.get_block_id(1)
    b = by * 3 + bx
    lid = pto.get_local_id()
    a_src = A + b * 8 * Kd
    C_tile = pto.alloc_local(64)
    pto.fill(C_tile, 0.0, 64)
    A_tile = pto.alloc_local(64)
    B_tile = pto.alloc_local(64)
    other = pto.alloc_local(64)
    pto.fill(other, 7.0, 64)
    tok_a = pto.async_load(A_tile, a_src, 64 * 4, rows=8, src_stride=Kd)
    tok_b = pto.async_load(B_tile, B + bx * 8, 64 * 4, rows=8, src_stride=Nd)
    pto.wait(tok_a)
    pto.wait(tok_b)
    if MODE == 1:
        pto.store(a_src + (lid // 8) * Kd + lid % 8, -1.0)
    if MODE == 2:
        pto.store(a_src, other, 64 * 4, rows=8, dst_stride=Kd)
    if MODE == 3:
        tok = pto.async_store(a_src, other, 64 * 4, rows=8, dst_stride=Kd)
        pto.wait(tok)
    if MODE == 4:
        tok = pto.async_load(A_tile + 32, X + b * 64, 32 * 4)
        pto.wait(tok)
    if MODE == 5:
        if lid < 8:
            pto.store(A_tile + lid, 5.0)
    if MODE == 6:
        pto.fill(A_tile + 16, 2.0, 16)
    if MODE == 7:
        pto.store(X + b * 64 + lid, pto.load(A_tile + lid))
    if MODE == 8:
        pto.store(X + b * 64, A_tile, 64 * 4)
    pto.mma(C_tile, A_tile, B_tile, 8, 8, 8)
    pto.store(C + by * 8 * Nd + bx * 8, C_tile, 64 * 4, rows=8, dst_stride=Nd)


def reference(a: np.ndarray, bm: np.ndarray, x: np.ndarray, mode: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, C, X) after the kernel: every block's load happens before any block's later step
    (the blocks of a batch run in lockstep; no block touches another's A rows or X tile)."""
    a, x = a.copy(), x.copy()
    c = np.zeros((GY * T, N), np.float32)
    tiles_a = {}
    for by, bx in itertools.product(range(GY), range(GX)):
        b = by * GX + bx
        tiles_a[b] = a[b * T:(b + 1) * T, :T].copy()       # the load: a snapshot
    for by, bx in itertools.product(range(GY), range(GX)):
        b = by * GX + bx
        at = tiles_a[b].reshape(-1)
        if mode == LANE_STORE_HBM or mode in (TILE_STORE_HBM, ASYNC_STORE_HBM):
            a[b * T:(b + 1) * T, :T] = -1.0 if mode == LANE_STORE_HBM else 7.0
        elif mode == PART_RELOAD:
            at[32:] = x.reshape(-1)[b * 64:b * 64 + 32]
        elif mode == LANE_STORE_L1:
            at[:8] = 5.0
        elif mode == FILL_PART:
            at[16:32] = 2.0
        elif mode in (LANE_READ, STORE_TILE):
            x.reshape(-1)[b * 64:(b + 1) * 64] = at
        tile = np.ascontiguousarray(at.reshape(T, T))
        btile = np.ascontiguousarray(bm[:, bx * T:(bx + 1) * T])
        c[by * T:(by + 1) * T, bx * T:(bx + 1) * T] = np.zeros((T, T), np.float32) + tile @ btile
    return a, c, x


@pytest.fixture(params=[True, False], ids=["fast", "general"])
def fast_paths(request):
    saved = FAST_PATHS.on
    FAST_PATHS.on = request.param
    yield request.param
    FAST_PATHS.on = saved


def inputs(mode: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(100 + mode)
    a = rng.standard_normal((GX * GY * T, K)).astype(np.float32)
    bm = rng.standard_normal((T, N)).astype(np.float32)
    c = np.full((GY * T, N), np.nan, np.float32)
    x = rng.standard_normal((GX * GY, 64)).astype(np.float32)
    return a, bm, c, x


def same_bits(out: np.ndarray, ref: np.ndarray) -> bool:
    return np.array_equal(out.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("schedule", [None, "in_order", "random:5"])
@pytest.mark.parametrize("pipeline", [None, NPU_PIPELINE], ids=["pto", "npu-fused"])
@pytest.mark.parametrize("mode", list(MODES), ids=list(MODES.values()))
def test_a_lazily_loaded_tile_reads_as_loaded(mode, pipeline, schedule, fast_paths):
    a, bm, c, x = inputs(mode)
    args, tensors = to_device((a, bm, c, x, K, N, mode))
    options = {} if pipeline is None else {"pipeline": pipeline}
    ck = pto.compile(lazy_mma, args=args, block=64, schedule=schedule, race_check=True,
                     **options)
    assert ck.executable.mode == ("batch" if schedule is None else "warp")
    pto.launch(ck, grid=(GX, GY), block=64, args=args)
    out_a, _, out_c, out_x = from_device(tensors)
    ref_a, ref_c, ref_x = reference(a, bm, x, mode)
    assert same_bits(out_c, ref_c)
    assert same_bits(out_a, ref_a)
    assert same_bits(out_x, ref_x)


def count_materialised(monkeypatch) -> list[int]:
    """How often a lazy load moved its tiles into L1."""
    calls = [0]
    real = batch_copy.LazyLoad.materialise

    def counted(self):
        calls[0] += 1
        real(self)

    monkeypatch.setattr(batch_copy.LazyLoad, "materialise", counted)
    return calls


@pytest.mark.parametrize("mode,moved", [(PURE, 0), (LANE_READ, 2), (STORE_TILE, 1),
                                        (PART_RELOAD, 2), (LANE_STORE_HBM, 2)])
def test_tiles_move_into_l1_only_when_something_else_touches_them(mode, moved, monkeypatch):
    """White box: the mma alone reads the loads in HBM; a lane access moves every lazy load
    (A and B), a tile store only the one it touches; a reload of half the A tile moves it,
    and its own half tile moves when the mma reads it as part of the whole."""
    calls = count_materialised(monkeypatch)
    a, bm, c, x = inputs(mode)
    args, tensors = to_device((a, bm, c, x, K, N, mode))
    ck = pto.compile(lazy_mma, args=args, block=64)
    pto.launch(ck, grid=(GX, GY), block=64, args=args)
    out_c = from_device(tensors)[2]
    assert same_bits(out_c, reference(a, bm, x, mode)[1])
    assert calls[0] == moved


class InspectBeforeMma(Instrument):
    """Before the mma, reads each block's A tile straight from the L1 arena the way the
    debugger's `inspect_l1` does: after `settle_l1`, and (to show the load was lazy) before."""

    def __init__(self, a_offset: int):
        self.a_offset = a_offset
        self.before_settle: list[np.ndarray] = []
        self.after_settle: list[np.ndarray] = []

    def begin(self, table, grid, block):
        self.table = table

    def before(self, op_id, ctx, mask):
        if self.table[op_id].op.name != "pto.mma" or not ctx.memory.arenas:
            return
        arena = ctx.memory.arenas[0]
        ext = ctx.layout.extent

        def a_tiles():
            return [arena.bytes[b * ext + self.a_offset:b * ext + self.a_offset + 256]
                    .view(np.float32).copy() for b in range(arena.blocks)]

        self.before_settle = a_tiles()
        ctx.memory.settle_l1()
        self.after_settle = a_tiles()


def test_the_debugger_reads_a_lazy_tile_through_its_view():
    a, bm, c, x = inputs(PURE)
    args, tensors = to_device((a, bm, c, x, K, N, PURE))
    ck = pto.compile(lazy_mma, args=args, block=64)
    exe = ck.executable
    slot = next(s for s in exe.layout.slots.values() if s.name == "A_tile")
    watch = InspectBeforeMma(slot.offset)
    pto.sync()  # the uploads
    exe.run((GX, GY, 1), (64, 1, 1), args, instrument=watch)
    out_c = from_device(tensors)[2]
    assert same_bits(out_c, reference(a, bm, x, PURE)[1])
    loaded = [a[b * T:(b + 1) * T, :T].reshape(-1) for b in range(GX * GY)]
    assert len(watch.after_settle) == GX * GY
    for got, want in zip(watch.after_settle, loaded):
        assert same_bits(got, want)
    assert any(not same_bits(got, want) for got, want in zip(watch.before_settle, loaded))


@pto.kernel
def read_before_wait(A, X, Kd, WRITE: pto.constexpr):
    """A lane reads (or writes) the A tile while its load is still in flight."""
    b = pto.get_block_id(0)
    lid = pto.get_local_id()
    A_tile = pto.alloc_local(64)
    tok = pto.async_load(A_tile, A + b * 8 * Kd, 64 * 4, rows=8, src_stride=Kd)
    if WRITE:
        pto.store(A_tile + lid, 1.0)
    else:
        pto.store(X + b * 64 + lid, pto.load(A_tile + lid))
    pto.wait(tok)


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_a_lazy_load_in_flight_is_still_a_hazard(write, fast_paths):
    a = np.ones((GX * T, K), np.float32)
    args, tensors = to_device((a, np.zeros(GX * 64, np.float32), K, int(write)))
    ck = pto.compile(read_before_wait, args=args, block=64, pipeline="")
    pto.launch(ck, grid=GX, block=64, args=args)
    with pytest.raises(pto.RaceError, match=f"hazard: {'write' if write else 'read'} of L1 "
                                            f"buffer 'A_tile' while the pto.async_load"):
        pto.sync()
    for t, _ in tensors:
        t.free()


@pto.kernel
def tile_only_poison(A, C, Kd, Nd):
    """Tile instructions only: C_tile is never filled, so the mma adds A @ B to fresh L1 (NaN)
    and B_tile half-loaded reads the other half's poison."""
    b = pto.get_block_id(0)
    C_tile = pto.alloc_local(64)
    A_tile = pto.alloc_local(64)
    B_tile = pto.alloc_local(64)
    tok = pto.async_load(A_tile, A + b * 8 * Kd, 64 * 4, rows=8, src_stride=Kd)
    tok2 = pto.async_load(B_tile, A + b * 8 * Kd + 8, 32 * 4, rows=4, src_stride=Kd)
    pto.wait_all()
    pto.mma(C_tile, A_tile, B_tile, 8, 8, 8)
    pto.store(C + b * 8, C_tile, 64 * 4, rows=8, dst_stride=Nd)
    pto.store(C + 8 * Nd + b * 8, B_tile, 64 * 4, rows=8, dst_stride=Nd)


def test_fresh_l1_of_a_tile_only_kernel_reads_as_poison(fast_paths):
    """The deferred poisoning (FreshL1) gives what the eager one does, in every launch (the
    arena is reused from the second launch on)."""
    a = np.random.default_rng(3).standard_normal((GX * T, K)).astype(np.float32)
    c = np.zeros((2 * T, GX * T), np.float32)
    args, tensors = to_device((a, c, K, GX * T))
    ck = pto.compile(tile_only_poison, args=args, block=64)
    assert ck.executable.layout.tile_only
    for _ in range(3):
        pto.launch(ck, grid=GX, block=64, args=args)
    out = from_device(tensors)[1]
    for b in range(GX):
        got_c = out[:T, b * T:(b + 1) * T]
        assert np.isnan(got_c).all()  # fresh C (NaN) + anything
        got_b = out[T:, b * T:(b + 1) * T]
        assert same_bits(got_b[:4], a[b * T:b * T + 4, 8:16])
        assert np.isnan(got_b[4:]).all()


@pto.kernel
def fill_then_mma(A, B, C, X, V, Kd, Nd, MODE: pto.constexpr):
    """C_tile = V (a fill), then MODE: 1 a lane reads C_tile first, 2 part of it is filled
    again with 3.0, 3 a copy loads half of it; then C_tile += A tile @ B tile."""
    b = pto.get_block_id(0)
    lid = pto.get_local_id()
    C_tile = pto.alloc_local(64)
    A_tile = pto.alloc_local(64)
    B_tile = pto.alloc_local(64)
    pto.fill(C_tile, V, 64)
    tok_a = pto.async_load(A_tile, A + b * 8 * Kd, 64 * 4, rows=8, src_stride=Kd)
    tok_b = pto.async_load(B_tile, B + b * 8, 64 * 4, rows=8, src_stride=Nd)
    pto.wait_all()
    if MODE == 1:
        pto.store(X + b * 64 + lid, pto.load(C_tile + lid))
    if MODE == 2:
        pto.fill(C_tile + 8, 3.0, 20)
    if MODE == 3:
        tok = pto.async_load(C_tile + 32, X + b * 64, 32 * 4)
        pto.wait(tok)
    pto.mma(C_tile, A_tile, B_tile, 8, 8, 8)
    pto.store(C + b * 8, C_tile, 64 * 4, rows=8, dst_stride=Nd)


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, float("nan")], ids=["0", "-0", "1.5", "nan"])
@pytest.mark.parametrize("mode", [0, 1, 2, 3], ids=["mma", "lane read", "refill part",
                                                    "reload half"])
def test_a_lazy_fill_of_the_accumulator_gives_the_fill_then_the_sum(mode, value, fast_paths):
    rng = np.random.default_rng(mode)
    a = rng.standard_normal((GX * T, K)).astype(np.float32)
    a[:, 3] = -0.0  # products and sums of signed zeros
    bm = rng.standard_normal((T, GX * T)).astype(np.float32)
    bm[:, 2] = 0.0
    c = np.zeros((T, GX * T), np.float32)
    x = rng.standard_normal((GX, 64)).astype(np.float32)
    args, tensors = to_device((a, bm, c, x, value, K, GX * T, mode))
    ck = pto.compile(fill_then_mma, args=args, block=64)
    pto.launch(ck, grid=GX, block=64, args=args)
    _, _, out_c, out_x = from_device(tensors)
    ref_x = x.copy()
    for b in range(GX):
        tile = np.full(64, value, np.float32)
        if mode == 1:
            ref_x[b] = tile
        if mode == 2:
            tile[8:28] = 3.0
        if mode == 3:
            tile[32:] = x[b, :32]
        at = np.ascontiguousarray(a[b * T:(b + 1) * T, :T])
        bt = np.ascontiguousarray(bm[:, b * T:(b + 1) * T])
        ref = tile.reshape(T, T) + at @ bt
        assert same_bits(out_c[:, b * T:(b + 1) * T], ref)
    assert same_bits(out_x, ref_x)


@pytest.mark.parametrize("model", ["fused", "table"])
def test_the_profiled_matmul_is_the_tiled_reference_bit_for_bit(model):
    """pto.profile runs the instrumented variant (at the npu level under `fused`): its lazy
    loads and fills give the tiled reference's bits too."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples"))
    from pipeline_matmul import matmul_tile

    from tests.backend.interpreter.fast_paths.test_batched_tiles import tiled_matmul_reference

    m, t = 128, 64
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, m)).astype(np.float32)
    b = rng.standard_normal((m, m)).astype(np.float32)
    args, tensors = to_device((a, b, np.zeros((m, m), np.float32), m, m, m, t, t, t))
    pto.profile(matmul_tile, grid=(m // t, m // t), block=64, args=args, model=model)
    out = from_device(tensors)[2]
    assert same_bits(out, tiled_matmul_reference(a, b, t))


@pto.kernel
def accumulate_into_an_operand(A, C, V, Kd, Nd):
    """C_tile = V, then C_tile += C_tile @ B_tile: the mma reads the filled tile as A."""
    b = pto.get_block_id(0)
    C_tile = pto.alloc_local(64)
    B_tile = pto.alloc_local(64)
    pto.fill(C_tile, V, 64)
    tok = pto.async_load(B_tile, A + b * 8 * Kd, 64 * 4, rows=8, src_stride=Kd)
    pto.wait(tok)
    pto.mma(C_tile, C_tile, B_tile, 8, 8, 8)
    pto.store(C + b * 8, C_tile, 64 * 4, rows=8, dst_stride=Nd)


def test_a_filled_accumulator_that_is_also_an_operand_is_filled_first(fast_paths):
    a = np.random.default_rng(11).standard_normal((GX * T, K)).astype(np.float32)
    args, tensors = to_device((a, np.zeros((T, GX * T), np.float32), 0.5, K, GX * T))
    ck = pto.compile(accumulate_into_an_operand, args=args, block=64)
    pto.launch(ck, grid=GX, block=64, args=args)
    out = from_device(tensors)[1]
    for b in range(GX):
        c = np.full((T, T), 0.5, np.float32)
        ref = c + c @ np.ascontiguousarray(a[b * T:(b + 1) * T, :T])
        assert same_bits(out[:, b * T:(b + 1) * T], ref)
