"""The interpreter's zoo figures against another tree of this repository: does a change
regress the interpreter? (issue targets such as "the interpreter's own figures do not regress").

For REV (a git revision, e.g. the tree an issue was filed against) a temporary `git worktree`
is made; then `bench/zoo.py --clock cpu` (race detector on and off, each tree's own zoo and
kernels) runs in each tree in its own process, rounds alternated (this tree, REV, this tree,
...), so load drifts hit both alike. Per kernel both trees have, the figure is the best round's
race-off launch + sync time in each tree and their ratio; the last line is the geometric mean
of the ratios. A ratio below 1 means this tree is faster.

Output: one line per kernel (the bench's "one line per figure"), then the geometric mean.
Run:  python bench/interp_against.py REV [--rounds 2] [--repeat 3] [--only NAME[,...]]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

from timing import ROOT, git_tree


def zoo_times(tree: Path, repeat: int, only: str) -> dict[str, float]:
    """Race-off ms per kernel name from one `bench/zoo.py` run in `tree` (its own process)."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "bench/zoo.py", "--clock", "cpu", "--repeat", str(repeat)]
    if only:
        cmd += ["--only", only]
    out = subprocess.run(cmd, cwd=tree, env=env, check=True, capture_output=True,
                         text=True).stdout
    times = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and line.startswith("| ") and not cells[0] == "kernel":
            try:
                times[cells[0]] = float(cells[3])
            except ValueError:
                continue  # the separator row
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="zoo.py --repeat (default 3)")
    parser.add_argument("--only", default="", help="zoo.py --only: comma-separated prefixes")
    opts = parser.parse_args()
    with git_tree(opts.rev) as old:
        runs: dict[str, list[dict[str, float]]] = {"this": [], "old": []}
        for _ in range(opts.rounds):
            runs["this"].append(zoo_times(ROOT, opts.repeat, opts.only))
            runs["old"].append(zoo_times(old, opts.repeat, opts.only))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# interpreter (race detector off), best of {opts.rounds} alternated rounds of "
          f"bench/zoo.py --repeat {opts.repeat} --clock cpu: this tree vs {opts.rev} "
          f"(load {load:.1f})")
    ratios = []
    for name in runs["this"][0]:
        if not all(name in r for rs in runs.values() for r in rs):
            continue  # a kernel only one tree's zoo has
        new = min(r[name] for r in runs["this"])
        base = min(r[name] for r in runs["old"])
        ratios.append(new / base)
        print(f"interpreter {name}: this tree {new:.2f} ms  {opts.rev} {base:.2f} ms  "
              f"x{new / base:.2f}", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"interpreter geometric mean over {len(ratios)} kernels: x{geo:.2f} "
              f"(range x{min(ratios):.2f} to x{max(ratios):.2f})")


if __name__ == "__main__":
    main()
