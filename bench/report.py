"""Write docs/performance.md from a fresh run of bench/zoo.py and bench/launch.py.

The page is generated, never hand-edited: it holds the machine, the date, the load average when
the run started (the figures move with it on a shared machine), both benches' output verbatim,
and a table of issue 13's targets with the figure measured in this run next to each.
Run:  python bench/report.py [--quick] [--out docs/performance.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


ONE_THREAD = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def run(script: str, *args: str, one_thread: bool = False) -> str:
    env = dict(os.environ, **ONE_THREAD) if one_thread else None
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], check=True,
                          capture_output=True, text=True, cwd=ROOT, env=env)
    return done.stdout


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import xdsl  # noqa: F401

    return (f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, NumPy {np.__version__}")


def zoo_ratio(table: str, name: str, column: int) -> float | None:
    """The `column`-th ratio (0: race on, 1: race off, 2: race overhead) of a zoo row."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith(name):
            return float(cells[5 + column].rstrip("×"))
    return None


def grab(text: str, pattern: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def targets(zoo: str, launch: str) -> list[tuple[str, str, float | None, float]]:
    """(target, unit, measured, limit) for issue 13's targets measured by these benches."""
    rows = [
        ("fixed cost of a cached launch + sync (vector_add 2^10), wall", "µs",
         grab(launch, r"fixed cost: cached launch \+ sync vector_add n=2\^10 pypto ([\d.]+) us"),
         25.0),
        ("fixed cost of a cached launch + sync (vector_add 2^10), CPU", "µs",
         grab(launch, r"fixed cost \(CPU time\): cached launch \+ sync vector_add n=2\^10 "
                      r"pypto ([\d.]+) us"), 25.0),
        ("`import pypto` beyond its dependencies (NumPy, ml_dtypes, xDSL dialects), timed "
         "after importing them, CPU", "ms",
         grab(launch, r"pypto beyond its dependencies ([\d.]+) ms"), 50.0),
        ("cold compile() of vector_add right after import, CPU", "ms",
         grab(launch, r"right after import pypto ([\d.]+) ms"), 15.0),
        ("vector_add 2^22", "× NumPy", zoo_ratio(zoo, "vector_add", 1), 2.0),
        ("matmul 512, tile 64", "× NumPy", zoo_ratio(zoo, "matmul", 1), 2.5),
        ("block reduction 2^20, race check on", "× NumPy", zoo_ratio(zoo, "block_sum (", 0), 15.0),
        ("softmax 1024²", "× NumPy", zoo_ratio(zoo, "softmax_rows", 1), 6.0),
        ("layernorm 1024²", "× NumPy", zoo_ratio(zoo, "layernorm_rows", 1), 6.0),
        ("stencil 1024² (HBM)", "× NumPy", zoo_ratio(zoo, "jacobi5 (", 1), 6.0),
        ("transpose 1024²", "× NumPy", zoo_ratio(zoo, "transpose", 1), 3.0),
        ("histogram, L1 atomics, 2^20", "× NumPy", zoo_ratio(zoo, "histogram_l1", 1), 6.0),
        ("histogram, global atomics, 2^20", "× NumPy", zoo_ratio(zoo, "histogram (", 1), 10.0),
        ("race-check overhead, block reduction", "×", zoo_ratio(zoo, "block_sum (", 2), 1.25),
        ("race-check overhead, transpose", "×", zoo_ratio(zoo, "transpose", 2), 1.25),
    ]
    return rows


def zoo_rows(table: str) -> list[tuple[str, float, float, float]]:
    """(kernel, ÷ NumPy race on, race off, race-check overhead) of every zoo row."""
    out = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[5].endswith("×"):
            out.append((cells[0], *(float(c.rstrip("×")) for c in cells[5:8])))
    return out


def issue20(zoo: str, launch: str) -> list[str]:
    """Issue 20's targets over the whole zoo, and the table of style pairs (bench/zoo.py
    PAIRS): each style as users write it beside its tuned twin, same run."""
    sys.path.insert(0, str(ROOT))
    from tests.kernels.zoo import PAIRS  # the zoo's cases and pairs live there, not in bench/

    rows = zoo_rows(zoo)
    if not rows:
        return []
    by_name = {r[0]: r for r in rows}
    slow = [r for r in rows if r[2] > 8.0]
    racy = [r for r in rows if r[3] > 1.25]
    lines = ["## Targets (issue 20)", "",
             "| target | limit | measured | met |", "|---|---:|---:|---|",
             f"| zoo kernels within the limit, race check off | 8 × NumPy | "
             f"{len(rows) - len(slow)} of {len(rows)} | {'yes' if not slow else 'no'} |",
             f"| zoo kernels within the race-check overhead limit | 1.25 × | "
             f"{len(rows) - len(racy)} of {len(rows)} | {'yes' if not racy else 'no'} |"]
    va, mm = by_name.get("vector_add"), next((r for r in rows if r[0].startswith("matmul")), None)
    if va:
        lines.append(f"| vector_add 2^22 | 1.2 × NumPy | {va[2]:g} × NumPy | "
                     f"{'yes' if va[2] <= 1.2 else 'no'} |")
    if mm:
        lines.append(f"| matmul 512, tile 64 | 2.5 × NumPy | {mm[2]:g} × NumPy | "
                     f"{'yes' if mm[2] <= 2.5 else 'no'} |")
    fixed = grab(launch, r"fixed cost \(CPU time\): cached launch \+ sync vector_add "
                         r"n=2\^10 pypto ([\d.]+) us")
    if fixed is not None:
        lines.append(f"| fixed cost of a cached launch + sync (vector_add 2^10), CPU | 15 µs | "
                     f"{fixed:g} µs | {'yes' if fixed <= 15.0 else 'no'} |")
    pairs = [(a, b) for a, b in PAIRS if a in by_name and b in by_name]
    worst = max((by_name[a][2] / by_name[b][2] for a, b in pairs), default=None)
    if worst is not None:
        lines.append(f"| a style over its tuned twin, worst pair (race off) | 1.5 × | "
                     f"{worst:.2f} × | {'yes' if worst <= 1.5 else 'no'} |")
    lines += ["", f"Over 8 × NumPy (race off): "
              + (", ".join(f"{r[0]} {r[2]:g}×" for r in slow) or "none") + ". Race-check "
              "overhead over 1.25 ×: " + (", ".join(f"{r[0]} {r[3]:g}×" for r in racy) or "none")
              + ".", ""]
    if pairs:
        lines += ["## Styles and their tuned twins (same run, race check off)", "",
                  "| written as | ÷ NumPy | tuned twin | ÷ NumPy | style ÷ twin |",
                  "|---|---:|---|---:|---:|"]
        for a, b in pairs:
            ra, rb = by_name[a][2], by_name[b][2]
            lines.append(f"| {a} | {ra:g}× | {b} | {rb:g}× | {ra / rb:.2f}× |")
        lines.append("")
    return lines


SLOW_KERNELS = """\
## What stands in the way (profiles of 2026-12-02)

The kernels the zoo still finds above 8 × NumPy, with cProfile of one launch (race check off);
each runs on the planned paths (docs/interpreter.md), so what remains is the work itself:

- **gemm smem 16x16 (no mma)**: 256 inner steps on a 65,536-lane vector, each two L1 row views
  (~40 µs apiece) and a multiply and an add (~20 µs apiece). The program's bits need 16.7 M
  float32 multiplies and 16.7 M adds in the program's order; element-wise NumPy at >= 0.3 ns
  each is ~10 ms, about 25 × one BLAS product: 8 × is out of reach while results stay exact.
  Loading every k at once (one (k, lanes) view) was measured: 80 µs against 98 µs a step.
- **popcount (32-step loop)**: 96 NumPy passes (shift, and, add) against NumPy's one
  `bitwise_count`; on cache-sized vectors of 2^15 lanes each pass costs ~0.2 ns per element, a
  floor of ~7 ×. Writing into dead temporaries (`out=`) would save ~25 %.
- **gemv (three spellings)**: the k loop is ~90 % of a launch: copying rows of A, tiling x,
  and a multiply and an add on fresh 512 KiB temporaries, against NumPy's one `A @ x`
  (0.06-0.2 ms). Fusing the loads into the multiply measured no faster.
- **L1 trees** (block_sum, block_sum_warp_tail, atomic_total, warp_sync_sum): each vector
  of blocks pays ~0.15-0.2 ms of Python (windows, masks, L1 reset and poison) times 8 vectors, a
  tree step ~50 µs on a (512, s) strided slice; the warp tree's steps iterate 4,096 inner loops
  of s elements whatever s is. Vectors of 2^19 lanes made the trees 20-40 % faster and argmin 2 ×
  slower: it would need a per-kernel decision. atomic_total compares against NumPy's int32 sum,
  which is faster than its float sum.
- **argmin block (two arrays)**: masked copies ~27 %, row stores ~46 %, their race checks ~16 %;
  each tree step is 5 row copies, 5 element-wise ops and 2 stores under a mask computed from data
  (the bit-trick masked copy already beats `np.copyto(where=)` 3-4 ×).
- **scale double-buffered (async_load)**: the copies' own data movement (a strided store of 256
  tiles per vector), per-block offsets and 16 k steps of Python for a 0.4 ms NumPy multiply.
- **saxpy (fma)**: the exact fused multiply-add (pypto/exact.py) is ~10 NumPy passes per chunk
  against NumPy's 2 (which rounds twice); near-tie sums take a second check (~20 %).
"""


def matmul_section(out: str) -> list[str]:
    """Issue 20's matmul: what was tried, and `bench/matmul.py`'s lines (the figure beside
    the same work done by NumPy alone, and pypto's time by part)."""
    if not out.strip():
        return []
    return [
        "## matmul 512 (`python bench/matmul.py`)", "",
        "The pipelined matmul (tile 64, 8 x 8 blocks, 8 k steps) must, by the semantics, multiply "
        "512 tile pairs with one BLAS call of 64³ each (the bits of the per-block general path) "
        "and add each product into C in float32. Ways tried earlier and rejected: fewer, larger "
        "GEMMs (other calls than the per-block path's: other bits on another BLAS); BLAS "
        "accumulating into C (NumPy has no API for beta = 1); copies left in HBM until "
        "something other than the mma reads them (hooks in every access path and the "
        "debugger). The last one is what the interpreter does now, with one hook for all "
        "lane accesses: while lazy work is pending the block's copy record counts as a copy "
        "in flight, and every lane access path already takes its checked route then (docs/interpreter.md, \"Lazy tile "
        "work\"). Loads whose blocks' tiles form an affine grid stay in HBM and the mma "
        "multiplies them in place; the fill of C is folded into the first accumulation; the L1 "
        "of a tile-only kernel is poisoned lazily; each copy and mma keeps a plan with the "
        "arena. Before: 4.1× on 2026-11-30; on 2026-12-01 under load 7-9, bench/zoo.py of the "
        "code before and after, run one after the other: 3.3-3.8× before, 2.2-2.9× after "
        "(race check off; the figure moves with the load, less than the absolute times). "
        "Then (issue 20) the copies' plans are found again for per-block offsets and those "
        "offsets are remembered per launch shape: on 2026-12-02, bench/zoo.py --only matmul "
        "--clock cpu of main and of the change, alternately: 2.7-3.0× before, 2.4-2.5× after; "
        "bench/matmul.py: 2.90-2.99× before, 2.63× after.", "",
        "```text", out.strip(), "```", "",
        "What stands in the way of less: the tile products alone are 1.3-1.4× NumPy's one "
        "512³ product (64³ GEMMs are less efficient than one large one), the accumulation "
        "passes over C and the store add about 0.5×; pypto's copies, checks and generated "
        "code add the rest, which grows with the machine's load (the interpreter's Python runs "
        "with caches the BLAS work has just evicted).", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (not for the docs)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--skip", default="", help="zoo kernels to leave out (name prefixes)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="cpu",
                        help="the zoo's clock (default cpu: robust to a loaded shared machine)")
    opts = parser.parse_args()
    quick = ["--quick"] if opts.quick else []
    started = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()
    # CPU time counts every thread, and an idle BLAS thread spins: one BLAS thread then
    skip = ["--skip", opts.skip] if opts.skip else []
    zoo = run("zoo.py", "--clock", opts.clock, *quick, *skip, one_thread=opts.clock == "cpu")
    native = run("zoo.py", "--clock", opts.clock, "--backend", "native", *quick, *skip,
                 one_thread=opts.clock == "cpu")
    launch = run("launch.py", *quick)
    matmul = "" if opts.quick else run("matmul.py", "--clock", opts.clock, one_thread=True)
    rows = targets(zoo, launch)
    lines = [
        "# Performance",
        "",
        "<!-- Generated by `python bench/report.py`; do not edit by hand: re-run it. -->",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {machine()}. Load average when the run "
        f"started: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min); on a shared "
        "machine the absolute times move with the load, the same-run ratios much less."
        + (" **Quick sizes (--quick): not the issue's sizes.**" if opts.quick else ""),
        "",
        "Every figure is pypto's `launch + sync` beside the idiomatic NumPy equivalent in the "
        "same run (`bench/zoo.py`: median of per-repetition ratios, fresh inputs each "
        "repetition, outputs checked against NumPy; `bench/launch.py`: fixed cost, scaling "
        f"curves, NumPy copy bandwidth). The zoo is timed with the {opts.clock} clock"
        + (" (this process's CPU time, all threads: descheduling by other work on the machine "
           "does not count; NumPy and pypto's `mma` both use one BLAS thread)"
           if opts.clock == "cpu" else "") + ".",
        "",
        "## Targets (issue 13)",
        "",
        "| target | limit | measured | met |",
        "|---|---:|---:|---|",
    ]
    for name, unit, measured, limit in rows:
        got = "—" if measured is None else f"{measured:g} {unit}"
        met = "—" if measured is None else ("yes" if measured <= limit else "no")
        lines.append(f"| {name} | {limit:g} {unit} | {got} | {met} |")
    lines += [""] + issue20(zoo, launch) + ([SLOW_KERNELS] if not opts.quick else []) + \
        matmul_section(matmul)
    lines += ["## The kernel zoo (`python bench/zoo.py`)", "", zoo.strip(), ""]
    lines += kept_section(Path(opts.out), BACKEND_DEFAULT)
    lines += kept_section(Path(opts.out), INTERP_AGAINST)
    lines += native_section(native, launch)
    lines += [
              "## Fixed cost and scaling (`python bench/launch.py`)", "", "```text",
              launch.strip(), "```", ""]
    fit_va = re.search(r"vector_add fit: fixed (-?[\d.]+) us \+ ([\d.]+) ns/element "
                       r"\(copy bandwidth moves 12 bytes in ([\d.]+) ns\)", launch)
    fit_red = re.search(r"block_sum fit: fixed (-?[\d.]+) us \+ ([\d.]+) ns/element "
                        r"\(copy bandwidth reads 4 bytes in ([\d.]+) ns\)", launch)
    fixed_cpu = grab(launch, r"fixed cost \(CPU time\): cached launch \+ sync vector_add "
                             r"n=2\^10 pypto ([\d.]+) us")
    if fit_va:
        fixed, per, copy = (float(g) for g in fit_va.groups())
        intercept = (f"the fit's intercept, {fixed:.0f} µs, is noise at this load; "
                     if fixed < 0 else f"the fit's intercept is {fixed:.0f} µs; ")
        lines.append(f"vector_add: a fixed cost per launch ({fixed_cpu} µs of CPU measured "
                     f"above; {intercept}wall-clock curve) plus {per:.2f} ns per element (the "
                     f"slope over sizes >= 2^16), {per / copy:.1f}× the time NumPy's copy "
                     f"bandwidth in this run needs to move its 12 bytes per element: large "
                     f"launches are memory-bound within that factor, small ones are dominated "
                     f"by the fixed cost.")
    if fit_red:
        fixed, per, copy = (float(g) for g in fit_red.groups())
        lines.append(f"The block reduction costs {per:.2f} ns per element (slope over sizes "
                     f">= 2^14), {per / copy:.0f}× "
                     f"the copy-bandwidth time for its 4 bytes: it is bound by interpreter "
                     f"work per tree step (a lane window, 2-D slices of L1, masks, the race "
                     f"detector's bookkeeping), not by memory.")
    Path(opts.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {opts.out}")


BACKEND_DEFAULT = "## Which backend by default"
"""A section this script keeps from the page as it is: `bench/backend_default.py` measures it, a
separate run of fresh processes per kernel and backend (too slow to repeat with the others)."""


INTERP_AGAINST = "## The interpreter against earlier trees"
"""Kept too: `bench/interp_against.py REV` measures it against another tree, in its own run."""


def kept_section(page: Path, heading: str) -> list[str]:
    """The section under `heading` of the existing page (to the next `## `), or nothing."""
    text = page.read_text() if page.exists() else ""
    start = text.find(f"\n{heading}")
    if start < 0:
        return []
    end = text.find("\n## ", start + 1)
    return text[start + 1:end if end >= 0 else len(text)].rstrip("\n").split("\n") + [""]


def native_section(native: str, launch: str) -> list[str]:
    """The native backend's column: bench/zoo.py --backend native (native ÷ NumPy beside the
    interpreter's, same repetitions) and bench/launch.py's native fixed cost and compile."""
    fixed = re.findall(r"^native (?:fixed cost|compile).*$", launch, re.M)
    return ["## The native backend (`python bench/zoo.py --backend native`)", "",
            "The kernels the native backend compiles (docs/native.md), timed beside the "
            "interpreter (race check off) and NumPy in the same repetitions; first compile is "
            "lowering + LLVM + JIT with an empty disk cache, then the load from the disk "
            "cache. The native fixed cost and compile time of vector_add are "
            "`bench/launch.py`'s:", "", "```text", *fixed, "```", "", native.strip(), ""]


if __name__ == "__main__":
    main()
