"""Tune the article's matmul (examples/pipeline_matmul.py) with `pto.autotune`.

C = A @ B at 1024 x 1024 x 1024 in float16 (float32 accumulation). The sweep covers tile_m,
tile_n, tile_k and the double-buffer stages (36 configs); every config is profiled by the cost
model (modelled cycles, not measured), configs that do not fit or that a pass refuses are listed
with the reason, the winner is checked on the interpreter against the first valid config, then
launched here and checked against NumPy. Results are cached on disk: a second run takes them
from the cache (`--no-cache` to profile again).

Run:  python examples/autotune_matmul.py [--size 1024] [--executor serial|processes|dask]
                                          [--workers 2] [--plot tune.png] [--no-cache]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import os
import sys
import time
from collections.abc import Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_matmul import matmul_tile  # noqa: E402  (the article's kernel, unchanged)

import pypto as pto  # noqa: E402

ARTICLE = {"tile_m": 64, "tile_n": 64, "tile_k": 64, "stages": 2}
"""The article's tiles, with the compiler's default double buffering."""

CONFIGS = [{"tile_m": tm, "tile_n": tn, "tile_k": tk, "stages": s}
           for tm in (64, 128, 256) for tn in (64, 128) for tk in (32, 64, 128) for s in (1, 2)]


@contextlib.contextmanager
def executor(kind: str, workers: int) -> Iterator[cf.Executor | None]:
    """None (this process), a process pool, or a Dask LocalCluster's executor."""
    if kind == "serial":
        yield None
    elif kind == "processes":
        with cf.ProcessPoolExecutor(workers) as pool:
            yield pool
    elif kind == "dask":
        from distributed import Client, LocalCluster  # pip install 'pypto[distributed]'

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            yield client.get_executor()
    else:
        raise SystemExit(f"unknown executor {kind!r}: serial, processes or dask")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = N = K (default 1024)")
    parser.add_argument("--executor", default="serial", help="serial, processes or dask")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plot", help="draw the cycles of every config into this image")
    parser.add_argument("--no-cache", action="store_true", help="profile every config again")
    opts = parser.parse_args()
    m = n = k = opts.size

    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    d_a = pto.alloc_tensor(a.nbytes, dtype=np.float16)
    d_b = pto.alloc_tensor(b.nbytes, dtype=np.float16)
    d_c = pto.alloc_tensor(m * n * 4, dtype=np.float32)
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)

    start = time.perf_counter()
    with executor(opts.executor, opts.workers) as ex:
        best = pto.autotune(matmul_tile, CONFIGS,
                            grid=lambda c: (n // c["tile_n"], m // c["tile_m"]), block=64,
                            args=(d_a, d_b, d_c, m, n, k), model="fused", check="winner",
                            executor=ex, cache=not opts.no_cache)
    tuned = time.perf_counter() - start
    print(best.table())
    s = best.stats
    print(f"\n{len(CONFIGS)} configs at {m}x{n}x{k} float16: {s.profiled} profiled, {s.cached} "
          f"from the cache, {s.checks} interpreter check(s), {tuned:.1f} s ({opts.executor})")
    article = next(r for r in best.records if r.config == ARTICLE)
    print(f"winner {best.config}: {best.cycles} modelled cycles = "
          f"{best.cycles / article.cycles:.2f}x the article's 64x64x64 tiles "
          f"({article.cycles} cycles)")
    if opts.plot:
        best.plot(opts.plot)
        print(f"plot drawn in {opts.plot}")

    pto.launch(matmul_tile, **best.launch_args)  # the winner, with its pass pipeline
    c = np.empty((m, n), dtype=np.float32)
    pto.memcpy_d2h(c, d_c)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.allclose(c, ref, rtol=1e-4, atol=1e-3), np.abs(c - ref).max()
    print(f"pypto: the winner's matmul {m}x{k} @ {k}x{n} (float16) matches NumPy; "
          f"whole run {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
