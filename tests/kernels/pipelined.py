"""The zoo's pipelined kernels: loops whose body is a `pto.pipeline`, written sequentially.

Each is the simple form a kernel author writes; `pto-double-buffer` (in `pto.compile`'s default
pipeline) overlaps their loads with the compute of the previous iteration. Used by
tests/kernels/test_pipelined.py (against NumPy) and tests/passes/test_double_buffer.py
(bit-identical before and after the pass, under every warp schedule). Every kernel here is
listed in `PIPELINED`, with a case builder and its NumPy reference.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import pypto as pto

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

T = 256
"""Elements per tile of the streaming kernels (one per lane of a 256-lane block)."""


@pto.kernel
def pipelined_scale(x, y, ntiles):
    """CopyIn / Compute / CopyOut (Ascend C's shape): y = 3 * x, one tile per iteration."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    out = pto.alloc_local(T)
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("copy_in"):
                tile = pto.alloc_local(T)
                tok = pto.async_load(tile, x + base + k * T, T * 4)
            with pl.stage("compute", after="copy_in"):
                pto.wait(tok)
                pto.store(out + tid, pto.load(tile + tid) * 3.0)
                pto.barrier_block()
            with pl.stage("copy_out", after="compute"):
                pto.store(y + base + k * T, out, T * 4)


@pto.kernel
def pipelined_scale_reversed(x, y, ntiles):
    """The tiles in reverse order (`range(n - 1, -1, -1)`: a counter computed in the loop)."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    out = pto.alloc_local(T)
    for k in range(ntiles - 1, -1, -1):
        with pto.pipeline() as pl:
            with pl.stage("copy_in"):
                tile = pto.alloc_local(T)
                tok = pto.async_load(tile, x + base + k * T, T * 4)
            with pl.stage("compute", after="copy_in"):
                pto.wait(tok)
                pto.store(out + tid, pto.load(tile + tid) * 3.0)
                pto.barrier_block()
            with pl.stage("copy_out", after="compute"):
                pto.store(y + base + k * T, out, T * 4)


@pto.kernel
def pipelined_add(a, b, y, ntiles):
    """Two load stages, one `wait_all`, an async store waited in its own stage."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    out = pto.alloc_local(T)
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                ta = pto.alloc_local(T)
                pto.async_load(ta, a + base + k * T, T * 4)
            with pl.stage("load_b", after="load_a"):
                tb = pto.alloc_local(T)
                pto.async_load(tb, b + base + k * T, T * 4)
            with pl.stage("add", after="load_b"):
                pto.wait_all()
                pto.store(out + tid, pto.load(ta + tid) + pto.load(tb + tid))
                pto.barrier_block()
            with pl.stage("store", after="add"):
                done = pto.async_store(y + base + k * T, out, T * 4)
                pto.wait(done)


@pto.kernel
def pipelined_sum(x, y, ntiles):
    """A loop-carried accumulator in the compute stage: y[lane] = sum over tiles of x."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    acc = 0.0
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                tile = pto.alloc_local(T)
                tok = pto.async_load(tile, x + base + k * T, T * 4)
            with pl.stage("accumulate", after="load"):
                pto.wait(tok)
                acc = acc + pto.load(tile + tid)
    pto.store(y + pto.get_global_id(), acc)


@pto.kernel
def matmul_token_pipeline(A, B, C, M, N, K, tile_m, tile_n, tile_k):
    """The article's matmul with both loads in one stage and a wait per token."""
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                tok_a = pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                                       rows=tile_m, src_stride=K)
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                tok_b = pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                                       rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load"):
                pto.wait(tok_a)
                pto.wait(tok_b)
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


@pto.kernel
def pipelined_in_place(x, y, ntiles):
    """Not double-buffered: the compute stage scales the loaded tile in place (a load-stage
    buffer written by compute), so the pass leaves the loop as it is and says why."""
    tid = pto.get_local_id()
    base = pto.get_block_id() * ntiles * T
    for k in range(ntiles):
        with pto.pipeline() as pl:
            with pl.stage("copy_in"):
                tile = pto.alloc_local(T)
                tok = pto.async_load(tile, x + base + k * T, T * 4)
            with pl.stage("compute", after="copy_in"):
                pto.wait(tok)
                pto.store(tile + tid, pto.load(tile + tid) * 3.0)
                pto.barrier_block()
            with pl.stage("copy_out", after="compute"):
                pto.store(y + base + k * T, tile, T * 4)
                pto.barrier_block()


