"""First-launch compile time of the zoo's kernels on the native backend (docs/native.md#compile-time).

One line per zoo kernel (tests/kernels/zoo.py): what its first launch pays to compile it with
an empty disk cache (`NativeKernel` at the launch's block shape: the analyses, the lowering,
LLVM, the JIT), CPU milliseconds, the minimum of --repeat compiles after one warm-up, and
whether it meets issue 29's target (<= 300 ms); then the count. `--phases` splits it into the
lowering (pto -> LLVM IR text) and LLVM (parse, O3, code generation). There is no NumPy
equivalent of compiling: the figures stand alone.

With `--against REV` (a git revision of this repository), each tree compiles every kernel in a
process of its own (a temporary `git worktree` of REV), rounds alternated, and each line is

    first compile <kernel>  this tree <ms> ms  <REV> <ms> ms  x<ratio>  object code same|differs

`same` when both trees' object code is byte for byte identical: the kernel then runs the same
machine code, so a compile-time change cannot have changed its run time (for `differs`, time
both trees with bench/zoo.py --backend native).

Run:  python bench/compile_zoo.py [--only NAME[,...]] [--skip ...] [--repeat 3] [--phases]
                                  [--against REV [--rounds 2]]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import git_tree  # noqa: E402

TARGET_MS = 300.0
"""Issue 29's target for a kernel's first launch (lowering + LLVM + JIT)."""

_WORKER = r"""
import hashlib, json, os, sys, tempfile, time
sys.path.insert(0, os.getcwd())
import numpy as np
import pypto as pto
pto.set_backend("interpreter")
from tests.kernels.zoo import cases
from pypto.backend.native import jit
from pypto.backend.native.support import unsupported_reason

only, skip, repeat, phases = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
only = [s for s in only.split(",") if s]
skip = [s for s in skip.split(",") if s]


def compiled(case):
    host = case.inputs(np.random.default_rng(0))
    tensors = [pto.alloc_tensor(a.nbytes, dtype=a.dtype) for a in host.values()]
    args = case.lead + tuple(tensors) + tuple(case.scalars(host))
    return pto.compile(case.kernel, args=args, block=case.block, race_check=False)


def first(k):
    with tempfile.TemporaryDirectory() as cache:
        os.environ[jit.CACHE_ENV] = cache
        t0 = time.process_time()
        jit.NativeKernel(k.func, k.name, k.block)
        t = time.process_time() - t0
        obj = b"".join(p.read_bytes() for p in sorted(__import__("pathlib").Path(cache)
                                                      .glob("*.o")))
    return t, hashlib.sha256(obj).hexdigest()[:16]


def split(k):
    t0 = time.process_time()
    text = str(jit.llvm_module(k.func))
    t1 = time.process_time()
    jit.object_code(text)
    return t1 - t0, time.process_time() - t1


kernels = []
for case in cases("full"):
    if only and not any(case.name.startswith(p) for p in only):
        continue
    if skip and any(case.name.startswith(p) for p in skip):
        continue
    k = compiled(case)
    if unsupported_reason(k.func) is None:
        kernels.append((case.name, k))
first(kernels[0][1])  # warm-up: imports, xDSL's and LLVM's first-use costs
out = {}
for name, k in kernels:
    runs = [first(k) for _ in range(repeat)]
    row = {"ms": min(r[0] for r in runs) * 1e3, "object": runs[0][1]}
    if phases:
        parts = [split(k) for _ in range(repeat)]
        row["lowering"] = min(p[0] for p in parts) * 1e3
        row["llvm"] = min(p[1] for p in parts) * 1e3
    out[name] = row
print(json.dumps(out))
"""


def measure(tree: Path, only: str, skip: str, repeat: int, phases: bool) -> dict[str, Any]:
    """{kernel: {"ms", "object"[, "lowering", "llvm"]}} compiled by pypto of `tree`, in a
    process of its own."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    env.pop("PYPTO_NATIVE_CACHE", None)
    out = subprocess.run([sys.executable, "-c", _WORKER, only, skip, str(repeat),
                          "1" if phases else "0"], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated kernel name prefixes")
    parser.add_argument("--skip", default="", help="comma-separated kernel name prefixes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phases", action="store_true",
                        help="also the lowering and LLVM apart")
    parser.add_argument("--against", metavar="REV")
    parser.add_argument("--rounds", type=int, default=2,
                        help="alternated rounds of --against (default 2)")
    args = parser.parse_args()
    if not args.against:
        rows = measure(ROOT, args.only, args.skip, args.repeat, args.phases)
        for name, row in rows.items():
            extra = (f"  (lowering {row['lowering']:.0f} ms, LLVM {row['llvm']:.0f} ms)"
                     if args.phases else "")
            print(f"first compile {name:42s} {row['ms']:7.0f} ms"
                  f"{'' if row['ms'] <= TARGET_MS else '  > 300 ms'}{extra}", flush=True)
        met = sum(r["ms"] <= TARGET_MS for r in rows.values())
        print(f"first compile <= {TARGET_MS:.0f} ms: {met} of {len(rows)} kernels  "
              f"(sum {sum(r['ms'] for r in rows.values()):.0f} ms, load {load():.1f})")
        return
    with git_tree(args.against) as old:
        rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for _ in range(args.rounds):
            rounds.append((measure(ROOT, args.only, args.skip, args.repeat, args.phases),
                           measure(old, args.only, args.skip, args.repeat, args.phases)))
    met = [0, 0]
    for name in rounds[0][0]:
        new = min(r[0][name]["ms"] for r in rounds)
        base = min(r[1][name]["ms"] for r in rounds if name in r[1]) \
            if name in rounds[0][1] else float("nan")
        same = name in rounds[0][1] and rounds[0][0][name]["object"] == \
            rounds[0][1][name]["object"]
        met[0] += new <= TARGET_MS
        met[1] += base <= TARGET_MS
        print(f"first compile {name:42s} this tree {new:6.0f} ms  {args.against} "
              f"{base:6.0f} ms  x{new / base:.2f}  object code {'same' if same else 'differs'}",
              flush=True)
    print(f"first compile <= {TARGET_MS:.0f} ms: this tree {met[0]}, {args.against} {met[1]} of "
          f"{len(rounds[0][0])} kernels (minima of {args.rounds} alternated rounds x "
          f"{args.repeat}, load {load():.1f})")


if __name__ == "__main__":
    main()
