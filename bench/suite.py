"""How long the README's test command takes, part by part, in this checkout (one line each).

    python bench/suite.py            pytest -q -n auto, then lit -sv (with and without the
                                     lit fork server); run from a checkout with its .venv

Wall-clock seconds, and for pytest the CPU seconds of its processes (the figure that does not
depend on how busy the machine is; the lit fork server's commands are forks it does not wait
for, so lit's CPU is not shown). For the whole command from a fresh clone:
`d=$(mktemp -d) && git clone -q . $d && cd $d && time bash .ci/run`.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"


def timed(label: str, command: list[str], env: dict[str, str] | None = None,
          cpu_too: bool = False) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    status = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    cpu_text = f"{cpu:7.1f} s CPU" if cpu_too else " " * 13
    print(f"{label:<42} {wall:7.1f} s wall {cpu_text}  {status}", flush=True)


def main() -> None:
    python = str(BIN / "python") if (BIN / "python").exists() else sys.executable
    lit = str(BIN / "lit")
    timed("pytest -q -n auto", [python, "-m", "pytest", "-q", "-n", "auto", "-p",
                                "no:cacheprovider"], cpu_too=True)
    timed("lit -sv tests/filecheck (fork server)", [lit, "-sv", "tests/filecheck"])
    timed("lit -sv tests/filecheck (no fork server)", [lit, "-sv", "tests/filecheck"],
          env=dict(os.environ, PYPTO_LIT_FORKSERVER="0"))


if __name__ == "__main__":
    main()
