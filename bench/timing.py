"""Timing helper shared by the bench scripts (each is run as `python bench/NAME.py`, which puts
this folder on sys.path)."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Seconds of the fastest of `repeat` calls, after one warm-up call (compiles and caches)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


@contextlib.contextmanager
def git_tree(rev: str) -> Iterator[Path]:
    """A temporary `git worktree` of revision `rev` of this repository (removed on exit), for
    the `--against REV` comparisons: each tree runs in its own process with its own pypto."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree),
                        rev], check=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False)
