"""The cached launch's fixed cost against another tree of this repository: does a change make
the interpreter's (or the "tiered" default's) small launches slower? (issue targets such as
"the interpreter's own figures do not regress"; `bench/interp_against.py` does the same for the
zoo's kernels, whose run time hides a fraction of a microsecond.)

For REV (a git revision, e.g. the tree an issue was filed against) a temporary `git worktree`
is made; each tree then runs `bench/launch.py`'s fixed-cost figure — a cached `pto.launch` +
`pto.sync()` of vector_add at n = 2^10 (4 blocks of 256 lanes), CPU time per call, the best of
many batches — in its own process, rounds alternated (this tree, REV, this tree, ...) so that
load drifts hit both alike, with these parts of the same call measured beside it:

- `enqueue`: `pto.launch` alone (the plan lookup, the launch site, the queue entry);
- `execute`: the compiled kernel's `execute` (the backend choice, then the interpreter's run);
- `run`: the interpreter's `Executable.run` alone (binding, lane vectors, the generated code).

Per backend of this tree and figure, the best round's time beside REV's interpreter's (REV
may predate the backends) and their ratio, one line per figure; the backend "tiered" is the default's interpreted launches (`PYPTO_NATIVE_AFTER=never`: the native code
would replace them once paid for, docs/native.md#choosing-a-backend); a tree without
`pto.set_backend` has only the interpreter.

Run:  python bench/launch_against.py REV [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from timing import ROOT, git_tree

PROBE = r"""
import sys, time, timeit
sys.path.insert(0, {examples!r})
import pypto as pto
from pypto.runtime import stream as streams
from vector_add import vector_add
backend = {backend!r}
if backend != "interpreter" and not hasattr(pto, "set_backend"):
    print("none")
    raise SystemExit
if hasattr(pto, "set_backend"):
    pto.set_backend(backend)
n = 1 << 10
tensors = [pto.alloc_tensor(n * 4) for _ in range(3)]
args = (*tensors, n)
queue = tensors[0].device.default_stream
compiled = pto.compile(vector_add, args=args, block=256)
grid, block = (4, 1, 1), (256, 1, 1)


def full():
    pto.launch(vector_add, grid=4, block=256, args=args)
    pto.sync()


def enqueue():
    for _ in range(10):
        pto.launch(vector_add, grid=4, block=256, args=args)
    queue._queue.clear()  # (dropped, not run: only the enqueueing is timed)
    streams._BUSY.clear()


def best(fn, number, per=1):
    for _ in range(200):
        fn() if fn is not enqueue else full()
    return min(timeit.repeat(fn, number=number, repeat=15, timer=time.process_time)) \
        / number / per * 1e6


print(best(full, 2000), best(enqueue, 200, 10),
      best(lambda: compiled.execute(grid, block, args), 2000),
      best(lambda: compiled.executable.run(grid, block, args), 2000))
"""

FIGURES = ("launch + sync", "enqueue", "execute", "run")


def probe(tree: Path, backend: str) -> list[float] | None:
    """The four figures (us) of one process of `tree` on `backend`, None if it has no such."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1",
               PYPTO_NATIVE_AFTER="never")
    code = PROBE.format(examples=str(tree / "examples"), backend=backend)
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return None if out == ["none"] else [float(x) for x in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    opts = parser.parse_args()
    best: dict[tuple[str, str], list[float]] = {}
    with git_tree(opts.rev) as old:
        for _ in range(opts.rounds):
            for label, tree in (("this tree", ROOT), (opts.rev, old)):
                for backend in ("interpreter", "tiered"):
                    figures = probe(tree, backend)
                    if figures is None:
                        continue
                    seen = best.setdefault((label, backend), figures)
                    best[label, backend] = [min(a, b) for a, b in zip(seen, figures)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# cached launch + sync of vector_add n=2^10 (4 x 256 lanes), CPU us per call, best "
          f"of {opts.rounds} alternated rounds: this tree vs {opts.rev} (load {load:.1f})")
    base = best[opts.rev, "interpreter"]
    for backend in ("interpreter", "tiered"):
        figures = best.get(("this tree", backend))
        if figures is None:
            continue
        for name, new, old_value in zip(FIGURES, figures, base):
            print(f"{backend} {name}: this tree {new:.2f} us  {opts.rev} interpreter "
                  f"{old_value:.2f} us  x{new / old_value:.2f}")

if __name__ == "__main__":
    main()
