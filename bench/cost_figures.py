"""Modelled cycles of the examples, the kernel zoo and the physics probes: both models and both
shipped targets side by side, one line per figure.

  cost <figure>  default/table <cycles>  default/fused <cycles>  ascend910b/table <cycles>  ...

A figure bound by HBM bandwidth says `(HBM)` after its cycles; `n/a` means the kernel or the
target does not exist in the tree being measured (see --root); `src` is a hash of the
kernel's source. Every number is modelled by
pypto's cost model (docs/cost-model.md), never measured. The matmul lines compare the
single-buffered kernel (the pipeline without `pto-double-buffer`) with the default pipeline and
give the model's resource bound (`Profile.resource_bound`: no schedule of the kernel's
instructions is faster); the probes are the cases of issue 19 (an empty launch, atomics on one
address, strided lane loads, an untouched 32 MiB argument); `--zoo SCALE` adds every case of
the kernel zoo (tests/kernels/zoo.py) at that scale.

Run:  python bench/cost_figures.py [--quick] [--zoo quick] [--targets default,ascend910b] [--markdown]
      python bench/cost_figures.py --choose   # how pto-double-buffer chooses (and its remarks)
      python bench/cost_figures.py --stages   # the 512^3 f32 matmul's schedules, its bound
      python bench/cost_figures.py --root DIR   # pypto, examples/ and tests/ of another checkout
                                                 # (bench/cost_before_after.py uses it)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent.parent
MODELS = ("table", "fused")
SINGLE = {"table": "pto-allocate-l1,pto-verify-barriers",
          "fused": "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"}
"""The default pipelines without `pto-double-buffer`: the kernel as written."""


def setup(root: Path) -> Any:
    """Import pypto (and later examples/, tests/) from `root`; modules a checkout lacks (the
    zoo of an older tree) come from this one, compiled by `root`'s pypto."""
    sys.path[:0] = [str(root), str(root / "examples")]
    import pypto

    if Path(pypto.__file__).resolve().parent != (root / "pypto").resolve():
        raise SystemExit(f"cost_figures: imported pypto from {pypto.__file__}, not {root}")
    kernels = importlib.import_module("tests.kernels")
    extra = str(HERE / "tests" / "kernels")
    if extra not in kernels.__path__:
        kernels.__path__.append(extra)
    return pypto


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1024^3 matmul")
    parser.add_argument("--zoo", metavar="SCALE", help="also every zoo case at SCALE "
                        "(tiny, quick, full: tests/kernels/zoo.py)")
    parser.add_argument("--targets", default="default,ascend910b",
                        help="comma-separated target names (default: both shipped ones)")
    parser.add_argument("--root", type=Path, default=HERE,
                        help="the checkout whose pypto, examples and tests to measure")
    parser.add_argument("--no-curated", action="store_true",
                        help="only the zoo cases (with --zoo)")
    parser.add_argument("--debug", action="store_true", help="print why a figure is n/a")
    parser.add_argument("--choose", action="store_true",
                        help="only how pto-double-buffer chooses: the article's 512^3 f16 "
                        "matmul with choose=fusion and with the default pipeline, and the "
                        "pass's remark per target and model (docs/cost-model.md)")
    parser.add_argument("--stages", action="store_true",
                        help="only the 512^3 f32 matmul's schedules against its resource "
                        "bound: single-buffered, default pipeline, stages=3 (fused)")
    parser.add_argument("--markdown", action="store_true",
                        help="a Markdown table (docs/cost-model.md) instead of lines")
    options = parser.parse_args()
    pto = setup(options.root.resolve())
    Figures(pto, options.targets.split(","), options).run()


