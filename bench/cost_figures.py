"""Modelled cycles of the examples, the kernel zoo and the physics probes, both models side by side.

One line per figure:
  cost <figure>  table <cycles> (<bound>)  fused <cycles> (<bound>)
Every number is modelled by pypto's cost model (docs/cost-model.md), never measured. The
matmul lines compare the single-buffered kernel (the pipeline without `pto-double-buffer`) with
the default pipeline; the probes are the cases of issue 19 (an empty launch, atomics on one
address, strided lane loads, an untouched 32 MiB argument).
Run:  python bench/cost_figures.py [--quick]   (--quick: skip the 1024^3 matmul)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import pypto as pto  # noqa: E402
from fusion_pitfall import mma_direct, mma_padded  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402
from vector_add import vector_add  # noqa: E402
from tests.kernels import pipelined  # noqa: E402
from tests.kernels.test_histogram import histogram  # noqa: E402
from tests.kernels.test_layernorm import layernorm_rows  # noqa: E402
from tests.kernels.test_reduction import atomic_total, block_sum  # noqa: E402
from tests.kernels.test_saxpy import saxpy  # noqa: E402
from tests.kernels.test_softmax import softmax_rows  # noqa: E402
from tests.kernels.test_stencil import jacobi5  # noqa: E402
from tests.kernels.test_transpose import transpose  # noqa: E402

SINGLE = {"table": "pto-allocate-l1,pto-verify-barriers",
          "fused": "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"}
"""The default pipelines without `pto-double-buffer`: the kernel as written."""


@pto.kernel
def empty(x):
    pass


@pto.kernel
def atomic_one_address(x, n):
    pto.atomic_add(x, 1.0)


@pto.kernel
def atomic_own_address(x, n):
    pto.atomic_add(x + pto.get_global_id(), 1.0)


@pto.kernel
def strided_copy(x, y, stride):
    i = pto.get_global_id()
    pto.store(y + i, pto.load(x + i * stride))


def tensor(n: int, dtype: object = np.float32, fill: float | None = None) -> object:
    rng = np.random.default_rng(0)
    host = (rng.random(n) if fill is None else np.full(n, fill)).astype(dtype)
    t = pto.alloc_tensor(host.nbytes, dtype=host.dtype)
    pto.memcpy_h2d(t, host)
    return t


def figure(name: str, kernel: object, grid: object, block: object, args: tuple,
           single: bool = False) -> None:
    parts = []
    for model in ("table", "fused"):
        prof = pto.profile(kernel, grid=grid, block=block, args=args, model=model,
                           pipeline=SINGLE[model] if single else None)
        parts.append(f"{model} {prof.total_cycles} ({prof.launch.bound})")
    print(f"cost {name:<44} " + "  ".join(parts), flush=True)


def matmul_figures(size: int, tile: tuple[int, int, int], dtype: object) -> None:
    a, b = tensor(size * size, dtype), tensor(size * size, dtype)
    c = tensor(size * size)
    tm, tn, tk = tile
    args = (a, b, c, size, size, size, tm, tn, tk)
    grid = (size // tn, size // tm)
    label = f"matmul {size}^3 {np.dtype(dtype).name} {tm}x{tn}x{tk}"
    figure(label + " single-buffered", matmul_tile, grid, 64, args, single=True)
    figure(label + " default pipeline", matmul_tile, grid, 64, args)
    scratch = pto.alloc_tensor(32 << 20)
    figure(label + " + untouched 32 MiB arg", _with_scratch, grid, 64, (*args, scratch))


@pto.kernel
def _with_scratch(A, B, C, M, N, K, tile_m, tile_n, tile_k, scratch):
    row0 = pto.get_block_id(1) * tile_m
    col0 = pto.get_block_id(0) * tile_n
    C_tile = pto.alloc_local(tile_m * tile_n)
    pto.fill(C_tile, 0.0, tile_m * tile_n)
    for k0 in range(0, K, tile_k):
        with pto.pipeline() as pl:
            with pl.stage("load_a"):
                A_tile = pto.alloc_local(tile_m * tile_k, dtype=A.dtype)
                pto.async_load(A_tile, A + row0 * K + k0, tile_m * tile_k * A.itemsize,
                               rows=tile_m, src_stride=K)
            with pl.stage("load_b", after="load_a"):
                B_tile = pto.alloc_local(tile_k * tile_n, dtype=B.dtype)
                pto.async_load(B_tile, B + k0 * N + col0, tile_k * tile_n * B.itemsize,
                               rows=tile_k, src_stride=N)
            with pl.stage("compute", after="load_b"):
                pto.wait_all()
                pto.mma(C_tile, A_tile, B_tile, tile_m, tile_n, tile_k)
    pto.store(C + row0 * N + col0, C_tile, tile_m * tile_n * 4, rows=tile_m, dst_stride=N)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick

    for n, block in ((1024, 256), (1 << 20, 256)):
        figure(f"vector_add n={n}", vector_add, n // block, block,
               (tensor(n), tensor(n), tensor(n), n))
    k = 256
    figure("fusion_pitfall mma_direct K=256", mma_direct, 1, 64,
           (tensor(64 * k), tensor(k * 64), tensor(64 * 64), k))
    figure("fusion_pitfall mma_padded K=256", mma_padded, 1, 64,
           (tensor(64 * k), tensor(k * 64), tensor(64 * 64), k))
    matmul_figures(512, (64, 64, 64), np.float32)
    if not quick:
        matmul_figures(1024, (128, 128, 64), np.float16)

    n = 1 << 16
    figure("zoo saxpy n=2^16", saxpy, n // 256, 256, (2.0, tensor(n), tensor(n), n))
    figure("zoo histogram n=2^16 nbins=64", histogram, n // 256, 256,
           (tensor(n, np.int32, 3), tensor(64, np.int32, 0), tensor(n, np.int32, 0), n, 64))
    figure("zoo block_sum n=2^16", block_sum, n // 256, 256,
           (tensor(n), tensor(n // 256), n, 256, 8))
    figure("zoo atomic_total n=2^16", atomic_total, n // 256, 256,
           (tensor(n), tensor(1), n, 256, 8))
    rows, cols = 64, 1024
    figure("zoo softmax 64x1024", softmax_rows, rows, 128,
           (tensor(rows * cols), tensor(rows * cols), tensor(rows), tensor(rows), cols))
    figure("zoo layernorm 64x1024", layernorm_rows, rows, 128,
           (tensor(rows * cols), tensor(rows * cols), tensor(cols), tensor(cols), cols, 1e-5))
    h = w = 256
    figure("zoo jacobi5 256x256", jacobi5, (w // 16, h // 8), (16, 8),
           (tensor(h * w), tensor(h * w), h, w))
    figure("zoo transpose 256x256", transpose, (8, 8), (32, 8),
           (tensor(h * w), tensor(h * w), h, w))
    figure("zoo pipelined_add 64 blocks x 8 tiles", pipelined.pipelined_add, 64, 256,
           (tensor(64 * 8 * 256), tensor(64 * 8 * 256), tensor(64 * 8 * 256), 8))

    figure("probe empty launch, 1000 blocks", empty, 1000, 256, (tensor(16),))
    figure("probe atomic_add 256 lanes, one address", atomic_one_address, 1, 256,
           (tensor(256, fill=0), 256))
    figure("probe atomic_add 256 lanes, own addresses", atomic_own_address, 1, 256,
           (tensor(256, fill=0), 256))
    for stride in (1, 32):
        figure(f"probe lane loads stride {stride}, 256 lanes", strided_copy, 1, 256,
               (tensor(256 * 32), tensor(256), stride))


if __name__ == "__main__":
    main()
