"""The kernel zoo: every kernel of tests/kernels/ and examples/ at a chosen size, with fresh
inputs, its idiomatic NumPy equivalent and a check of its outputs against NumPy (bit for bit
where the kernel's order of operations is emulated exactly, else with a tolerance).

`bench/zoo.py` times the cases against NumPy; tests/backend/interpreter/fast_paths/
test_fast_paths.py runs them with the fast paths switched on and off.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes  # noqa: F401 - bfloat16 registered with NumPy
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import pypto as pto  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from softmax_tiles import softmax_tiles  # noqa: E402
from tests.kernels import (test_bitwise as kb, test_double_buffer as kd,  # noqa: E402
                           test_half_precision as kh, test_histogram as khist,
                           test_language_features as kl, test_layernorm as kln,
                           test_reduction as kr, test_saxpy as ks, test_softmax as ksm, test_stencil as kst,
                           test_transpose as kt, test_users_zoo as ku)
from tests.kernels import test_tile_attention as katt  # noqa: E402
from tests.kernels import test_tile_layernorm as ktln  # noqa: E402
from vector_add import vector_add  # noqa: E402

Arrays = dict[str, np.ndarray]


@dataclass
class Case:
    """One zoo kernel at one size.

    `inputs(rng)` makes fresh host arrays (inputs and output buffers, by name, in the kernel's
    argument order) and `scalars` the remaining arguments; `numpy(arrays)` is the idiomatic
    NumPy equivalent (what a user would write instead of the kernel); `check(outs, arrays)`
    compares the kernel's outputs (every array after the launch, by name) with a reference."""
    name: str
    size: str
    kernel: Any
    grid: Any
    block: Any
    inputs: Callable[[np.random.Generator], Arrays]
    scalars: Callable[[Arrays], tuple[Any, ...]]
    numpy: Callable[[Arrays], Any]
    check: Callable[[Arrays, Arrays], None]
    lead: tuple[Any, ...] = ()     # scalar arguments that come before the arrays


def eq(a: np.ndarray, b: np.ndarray) -> None:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.shape != b.shape or not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
        bad = np.flatnonzero(np.asarray(a).reshape(-1) != np.asarray(b).reshape(-1))
        raise AssertionError(f"pypto result differs from NumPy at {bad[:5]} ({bad.size} elements)")


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32).reshape(shape)


SCALES = {  # (big, mid, side, matmul size): element-wise, L1/atomics, 2-D side, matmul
    "full": (1 << 22, 1 << 20, 1024, 512),     # the sizes of issue 13's table
    "quick": (1 << 16, 1 << 14, 128, 128),
    "tiny": (1 << 12, 1 << 12, 64, 128),       # tests/backend/interpreter/fast_paths/
}


