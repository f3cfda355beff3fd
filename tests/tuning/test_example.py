"""examples/autotune_matmul.py runs (at a small size) and its second run comes from the cache."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autotune_matmul.py"


def run(tmp_path: Path) -> str:
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, str(EXAMPLE), "--size", "128"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_example_tunes_checks_and_reruns_from_the_cache(tmp_path: Path) -> None:
    first = run(tmp_path)
    profiled = re.search(r"36 configs at 128x128x128 float16: (\d+) profiled, 0 from the cache",
                         first)
    assert profiled and int(profiled.group(1)) == 24  # 12 have 256-row tiles
    assert "the article's 64x64x64 tiles" in first
    assert "matches NumPy" in first
    assert "bad launch" in first  # 256-row tiles do not fit a 128-row matrix
    second = run(tmp_path)
    assert "0 profiled, 24 from the cache, 0 interpreter check(s)" in second
    winner = [line for line in first.splitlines() if line.startswith("winner")]
    assert winner and winner == [line for line in second.splitlines()
                                 if line.startswith("winner")]
