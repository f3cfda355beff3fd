"""A 200-config `pto.autotune` sweep: serially in this process, then on a Dask LocalCluster of
2 worker processes (and a 2-process pool), side by side in the same run, without the cache.

The article's matmul at 256^3 float16, tile_m x tile_n in {16..256}^2, tile_k in {16..128},
stages 1 or 2: 200 configs. One line per figure:
  autotune 200 configs <executor>: wall <s>  tasks <s> (cpu <s>)  checks <s>  (...)
`tasks` is the time the profiling tasks themselves took, summed over the workers (compile +
traced run + cost model per config), wall and CPU; the rest of the wall time (times the
workers) is the machinery: shipping the jobs, scheduling, the cluster's start — or, on a
machine whose cores other programs use, waiting for a core (wall well above cpu).
Run:  python bench/autotune.py [--size 256] [--skip-serial]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import pypto as pto  # noqa: E402
from pipeline_matmul import matmul_tile  # noqa: E402

TILES = (16, 32, 64, 128, 256)
CONFIGS = [{"tile_m": tm, "tile_n": tn, "tile_k": tk, "stages": s}
           for tm in TILES for tn in TILES for tk in (16, 32, 64, 128) for s in (1, 2)]


TABLES: list[str] = []


def sweep(size: int, executor: cf.Executor | None, label: str, started: float) -> None:
    matmul_tile.clear_cache()  # a forked pool would inherit the variants an earlier sweep made
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float16)
    d_a = pto.alloc_tensor(a.nbytes, dtype=np.float16)
    d_b = pto.alloc_tensor(a.nbytes, dtype=np.float16)
    d_c = pto.alloc_tensor(size * size * 4, dtype=np.float32)
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, a)
    result = pto.autotune(matmul_tile, CONFIGS,
                          grid=lambda c: (max(size // c["tile_n"], 1),
                                          max(size // c["tile_m"], 1)),
                          block=64, args=(d_a, d_b, d_c, size, size, size), executor=executor,
                          cache=False, progress=False)
    wall = time.perf_counter() - started
    s = result.stats
    rejected = sum(not r.ok for r in result.records)
    print(f"autotune {len(CONFIGS)} configs {label}: wall {wall:.1f} s  tasks "
          f"{s.task_seconds:.1f} s (cpu {s.task_cpu_seconds:.1f} s)  checks "
          f"{s.check_seconds:.1f} s  ({s.profiled} profiled, {rejected} rejected, best "
          f"{result.config} {result.cycles} cycles, same table as the first sweep: "
          f"{str(result.table()) == TABLES[0] if TABLES else 'first'})", flush=True)
    TABLES.append(str(result.table()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--skip-serial", action="store_true")
    opts = parser.parse_args()
    if not opts.skip_serial:
        sweep(opts.size, None, "serial", time.perf_counter())
    started = time.perf_counter()
    with cf.ProcessPoolExecutor(2) as pool:
        sweep(opts.size, pool, "process pool (2)", started)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("autotune dask: skipped (pip install 'pypto[distributed]')")
        return
    started = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        up = time.perf_counter() - started
        print(f"autotune dask LocalCluster of 2 worker processes: started in {up:.1f} s",
              flush=True)
        sweep(opts.size, client.get_executor(), "dask 2 workers", started)


if __name__ == "__main__":
    main()