@dataclass(frozen=True)
class Case:
    """One launch of a zoo kernel: host arguments, grid/block, and the NumPy result."""

    kernel: Any
    grid: Any
    block: Any
    args: tuple[Any, ...]
    output: int
    """Index in `args` of the output array."""
    reference: np.ndarray
    exact: bool = True
    """False: compare with a tolerance (summation order differs from NumPy's)."""


def _data(rng: np.random.Generator, blocks: int, ntiles: int) -> np.ndarray:
    """Input tiles; one unused tile per block when there are none (no empty tensors)."""
    return rng.standard_normal(blocks * max(ntiles, 1) * T).astype(np.float32)


def _stream(kernel: Any, ntiles: int, blocks: int, seed: int) -> Case:
    x = _data(np.random.default_rng(seed), blocks, ntiles)
    ref = x * np.float32(3) if ntiles else np.zeros_like(x)
    return Case(kernel, blocks, T, (x, np.zeros_like(x), ntiles), 1, ref)


def scale_case(ntiles: int, blocks: int = 2, seed: int = 0) -> Case:
    return _stream(pipelined_scale, ntiles, blocks, seed)


def scale_reversed_case(ntiles: int, blocks: int = 2, seed: int = 0) -> Case:
    return _stream(pipelined_scale_reversed, ntiles, blocks, seed)


def in_place_case(ntiles: int, blocks: int = 2, seed: int = 0) -> Case:
    return _stream(pipelined_in_place, ntiles, blocks, seed)


def add_case(ntiles: int, blocks: int = 2, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    a, b = _data(rng, blocks, ntiles), _data(rng, blocks, ntiles)
    ref = a + b if ntiles else np.zeros_like(a)
    return Case(pipelined_add, blocks, T, (a, b, np.zeros_like(a), ntiles), 2, ref)


def sum_case(ntiles: int, blocks: int = 2, seed: int = 0) -> Case:
    x = _data(np.random.default_rng(seed), blocks, ntiles)
    ref = np.zeros(blocks * T, np.float32)
    for blk in range(blocks):
        acc = np.zeros(T, np.float32)
        for k in range(ntiles):
            acc = acc + x[(blk * ntiles + k) * T:(blk * ntiles + k + 1) * T]
        ref[blk * T:(blk + 1) * T] = acc
    return Case(pipelined_sum, blocks, T, (x, np.full_like(ref, -1), ntiles), 1, ref)


def matmul_case(kernel: Any, m: int, n: int, k: int, tile: tuple[int, int, int],
                dtype: Any = np.float32, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, max(k, 1))).astype(dtype)[:, :k]
    b = rng.standard_normal((max(k, 1), n)).astype(dtype)[:k]
    if k == 0:  # no empty tensors: one unused column / row
        a, b = np.zeros((m, 1), dtype), np.zeros((1, n), dtype)
    tm, tn, tk = tile
    ref = a.astype(np.float32) @ b.astype(np.float32)
    return Case(kernel, (n // tn, m // tm), 64,
                (a, b, np.zeros((m, n), np.float32), m, n, k, tm, tn, tk), 2, ref,
                exact=False)


PIPELINED: dict[str, Callable[..., Case]] = {
    "matmul_tile": lambda trips, **kw: matmul_case(matmul_tile, 64, 128, 32 * trips,
                                                   (64, 64, 32), **kw),
    "matmul_token_pipeline": lambda trips, **kw: matmul_case(
        matmul_token_pipeline, 128, 64, 16 * trips, (64, 64, 16), np.float16, **kw),
    "pipelined_scale": lambda trips, **kw: scale_case(trips, **kw),
    "pipelined_scale_reversed": lambda trips, **kw: scale_reversed_case(trips, **kw),
    "pipelined_add": lambda trips, **kw: add_case(trips, **kw),
    "pipelined_sum": lambda trips, **kw: sum_case(trips, **kw),
    "pipelined_in_place": lambda trips, **kw: in_place_case(trips, **kw),
}
"""Every pipelined kernel of the zoo: name -> case builder taking the loop's trip count."""

NOT_DOUBLE_BUFFERED = {"pipelined_in_place": "also written by compute"}
"""Kernels `pto-double-buffer` must refuse, with (part of) the remark it gives."""