def cases(scale: str = "full") -> list[Case]:
    """The zoo at one of the SCALES."""
    big, mid, side, mm = SCALES[scale]
    out: list[Case] = []

    def add(*args: Any) -> None:
        out.append(Case(*args))

    # --- element-wise -------------------------------------------------------------------
    add("vector_add", f"2^{big.bit_length() - 1}", vector_add, big // 256, 256,
        lambda r: {"a": f32(r, big), "b": f32(r, big), "o": np.zeros(big, np.float32)},
        lambda d: (big,), lambda d: d["a"] + d["b"],
        lambda o, d: eq(o["o"], d["a"] + d["b"]))
    add("saxpy (fma)", f"2^{big.bit_length() - 1}", ks.saxpy, big // 256, 256,
        lambda r: {"x": f32(r, big), "y": f32(r, big)},
        lambda d: (big,), lambda d: np.float32(2.5) * d["x"] + d["y"],
        lambda o, d: eq(o["y"], ks.fused_ref(2.5, d["x"], d["y"])), (2.5,))
    gs_grid = max(1, big // (256 * 16))
    add("saxpy grid-stride", f"2^{big.bit_length() - 1}", ks.saxpy_grid_stride, gs_grid, 256,
        lambda r: {"x": f32(r, big), "y": f32(r, big)},
        lambda d: (big, big // (gs_grid * 256)), lambda d: np.float32(2.5) * d["x"] + d["y"],
        lambda o, d: eq(o["y"], ks.fused_ref(2.5, d["x"], d["y"])), (2.5,))
    nops = kb.NOPS

    def int_inputs(r: np.random.Generator) -> Arrays:
        b = r.integers(-2**31, 2**31, mid).astype(np.int32)
        b[b == 0] = 1
        return {"a": r.integers(-2**31, 2**31, mid).astype(np.int32), "b": b,
                "out": np.zeros(mid * nops, np.int32)}
    add("int_ops (9 integer ops)", f"2^{mid.bit_length() - 1}", kb.int_ops, mid // 256, 256,
        int_inputs, lambda d: (mid,), lambda d: kb.int_ops_ref(d["a"], d["b"]),
        lambda o, d: eq(o["out"], kb.int_ops_ref(d["a"], d["b"]).reshape(-1)))

    def popcount_ref(d: Arrays) -> np.ndarray:
        return np.bitwise_count(d["a"].view(np.uint32)).astype(np.int32)
    add("popcount (32-step loop)", f"2^{mid.bit_length() - 1}", kb.popcount, mid // 256, 256,
        lambda r: {"a": r.integers(-2**31, 2**31, mid).astype(np.int32),
                   "out": np.zeros(mid, np.int32)},
        lambda d: (mid, 32), popcount_ref, lambda o, d: eq(o["out"], popcount_ref(d)))

    def gelu_ref(d: Arrays) -> np.ndarray:
        x, t = d["x"], np.float16
        return t(0.5) * x * (t(1.0) + np.tanh(t(0.7978845608) * (x + t(0.044715) * x * x * x)))
    add("gelu_tanh float16", f"2^{mid.bit_length() - 1}", kh.gelu_tanh, mid // 256, 256,
        lambda r: {"x": (r.standard_normal(mid) * 3).astype(np.float16),
                   "y": np.zeros(mid, np.float16)},
        lambda d: (mid,), gelu_ref, lambda o, d: eq(o["y"], gelu_ref(d)))

    def clamp_ref(d: Arrays) -> tuple[np.ndarray, int]:
        x = d["x"]
        y = (np.clip(x, np.float32(kl.LO), np.float32(kl.HI)) + np.float32(kl.OFFSET)) \
            * np.float32(kl.SCALE)
        return y, int(np.count_nonzero((x < kl.LO) | (x > kl.HI)))

    def clamp_check(o: Arrays, d: Arrays) -> None:
        y, count = clamp_ref(d)
        eq(o["y"], y)
        assert int(o["clamped"][0]) == count
    add("clamp_scale (select, atomic count)", f"2^{mid.bit_length() - 1}", kl.clamp_scale,
        mid // 256, 256,
        lambda r: {"x": (r.standard_normal(mid) * 2).astype(np.float32),
                   "y": np.zeros(mid, np.float32), "clamped": np.zeros(1, np.int32)},
        lambda d: (mid,), clamp_ref, clamp_check)

    def horner_ref(d: Arrays) -> np.ndarray:
        coef, x = d["coef"], d["x"]
        acc = np.full(x.size, coef[8], np.float32)
        for k in range(7, -1, -1):
            acc = acc * x + coef[k]
        return acc
    add("horner degree 8", f"2^{mid.bit_length() - 1}", kl.horner, mid // 256, 256,
        lambda r: {"coef": r.standard_normal(9).astype(np.float32),
                   "x": r.standard_normal(mid).astype(np.float32),
                   "y": np.zeros(mid, np.float32)},
        lambda d: (mid, 8), horner_ref, lambda o, d: eq(o["y"], horner_ref(d)))
    small = mid >> 4

    def collatz_ref(d: Arrays) -> np.ndarray:
        v = d["start"].copy()
        count = np.zeros(v.size, np.int32)
        for _ in range(kl.MAX_STEPS):
            live = v != 1
            v = np.where(live, np.where(v % 2 == 0, v // 2, 3 * v + 1), v)
            count += live
        return count
    add("collatz (200-step divergent loop)", f"2^{small.bit_length() - 1}", kl.collatz_steps,
        small // 256, 256,
        lambda r: {"start": r.integers(1, 10**5, small).astype(np.int32),
                   "steps": np.zeros(small, np.int32)},
        lambda d: (small,), collatz_ref, lambda o, d: eq(o["steps"], collatz_ref(d)))

    def classify_ref(d: Arrays) -> np.ndarray:
        x = d["x"]
        return np.select([x < 0, x == 0, x >= 100, x >= 10], [-1, 0, 3, 2], 1).astype(np.int32)
    add("classify (early returns)", f"2^{mid.bit_length() - 1}", kl.classify, mid // 256, 256,
        lambda r: {"x": r.integers(-50, 500, mid).astype(np.int32),
                   "out": np.zeros(mid, np.int32)},
        lambda d: (mid,), classify_ref, lambda o, d: eq(o["out"], classify_ref(d)))

    # --- L1, barriers ---------------------------------------------------------------------
    add("warp_reverse (L1, warp barrier)", f"2^{mid.bit_length() - 1}", kl.warp_reverse,
        mid // 256, 256,
        lambda r: {"x": f32(r, mid), "y": np.zeros(mid, np.float32)},
        lambda d: (mid,), lambda d: d["x"].reshape(-1, 32)[:, ::-1].copy(),
        lambda o, d: eq(o["y"], d["x"].reshape(-1, 32)[:, ::-1].reshape(-1)))
    add("block_reverse (L1, block barrier)", f"2^{mid.bit_length() - 1}", kl.block_reverse,
        mid // 256, 256,
        lambda r: {"x": f32(r, mid), "y": np.zeros(mid, np.float32)},
        lambda d: (256,), lambda d: d["x"].reshape(-1, 256)[:, ::-1].copy(),
        lambda o, d: eq(o["y"], d["x"].reshape(-1, 256)[:, ::-1].reshape(-1)))
    ntiles = 16
    db_blocks = mid // (ntiles * kd.T)
    add("scale double-buffered (async_load)", f"2^{mid.bit_length() - 1}",
        kd.scale_double_buffered, db_blocks, kd.T,
        lambda r: {"x": f32(r, mid), "y": np.zeros(mid, np.float32)},
        lambda d: (ntiles, True), lambda d: d["x"] * np.float32(3.0),
        lambda o, d: eq(o["y"], d["x"] * np.float32(3.0)))

    # --- reductions ------------------------------------------------------------------------
    red_args = (256, 8)
    nb = mid // 256
    add("block_sum (L1 tree)", f"2^{mid.bit_length() - 1}", kr.block_sum, nb, 256,
        lambda r: {"x": f32(r, mid), "partial": np.zeros(nb, np.float32)},
        lambda d: (mid,) + red_args, lambda d: d["x"].reshape(-1, 256).sum(axis=1),
        lambda o, d: eq(o["partial"], kr.tree_partials(d["x"], 256)))
    add("block_sum_warp_tail", f"2^{mid.bit_length() - 1}", kr.block_sum_warp_tail, nb, 256,
        lambda r: {"x": f32(r, mid), "partial": np.zeros(nb, np.float32)},
        lambda d: (mid, 256, 3), lambda d: d["x"].reshape(-1, 256).sum(axis=1),
        lambda o, d: eq(o["partial"], kr.tree_partials(d["x"], 256)))
    gs_blocks, iters = max(1, nb // 16), min(16, nb)

    def grid_stride_ref(d: Arrays) -> np.ndarray:
        lanes = d["x"].reshape(iters, gs_blocks * 256)
        acc = np.zeros(gs_blocks * 256, np.float32)
        for k in range(iters):
            acc = acc + lanes[k]
        return kr.tree_partials(acc, 256)
    add("grid_stride_sum", f"2^{mid.bit_length() - 1}", kr.grid_stride_sum, gs_blocks, 256,
        lambda r: {"x": f32(r, mid), "partial": np.zeros(gs_blocks, np.float32)},
        lambda d: (mid, iters) + red_args,
        lambda d: d["x"].reshape(iters, -1).sum(axis=0).reshape(-1, 256).sum(axis=1),
        lambda o, d: eq(o["partial"], grid_stride_ref(d)))
    add("atomic_total int32 (tree + atomic)", f"2^{mid.bit_length() - 1}", kr.atomic_total,
        nb, 256,
        lambda r: {"x": r.integers(-1000, 1000, mid).astype(np.int32),
                   "total": np.zeros(1, np.int32)},
        lambda d: (mid,) + red_args, lambda d: d["x"].sum(dtype=np.int32),
        lambda o, d: eq(o["total"], np.array([d["x"].sum(dtype=np.int32)], np.int32)))

    def softmax_np(d: Arrays) -> tuple[np.ndarray, ...]:
        x = d["x"]
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        s = e.sum(axis=1, keepdims=True)
        return e / s, m, s

    def softmax_check(o: Arrays, d: Arrays) -> None:
        x = d["x"]
        m = x.max(axis=1)
        eq(o["row_max"], m)
        # pto.exp: float64 exp rounded once to float32 (docs/language.md)
        e = np.exp((x - m[:, None]).astype(np.float64)).astype(np.float32)
        s = ksm.emulated_sum(e)
        eq(o["row_sum"], s)
        eq(o["y"], e / s[:, None])
    add("softmax_rows", f"{side}x{side}", ksm.softmax_rows, side, ksm.BLOCK,
        lambda r: {"x": r.standard_normal((side, side)).astype(np.float32),
                   "y": np.zeros((side, side), np.float32),
                   "row_max": np.zeros(side, np.float32), "row_sum": np.zeros(side, np.float32)},
        lambda d: (side,), softmax_np, softmax_check)

    def layernorm_np(d: Arrays) -> np.ndarray:
        x, eps = d["x"], kln.EPS
        return ((x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps)
                * d["gamma"] + d["beta"])
    add("layernorm_rows", f"{side}x{side}", kln.layernorm_rows, side, kln.BLOCK,
        lambda r: {"x": r.standard_normal((side, side)).astype(np.float32),
                   "y": np.zeros((side, side), np.float32),
                   "gamma": (1 + 0.5 * r.standard_normal(side)).astype(np.float32),
                   "beta": r.standard_normal(side).astype(np.float32)},
        lambda d: (side, kln.EPS), layernorm_np,
        lambda o, d: eq(o["y"], kln.emulated_layernorm(d["x"], d["gamma"], d["beta"], kln.EPS)))

    # --- 2-D ---------------------------------------------------------------------------------
    sgrid = ((side + kst.BX - 1) // kst.BX, (side + kst.BY - 1) // kst.BY)
    for kern, label in ((kst.jacobi5, "jacobi5 (HBM)"), (kst.jacobi5_tiled, "jacobi5_tiled (L1)")):
        add(label, f"{side}x{side}", kern, sgrid, (kst.BX, kst.BY),
            lambda r: {"u": f32(r, side, side), "out": np.zeros((side, side), np.float32)},
            lambda d: (side, side), lambda d: kst.jacobi_ref(d["u"]),
            lambda o, d: eq(o["out"], kst.jacobi_ref(d["u"])))
    tgrid = (side // kt.TILE, side // kt.TILE)
    add("transpose (L1 tile)", f"{side}x{side}", kt.transpose, tgrid, (kt.TILE, kt.ROWS),
        lambda r: {"src": f32(r, side, side), "dst": np.zeros((side, side), np.float32)},
        lambda d: (side, side), lambda d: np.ascontiguousarray(d["src"].T),
        lambda o, d: eq(o["dst"], d["src"].T))
    tile = 64
    add("matmul (pipelined, tile 64)", f"{mm}^3", matmul_tile, (mm // tile, mm // tile), 64,
        lambda r: {"a": r.standard_normal((mm, mm)).astype(np.float32),
                   "b": r.standard_normal((mm, mm)).astype(np.float32),
                   "c": np.zeros((mm, mm), np.float32)},
        lambda d: (mm, mm, mm, tile, tile, tile), lambda d: d["a"] @ d["b"],
        lambda o, d: close(o["c"], d["a"] @ d["b"], rtol=1e-4, atol=2e-6 * mm))

    # --- atomics -----------------------------------------------------------------------------
    nbins = 256

    def hist_check(o: Arrays, d: Arrays) -> None:
        counts = np.bincount(d["data"] % nbins, minlength=nbins).astype(np.int32)
        eq(o["bins"], counts)
        if "olds" in o:      # each bin's lanes saw 0 .. count-1 once, in lane order
            order = np.argsort(d["data"] % nbins, kind="stable")
            b_sorted = (d["data"] % nbins)[order]
            starts = np.searchsorted(b_sorted, b_sorted, side="left")
            ref = np.empty(mid, np.int32)
            ref[order] = np.arange(mid) - starts
            eq(o["olds"], ref)
    add("histogram (global atomics)", f"2^{mid.bit_length() - 1}", khist.histogram,
        mid // 256, 256,
        lambda r: {"data": r.integers(-10**6, 10**6, mid).astype(np.int32),
                   "bins": np.zeros(nbins, np.int32), "olds": np.zeros(mid, np.int32)},
        lambda d: (mid, nbins), lambda d: np.bincount(d["data"] % nbins, minlength=nbins),
        hist_check)
    add("histogram_l1 (L1 atomics)", f"2^{mid.bit_length() - 1}", khist.histogram_l1,
        mid // 256, 256,
        lambda r: {"data": r.integers(-10**6, 10**6, mid).astype(np.int32),
                   "bins": np.zeros(nbins, np.int32)},
        lambda d: (mid, nbins, 256), lambda d: np.bincount(d["data"] % nbins, minlength=nbins),
        hist_check)
    tiles(add, side)
    users(add, big, mid, side, mm)
    return out


TILE_KERNELS = ("softmax (tile ops, double-buffered)", "flash attention (tile ops + mma)",
                "layernorm (tile ops)")
"""The zoo's kernels written with tile vector instructions (bench/tiles.py times them)."""


def tiles(add: Callable[..., None], side: int) -> None:
    """Kernels written with the tile vector instructions (docs/language.md#lanes-or-tiles)."""
    tile_rows, blocks = 8, max(1, side // 32)

    def softmax_np(d: Arrays) -> np.ndarray:
        x = d["x"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def softmax_check(o: Arrays, d: Arrays) -> None:
        x = d["x"].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        close(o["y"], (e / e.sum(axis=1, keepdims=True)).astype(np.float32), 1e-5, 1e-7)
    add("softmax (tile ops, double-buffered)", f"{side}x{side}", softmax_tiles, blocks, 64,
        lambda r: {"x": (r.standard_normal((side, side)) * 3).astype(np.float32),
                   "y": np.zeros((side, side), np.float32)},
        lambda d: (side, tile_rows, side // blocks), softmax_np, softmax_check)
    n, dim = side, 64
    br = min(64, side // 2)

    def attention_np(d: Arrays) -> np.ndarray:
        s = d["q"] @ d["k"].T / np.float32(math.sqrt(dim))
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return (p / p.sum(axis=1, keepdims=True)) @ d["v"]
    add("flash attention (tile ops + mma)", f"n{n} d{dim}", katt.flash_attention_tiles,
        n // br, 64,
        lambda r: {name: r.standard_normal((n, dim)).astype(np.float32) for name in "qkv"}
        | {"o": np.zeros((n, dim), np.float32)},
        lambda d: (n, dim, br, br, 1.0 / math.sqrt(dim)), attention_np,
        lambda o, d: close(o["o"], katt.attention_reference(d["q"], d["k"], d["v"])
                           .astype(np.float32), 1e-4, 1e-5))

    def layernorm_np(d: Arrays) -> np.ndarray:
        x = d["x"]
        m = x.mean(1, keepdims=True)
        return (x - m) / np.sqrt(x.var(1, keepdims=True) + ktln.EPS) * d["gamma"] + d["beta"]
    add("layernorm (tile ops)", f"{side}x{side}", ktln.layernorm_tiles, side // tile_rows, 32,
        lambda r: {"x": r.standard_normal((side, side)).astype(np.float32),
                   "y": np.zeros((side, side), np.float32),
                   "gamma": (1 + 0.5 * r.standard_normal(side)).astype(np.float32),
                   "beta": r.standard_normal(side).astype(np.float32)},
        lambda d: (side, tile_rows, ktln.EPS), layernorm_np,
        lambda o, d: eq(o["y"], ktln.emulated_layernorm_tiles(d["x"], d["gamma"], d["beta"],
                                                              ktln.EPS)))


PAIRS = [  # (style as users write it, its tuned twin): docs/performance.md's table of pairs
    ("scale2d ids (block_id*block_dim+local_id)", "scale2d global ids"),
    ("gemv block/row A+(row*ncols+c)", "gemv block/row A+row*ncols+c"),
    ("conv1d taps in L1 (broadcast)", "conv1d taps in HBM"),
    ("dot interleaved tree (2*s*tid)", "block_sum (L1 tree)"),
    ("warp_sync_sum (red+warp*32+lane)", "block_sum_warp_tail"),
    ("axpy masked tail (2^k+77)", "saxpy (fma)"),
    ("scale grid-stride (k*stride)", "scale (one lane per element)"),
]


def users(add: Callable[..., None], big: int, mid: int, side: int, mm: int) -> None:
    """The users' zoo (tests/kernels/test_users_zoo.py): kernels written as CUDA, Triton and
    Ascend C authors write them, several beside a tuned twin (PAIRS)."""
    bx, by = 16, 8
    grid2 = ((side + bx - 1) // bx, (side + by - 1) // by)
    for name, kern in (("scale2d ids (block_id*block_dim+local_id)", ku.scale2d_ids),
                       ("scale2d global ids", ku.scale2d_global)):
        add(name, f"{side}x{side}", kern, grid2, (bx, by),
            lambda r: {"x": f32(r, side, side), "y": np.zeros((side, side), np.float32)},
            lambda d: (side, side, 1.5, -0.25), lambda d: ku.scale2d_ref(d["x"], 1.5, -0.25),
            lambda o, d: eq(o["y"], ku.scale2d_ref(d["x"], 1.5, -0.25)))
    edge = side - side * 3 // 128  # 1000 of 1024: a partial last block column (2-D tails)
    add("scale2d ids, partial edge blocks", f"{edge}x{edge}", ku.scale2d_ids,
        ((edge + bx - 1) // bx, (edge + by - 1) // by), (bx, by),
        lambda r: {"x": f32(r, edge, edge), "y": np.zeros((edge, edge), np.float32)},
        lambda d: (edge, edge, 1.5, -0.25), lambda d: ku.scale2d_ref(d["x"], 1.5, -0.25),
        lambda o, d: eq(o["y"], ku.scale2d_ref(d["x"], 1.5, -0.25)))
    dz = max(2, side // 64)
    add("add3d (3-D blocks)", f"{dz}x{side // 4}x{side}", ku.add3d,
        (side // 8, side // 4 // 4, dz // 2), (8, 4, 2),
        lambda r: {"x": f32(r, dz, side // 4, side), "y": f32(r, dz, side // 4, side),
                   "out": np.zeros((dz, side // 4, side), np.float32)},
        lambda d: (dz, side // 4, side), lambda d: ku.add3d_ref(d["x"], d["y"]),
        lambda o, d: eq(o["out"], ku.add3d_ref(d["x"], d["y"])))
    add("transpose naive (strided stores)", f"{side}x{side}", ku.transpose_naive,
        (side // 16, side // 16), (16, 16),
        lambda r: {"src": f32(r, side, side), "dst": np.zeros((side, side), np.float32)},
        lambda d: (side, side), lambda d: np.ascontiguousarray(d["src"].T),
        lambda o, d: eq(o["dst"], d["src"].T))
    nt = mid + 77
    add("axpy masked tail (2^k+77)", f"2^{mid.bit_length() - 1}+77", ku.axpy_tail,
        (nt + 255) // 256, 256,
        lambda r: {"x": f32(r, nt), "y": f32(r, nt)},
        lambda d: (nt, 0.75), lambda d: np.float32(0.75) * d["x"] + d["y"],
        lambda o, d: eq(o["y"], ku.axpy_ref(d["x"], d["y"], 0.75)))
    add("gather idx (index array, tail)", f"2^{mid.bit_length() - 1}+77", ku.gather_idx,
        (nt + 255) // 256, 256,
        lambda r: {"x": f32(r, nt), "idx": r.integers(0, nt, nt).astype(np.int32),
                   "y": np.zeros(nt, np.float32)},
        lambda d: (nt,), lambda d: d["x"][d["idx"]],
        lambda o, d: eq(o["y"], d["x"][d["idx"]]))
    gs = max(1, mid // (256 * 16))
    iters = -(-mid // (gs * 256))
    add("scale grid-stride (k*stride)", f"2^{mid.bit_length() - 1}", ku.scale_grid_stride,
        gs, 256,
        lambda r: {"x": f32(r, mid), "y": np.zeros(mid, np.float32)},
        lambda d: (mid, iters, 3.0), lambda d: np.float32(3.0) * d["x"],
        lambda o, d: eq(o["y"], np.float32(3.0) * d["x"]))
    add("scale (one lane per element)", f"2^{mid.bit_length() - 1}", ku.scale_flat,
        -(-mid // 256), 256,
        lambda r: {"x": f32(r, mid), "y": np.zeros(mid, np.float32)},
        lambda d: (mid, 3.0), lambda d: np.float32(3.0) * d["x"],
        lambda o, d: eq(o["y"], np.float32(3.0) * d["x"]))
    add("mixed f16/f32 axpy", f"2^{mid.bit_length() - 1}", ku.mixed_axpy, mid // 256, 256,
        lambda r: {"x16": (r.standard_normal(mid) * 4).astype(np.float16), "y": f32(r, mid),
                   "z16": np.zeros(mid, np.float16)},
        lambda d: (mid, 0.5), lambda d: ku.mixed_ref(d["x16"], d["y"], 0.5),
        lambda o, d: (eq(o["y"], ku.mixed_ref(d["x16"], d["y"], 0.5)[0]),
                      eq(o["z16"], ku.mixed_ref(d["x16"], d["y"], 0.5)[1])))
    rows, blk = side, min(128, side)
    for name, kern in (("gemv block/row A+(row*ncols+c)", ku.gemv_block_row),
                       ("gemv block/row A+row*ncols+c", ku.gemv_block_row_tuned)):
        add(name, f"{rows}x{side}", kern, rows, blk,
            lambda r: {"A": f32(r, rows, side), "x": f32(r, side),
                       "y": np.zeros(rows, np.float32)},
            lambda d: (side, blk, blk.bit_length() - 1), lambda d: d["A"] @ d["x"],
            lambda o, d: eq(o["y"], ku.gemv_block_ref(d["A"], d["x"], blk)))
    lrows, lcols = side * 4, 64
    add("gemv lane/row (naive)", f"{lrows}x{lcols}", ku.gemv_lane_row, lrows // 256, 256,
        lambda r: {"A": f32(r, lrows, lcols), "x": f32(r, lcols),
                   "y": np.zeros(lrows, np.float32)},
        lambda d: (lrows, lcols), lambda d: d["A"] @ d["x"],
        lambda o, d: eq(o["y"], ku.gemv_lane_ref(d["A"], d["x"])))
    add("argmax rows (lane/row, two-value if)", f"{lrows}x{lcols}", ku.argmax_rows,
        lrows // 256, 256,
        lambda r: {"x": f32(r, lrows, lcols), "idx": np.zeros(lrows, np.int32),
                   "val": np.zeros(lrows, np.float32)},
        lambda d: (lrows, lcols), lambda d: (d["x"].argmax(axis=1), d["x"].max(axis=1)),
        lambda o, d: (eq(o["idx"], d["x"].argmax(axis=1).astype(np.int32)),
                      eq(o["val"], d["x"].max(axis=1))))
    nb = mid // 256

    def argmin_check(o: Arrays, d: Arrays) -> None:
        rows_ = d["x"].reshape(nb, 256)
        eq(o["out_idx"], (rows_.argmin(axis=1) + np.arange(nb) * 256).astype(np.int32))
        eq(o["out_val"], rows_.min(axis=1))
    add("argmin block (L1 tree, two arrays)", f"2^{mid.bit_length() - 1}", ku.argmin_block,
        nb, 256,
        lambda r: {"x": f32(r, mid), "out_idx": np.zeros(nb, np.int32),
                   "out_val": np.zeros(nb, np.float32)},
        lambda d: (mid, 256, 8), lambda d: d["x"].reshape(nb, 256).argmin(axis=1), argmin_check)
    add("dot interleaved tree (2*s*tid)", f"2^{mid.bit_length() - 1}", ku.dot_interleaved,
        nb, 256,
        lambda r: {"a": f32(r, mid), "b": f32(r, mid), "partial": np.zeros(nb, np.float32)},
        lambda d: (mid, 256, 8), lambda d: (d["a"] * d["b"]).reshape(-1, 256).sum(axis=1),
        lambda o, d: eq(o["partial"], ku.dot_interleaved_ref(d["a"], d["b"], 256)))
    add("warp_sync_sum (red+warp*32+lane)", f"2^{mid.bit_length() - 1}", ku.warp_sync_sum,
        nb, 256,
        lambda r: {"x": f32(r, mid), "partial": np.zeros(nb, np.float32)},
        lambda d: (mid, 8), lambda d: d["x"].reshape(-1, 256).sum(axis=1),
        lambda o, d: eq(o["partial"], ku.warp_sync_ref(d["x"], 8)))
    add("scan block (Hillis-Steele, int32)", f"2^{mid.bit_length() - 1}", ku.scan_block,
        nb, 256,
        lambda r: {"x": r.integers(-100, 100, mid).astype(np.int32),
                   "y": np.zeros(mid, np.int32)},
        lambda d: (mid, 256, 4), lambda d: np.cumsum(d["x"].reshape(-1, 256), axis=1),
        lambda o, d: eq(o["y"], ku.scan_ref(d["x"], 256)))
    for name, kern in (("conv1d taps in L1 (broadcast)", ku.conv1d_taps_l1),
                       ("conv1d taps in HBM", ku.conv1d_taps_hbm)):
        add(name, f"2^{mid.bit_length() - 1}, 9 taps", kern, nb, 256,
            lambda r: {"x": f32(r, mid), "taps": f32(r, 9), "y": np.zeros(mid, np.float32)},
            lambda d: (mid, 256, 9), lambda d: np.convolve(d["x"], d["taps"][::-1], "same"),
            lambda o, d: eq(o["y"], ku.conv1d_ref(d["x"], d["taps"])))
    loops(add, mid, side)
    gm = mm // 2
    add("gemm smem 16x16 (no mma)", f"{gm}^3", ku.gemm_smem, (gm // 16, gm // 16), (16, 16),
        lambda r: {"A": f32(r, gm, gm), "B": f32(r, gm, gm), "C": np.zeros((gm, gm), np.float32)},
        lambda d: (gm, gm), lambda d: d["A"] @ d["B"],
        lambda o, d: eq(o["C"], ku.gemm_ref(d["A"], d["B"])))


def loops(add: Callable[..., None], mid: int, side: int) -> None:
    """The loop-heavy kernels issue 29's "Why" names: a sorting network, a generator,
    quantise-and-pack, a tiled blur, CSR row sums (tests/kernels/test_users_zoo.py), each beside
    what a NumPy user writes instead."""
    sb = ku.SORT_BLOCK
    add("bitonic sort per block (L1 network)", f"2^{mid.bit_length() - 1}, {sb}/block",
        ku.bitonic_sort_block, mid // sb, sb,
        lambda r: {"x": r.standard_normal(mid).astype(np.float32),
                   "y": np.zeros(mid, np.float32)},
        lambda d: (sb, sb.bit_length() - 1), lambda d: np.sort(d["x"].reshape(-1, sb), axis=1),
        lambda o, d: eq(o["y"], np.sort(d["x"].reshape(-1, sb), axis=1).reshape(-1)))
    gens, iters = mid // 16, 16
    add("xorshift32 generator (per-lane loop)", f"{gens} lanes x {iters}", ku.xorshift32,
        -(-gens // 256), 256,
        lambda r: {"seeds": r.integers(1, 2**31, gens).astype(np.int32),
                   "out": np.zeros(gens * iters, np.int32)},
        lambda d: (gens, iters), lambda d: ku.xorshift_ref(d["seeds"], iters),
        lambda o, d: eq(o["out"], ku.xorshift_ref(d["seeds"], iters)))
    qcols = 256
    qrows, nw = mid // qcols, mid // 4

    def quantize_np(d: Arrays) -> np.ndarray:
        q = np.rint(d["x"] * d["inv_scale"][:, None])
        return np.clip(q, -127, 127).astype(np.int8).reshape(-1).view(np.int32)
    add("int8 quantise-and-pack (per-row scale)", f"{qrows}x{qcols}", ku.quantize_pack_int8,
        nw // 256, 256,
        lambda r: {"x": r.standard_normal((qrows, qcols)).astype(np.float32),
                   "inv_scale": (20 + 20 * r.random(qrows)).astype(np.float32),
                   "packed": np.zeros(nw, np.int32)},
        lambda d: (nw, qcols // 4), quantize_np,
        lambda o, d: eq(o["packed"], ku.quantize_ref(d["x"], d["inv_scale"])))
    bt = ku.BT
    add("blur 3x3 tiled (L1 tile + halo)", f"{side}x{side}", ku.blur3x3_tiled,
        (side // bt, side // bt), (bt, bt),
        lambda r: {"img": f32(r, side, side), "out": np.zeros((side, side), np.float32)},
        lambda d: (side, side), lambda d: ku.blur_ref(d["img"]),
        lambda o, d: eq(o["out"], ku.blur_ref(d["img"])))
    crows = mid // 16

    def csr_inputs(r: np.random.Generator) -> Arrays:
        rowptr, vals = ku.csr_matrix(r, crows, crows * 16)
        return {"rowptr": rowptr, "vals": vals, "out": np.zeros(crows, np.float32)}

    def csr_np(d: Arrays) -> np.ndarray:
        rowptr, vals = d["rowptr"], d["vals"]
        sums = np.add.reduceat(vals, np.minimum(rowptr[:-1], vals.size - 1))
        sums[rowptr[1:] == rowptr[:-1]] = 0
        return sums
    add("CSR row sums (lane/row, ragged loop)", f"{crows} rows, ~16/row", ku.csr_row_sums,
        -(-crows // 256), 256, csr_inputs, lambda d: (crows,), csr_np,
        lambda o, d: eq(o["out"], ku.csr_ref(d["rowptr"], d["vals"])))


def check_and_free(case: Case, tensors: dict[str, Any], host: Arrays) -> Arrays:
    """Copy every tensor of a launch of `case` back, free it, and check the outputs against
    the reference (`case.check`); returns the outputs."""
    outs = {}
    for k, t in tensors.items():
        outs[k] = np.empty_like(host[k])
        pto.memcpy_d2h(outs[k], t)
        t.free()
    case.check(outs, host)
    return outs


def run_once(case: Case, rng: np.random.Generator, **options: Any) -> tuple[Arrays, Arrays]:
    """One launch on fresh inputs, compiled with `options`; (outputs, inputs) after checking
    the outputs against NumPy."""
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    for k, a in host.items():
        pto.memcpy_h2d(tensors[k], a)
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernel = pto.compile(case.kernel, args=args, block=case.block, **options)
    pto.launch(kernel, grid=case.grid, block=case.block, args=args)
    return check_and_free(case, tensors, host), host