class Figures:
    def __init__(self, pto: Any, targets: list[str], options: argparse.Namespace):
        self.pto = pto
        self.targets = targets
        self.options = options
        self.header = False
        self.kernels = self._kernels()

    # one line ---------------------------------------------------------------------------------

    def figure(self, name: str, kernel: Any, grid: Any, block: Any, args: Any,
               single: bool = False, bound: bool = False,
               pipeline: dict[str, str] | None = None) -> None:
        """One line: `args` (a tuple, or a callable making fresh arguments) under every
        target and model; `bound`: also the fused model's resource bound per target;
        `pipeline`: the pipeline per model (default: the default pipeline, or the single-
        buffered one with `single`)."""
        parts = []
        bounds = []
        for target in self.targets:
            for model in MODELS:
                try:
                    prof = self.pto.profile(
                        kernel, grid=grid, block=block,
                        args=args() if callable(args) else args, model=model,
                        pipeline=SINGLE[model] if single else
                        pipeline[model] if pipeline else None,
                        target=None if target == "default" else target)
                except Exception:  # noqa: BLE001 - a figure the tree cannot make
                    parts.append(f"{target}/{model} n/a")
                    if self.options.debug:
                        traceback.print_exc()
                    continue
                hbm = " (HBM)" if prof.launch.bound != "compute" else ""
                parts.append(f"{target}/{model} {prof.total_cycles}{hbm}")
                if bound and model == "fused" and hasattr(prof, "resource_bound"):
                    rb = prof.resource_bound()
                    bounds.append(f"{target}/fused {rb.cycles} ({rb.resource})")
        if self.options.markdown:
            if not self.header:
                cols = [f"{t} `{m}`" for t in self.targets for m in MODELS]
                print("| figure | " + " | ".join(cols) + " |")
                print("|---" * (len(cols) + 1) + "|")
                self.header = True
            print(f"| {name} | " + " | ".join(p.split(" ", 1)[1] for p in parts) + " |")
            if bounds:
                cells = {b.split(" ", 1)[0]: b.split(" ", 1)[1] for b in bounds}
                row = [cells.get(f"{t}/{m}", "") for t in self.targets for m in MODELS]
                print(f"| {name}: resource bound | " + " | ".join(row) + " |")
            return
        print(f"cost {name:<52} " + "  ".join(parts) + source_key(kernel), flush=True)
        if bounds:
            print(f"cost {name + ' resource bound':<52} " + "  ".join(bounds), flush=True)

    # inputs -----------------------------------------------------------------------------------

    def tensor(self, n: int, dtype: object = np.float32, fill: float | None = None) -> Any:
        rng = np.random.default_rng(0)
        host = (rng.random(n) if fill is None else np.full(n, fill)).astype(dtype)
        t = self.pto.alloc_tensor(host.nbytes, dtype=host.dtype)
        self.pto.memcpy_h2d(t, host)
        return t

    # the figures ------------------------------------------------------------------------------

    def _kernels(self) -> dict[str, Any]:
        """Kernels of the checkout by name (None where it has no such kernel)."""
        found: dict[str, Any] = {}
        for module, names in (("vector_add", ["vector_add"]),
                              ("pipeline_matmul", ["matmul_tile"]),
                              ("fusion_pitfall", ["mma_direct", "mma_hoisted", "mma_padded"]),
                              ("tests.kernels.pipelined", ["pipelined_add"]),
                              ("tests.kernels.test_histogram", ["histogram"]),
                              ("tests.kernels.test_layernorm", ["layernorm_rows"]),
                              ("tests.kernels.test_reduction", ["atomic_total", "block_sum"]),
                              ("tests.kernels.test_saxpy", ["saxpy"]),
                              ("tests.kernels.test_softmax", ["softmax_rows"]),
                              ("tests.kernels.test_stencil", ["jacobi5"]),
                              ("tests.kernels.test_transpose", ["transpose"]),
                              ("softmax_tiles", ["softmax_tiles"]),
                              ("tests.kernels.test_tile_attention",
                               ["flash_attention_tiles"])):
            try:
                mod = importlib.import_module(module)
            except Exception:  # noqa: BLE001 - not in this checkout
                mod = None
            for name in names:
                found[name] = getattr(mod, name, None)
        found.update(probes(self.pto))
        return found

    def run(self) -> None:
        if self.options.choose:
            self.choosing()
            return
        if self.options.stages:
            self.stages()
            return
        if not self.options.no_curated:
            self.curated()
        if self.options.zoo:
            self.zoo(self.options.zoo)

    def curated(self) -> None:
        k, t = self.kernels, self.tensor
        for n, block in ((1024, 256), (1 << 20, 256)):
            self.figure(f"vector_add n={n}", k["vector_add"], n // block, block,
                        (t(n), t(n), t(n), n))
        kk = 256
        for name in ("mma_direct", "mma_hoisted", "mma_padded"):
            self.figure(f"fusion_pitfall {name} K=256", k[name], 1, 64,
                        (t(64 * kk), t(kk * 64), t(64 * 64), kk))
        self.matmul(512, (64, 64, 64), np.float32)
        if not self.options.quick:
            self.matmul(1024, (128, 128, 64), np.float16)
        n = 1 << 16
        self.figure("zoo saxpy n=2^16", k["saxpy"], n // 256, 256, (2.0, t(n), t(n), n))
        self.figure("zoo histogram n=2^16 nbins=64", k["histogram"], n // 256, 256,
                    (t(n, np.int32, 3), t(64, np.int32, 0), t(n, np.int32, 0), n, 64))
        self.figure("zoo block_sum n=2^16", k["block_sum"], n // 256, 256,
                    (t(n), t(n // 256), n, 256, 8))
        self.figure("zoo atomic_total n=2^16", k["atomic_total"], n // 256, 256,
                    (t(n), t(1), n, 256, 8))
        rows, cols = 64, 1024
        self.figure("zoo softmax 64x1024", k["softmax_rows"], rows, 128,
                    (t(rows * cols), t(rows * cols), t(rows), t(rows), cols))
        # lanes or tiles? (docs/language.md#lanes-or-tiles): the same softmax written with
        # the tile vector instructions, 8 rows a block
        self.figure("zoo softmax 64x1024 with tile ops", k["softmax_tiles"], rows // 8, 64,
                    (t(rows * cols), t(rows * cols), cols, 8, 8))
        self.figure("zoo flash attention n256 d64 tile ops", k["flash_attention_tiles"], 4, 64,
                    (t(256 * 64), t(256 * 64), t(256 * 64), t(256 * 64), 256, 64, 64, 64,
                     0.125))
        self.figure("zoo layernorm 64x1024", k["layernorm_rows"], rows, 128,
                    (t(rows * cols), t(rows * cols), t(cols), t(cols), cols, 1e-5))
        h = w = 256
        self.figure("zoo jacobi5 256x256", k["jacobi5"], (w // 16, h // 8), (16, 8),
                    (t(h * w), t(h * w), h, w))
        self.figure("zoo transpose 256x256", k["transpose"], (8, 8), (32, 8),
                    (t(h * w), t(h * w), h, w))
        self.figure("zoo pipelined_add 64 blocks x 8 tiles", k["pipelined_add"], 64, 256,
                    (t(64 * 8 * 256), t(64 * 8 * 256), t(64 * 8 * 256), 8))
        self.figure("probe empty launch, 1000 blocks", k["empty"], 1000, 256, (t(16),))
        self.figure("probe atomic_add 256 lanes, one address", k["atomic_one_address"], 1, 256,
                    (t(256, fill=0), 256))
        self.figure("probe atomic_add 256 lanes, own addresses", k["atomic_own_address"], 1,
                    256, (t(256, fill=0), 256))
        for stride in (1, 32):
            self.figure(f"probe lane loads stride {stride}, 256 lanes", k["strided_copy"], 1,
                        256, (t(256 * 32), t(256), stride))

    def matmul(self, size: int, tile: tuple[int, int, int], dtype: object) -> None:
        t = self.tensor
        a, b, c = t(size * size, dtype), t(size * size, dtype), t(size * size)
        tm, tn, tk = tile
        args = (a, b, c, size, size, size, tm, tn, tk)
        grid = (size // tn, size // tm)
        label = f"matmul {size}^3 {np.dtype(dtype).name} {tm}x{tn}x{tk}"
        kernel = self.kernels["matmul_tile"]
        self.figure(label + " single-buffered", kernel, grid, 64, args, single=True,
                    bound=True)
        self.figure(label + " default pipeline", kernel, grid, 64, args)
        scratch = self.pto.alloc_tensor(32 << 20)
        self.figure(label + " + untouched 32 MiB arg", self.kernels["with_scratch"], grid, 64,
                    (*args, scratch))

    def choosing(self) -> None:
        """docs/cost-model.md#how-pto-double-buffer-chooses: the fusion-aware rule (no
        costing) against the model's choice on the article's 512^3 f16 matmul (128 x 128 x 64
        tiles, 16 blocks), then the pass's remark (one block of the recorded launch)."""
        t = self.tensor
        size, tile = 512, (128, 128, 64)
        args = (t(size * size, np.float16), t(size * size, np.float16), t(size * size),
                size, size, size, *tile)
        grid, kernel = (size // tile[1], size // tile[0]), self.kernels["matmul_tile"]
        label = "matmul 512^3 float16 128x128x64"
        rule = "pto-double-buffer{choose=fusion},pto-allocate-l1,pto-verify-barriers"
        self.figure(label + " choose=fusion", kernel, grid, 64, args,
                    pipeline={m: rule for m in MODELS})
        self.figure(label + " default pipeline", kernel, grid, 64, args)
        if self.options.markdown:
            return
        for target in self.targets:
            for model in MODELS:
                ck = self.pto.compile(
                    self.pto.kernel(kernel.fn), args=args, block=64,
                    pipeline=f"pto-double-buffer{{model={model}}},pto-allocate-l1,"
                             f"pto-verify-barriers",
                    target=None if target == "default" else target)
                for remark in ck.remarks:
                    if "double-buffer" in remark.message:
                        print(f"remark {target}/{model}: {remark}", flush=True)

    def stages(self) -> None:
        """docs/cost-model.md ("The resource bound"): the 512^3 f32 matmul with 64^3 tiles under
        `fused` on each target: single-buffered, the default pipeline, three stages, and the
        resource bound."""
        t = self.tensor
        size, tile = 512, (64, 64, 64)
        args = (t(size * size), t(size * size), t(size * size), size, size, size, *tile)
        grid, kernel = (size // tile[1], size // tile[0]), self.kernels["matmul_tile"]
        label = "matmul 512^3 float32 64x64x64"
        self.figure(label + " single-buffered", kernel, grid, 64, args, single=True,
                    bound=True)
        self.figure(label + " default pipeline", kernel, grid, 64, args)
        three = "pto-double-buffer{stages=3},pto-allocate-l1,pto-verify-barriers"
        self.figure(label + " pto-double-buffer{stages=3}", kernel, grid, 64, args,
                    pipeline={m: three for m in MODELS})

    def zoo(self, scale: str) -> None:
        """Every case of the kernel zoo at `scale`, on fresh inputs (the zoo's own)."""
        zoo = importlib.import_module("tests.kernels.zoo")
        for case in zoo.cases(scale):
            def args(case: Any = case) -> tuple[Any, ...]:
                host = case.inputs(np.random.default_rng(0))
                tensors = []
                for a in host.values():
                    d = self.pto.alloc_tensor(a.nbytes, dtype=a.dtype)
                    self.pto.memcpy_h2d(d, a)
                    tensors.append(d)
                return case.lead + tuple(tensors) + tuple(case.scalars(host))

            self.figure(f"zoo {case.name} {case.size}", case.kernel, case.grid, case.block,
                        args)


def source_key(kernel: Any) -> str:
    """`  src <hash>` of the kernel's Python source (two trees' figures of one name compare
    the same kernel only when these agree), or nothing."""
    fn = getattr(kernel, "fn", None)
    try:
        text = inspect.getsource(fn) if fn is not None else None
    except (OSError, TypeError):
        text = None
    return f"  src {hashlib.sha1(text.encode()).hexdigest()[:8]}" if text else ""


def probes(pto: Any) -> dict[str, Any]:
    """The issue-19 probe kernels and the matmul with an untouched argument, compiled by the
    checkout's pypto (defined here so that both trees run the same source)."""

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

    @pto.kernel
    def with_scratch(A, B, C, M, N, K, tile_m, tile_n, tile_k, scratch):
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

    return {"empty": empty, "atomic_one_address": atomic_one_address,
            "atomic_own_address": atomic_own_address, "strided_copy": strided_copy,
            "with_scratch": with_scratch}


if __name__ == "__main__":
    main()
