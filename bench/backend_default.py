"""Which backend should be the default? The zoo's kernels timed as a user script sees them.

For every zoo kernel (tests/kernels/zoo.py) and every backend policy ("interpreter", "native",
"auto", "tiered"), a fresh Python process (PYPTO_BACKEND=<policy>) runs what a user script
does: `pto.launch(kernel, ...)` + `pto.sync()` N times, with the kernel's compile inside the
first launch. The figure is the wall time from before the first launch to after the N-th sync
(N = 1, 10, 100 in one process: the sums after the 1st, 10th and 100th launch), with a cold
disk cache (an empty PYPTO_NATIVE_CACHE: the native code's first compile is paid) and a warm
one (the object code already on disk from an earlier run). The interpreter does not use the
native cache: its cold and warm figures are one run. NumPy's time for N calls of the kernel's
idiomatic equivalent (tests/kernels/zoo.py) is measured in the interpreter's process, beside.
The race detector stays at its default (on for kernels whose lanes access L1: "auto" and
"tiered" then run the interpreter), as a user's script gets it. The first launch's outputs
(a digest, outside the timed span) must be the interpreter's, the oracle, whose own outputs
the zoo's checks compare with NumPy (tests/kernels/zoo.py, `run_once`): a fast wrong answer is
printed as `differs`.

Output: one markdown table, one row per (kernel, cache, N): the policies' times side by side
and the fastest. Then, per policy, the sum over kernels for each (cache, N): the default's
criterion (docs/performance.md#which-backend-by-default).

Run:  OPENBLAS_NUM_THREADS=1 python bench/backend_default.py [--only NAME[,...]] [--scale full]
      [--launches 1,10,100] [--policies interpreter,native,auto,tiered] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLICIES = ("interpreter", "native", "auto", "tiered")


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def child(name: str, scale: str, launches: list[int], numpy_too: bool,
          clock: str = "wall") -> dict[str, Any]:
    """One user script: N launches of one zoo kernel on the backend PYPTO_BACKEND names."""
    now = CLOCKS[clock]
    import numpy as np

    import pypto as pto
    from tests.kernels.zoo import cases

    case = next(c for c in cases(scale) if c.name == name)
    rng = np.random.default_rng(0)
    host = case.inputs(rng)
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    for k, a in host.items():
        pto.memcpy_h2d(tensors[k], a)
    pto.sync()
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    sums: dict[int, float] = {}
    spent = 0.0
    for i in range(1, max(launches) + 1):
        start = now()
        pto.launch(case.kernel, case.grid, case.block, args)
        pto.sync()
        spent += now() - start
        if i == 1:  # untimed: a digest of the first launch's outputs (against the oracle's)
            digest = hashlib.sha256()
            for k, t in tensors.items():
                out = np.empty_like(host[k])
                pto.memcpy_d2h(out, t)
                digest.update(out.tobytes())
        if i in launches:
            sums[i] = spent
    result: dict[str, Any] = {"sums": sums, "digest": digest.hexdigest()}
    if numpy_too:
        numpy_sums: dict[int, float] = {}
        spent = 0.0
        for i in range(1, max(launches) + 1):
            start = now()
            case.numpy(host)
            spent += now() - start
            if i in launches:
                numpy_sums[i] = spent
        result["numpy"] = numpy_sums
    return result


def run_child(name: str, policy: str, cache: str, args: argparse.Namespace,
              numpy_too: bool = False) -> dict[str, Any]:
    env = dict(os.environ, PYPTO_BACKEND=policy, PYPTO_NATIVE_CACHE=cache,
               PYTHONPATH=str(ROOT))
    command = [sys.executable, __file__, "--child", name, "--scale", args.scale,
               "--launches", args.launches, "--clock", args.clock] + (["--numpy"] if numpy_too else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["sums"] = {int(k): v for k, v in out["sums"].items()}
    if "numpy" in out:
        out["numpy"] = {int(k): v for k, v in out["numpy"].items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="kernel names, comma-separated (prefixes)")
    parser.add_argument("--scale", default="full", help="tests/kernels/zoo.py SCALES")
    parser.add_argument("--launches", default="1,10,100")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="cpu: the process's CPU time, which a loaded machine's "
                             "descheduling does not inflate")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--numpy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    launches = sorted({int(n) for n in args.launches.split(",")})
    if args.child is not None:
        print(json.dumps(child(args.child, args.scale, launches, args.numpy, args.clock)))
        return
    from tests.kernels.zoo import cases

    only = [w.strip() for w in args.only.split(",") if w.strip()]
    names = [(c.name, c.size) for c in cases(args.scale)
             if not only or any(c.name.startswith(w) for w in only)]
    policies = [p for p in args.policies.split(",") if p]
    load = os.getloadavg()[0]
    print(f"# backend policies as a user script sees them: {args.clock} ms of the first N launches "
          f"+ syncs in a fresh process (compile included), cold / warm native disk cache; "
          f"load average {load:.1f}\n")
    print("| kernel | size | cache | N | " + " | ".join(policies) + " | NumPy | fastest |")
    print("|---|---|---|---:|" + "---:|" * (len(policies) + 1) + "---|")
    totals: dict[tuple[str, str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="pypto-backend-default-") as tmp:
        for index, (name, size) in enumerate(names):
            warm = str(Path(tmp) / f"warm{index}")
            figures: dict[tuple[str, str], dict[str, Any]] = {}
            numpy: dict[int, float] = {}
            # native first when asked: its cold run fills the warm cache
            order = sorted(policies, key=lambda p: p != "native")
            for policy in order:
                cold = warm if policy == "native" else str(Path(tmp) / f"cold{index}{policy}")
                got = run_child(name, policy, cold, args, numpy_too=policy == "interpreter")
                figures[(policy, "cold")] = got
                numpy = got.get("numpy", numpy)
            if "native" not in policies:  # fill the warm cache for the warm runs
                run_child(name, "native", warm, args)
            for policy in order:
                figures[(policy, "warm")] = figures[(policy, "cold")] \
                    if policy == "interpreter" else run_child(name, policy, warm, args)
            for cache in ("cold", "warm"):
                for n in launches:
                    cells, best = [], None
                    for policy in policies:
                        got = figures[(policy, cache)]
                        if "error" in got:
                            cells.append("error")
                            continue
                        if got["digest"] != figures[("interpreter", "cold")].get("digest",
                                                                                 got["digest"]):
                            cells.append("differs")
                            continue
                        ms = got["sums"][n] * 1e3
                        totals[(policy, cache, n)] = totals.get((policy, cache, n), 0.0) + ms
                        cells.append(f"{ms:.1f}")
                        if best is None or ms < best[1]:
                            best = (policy, ms)
                    np_ms = f"{numpy[n] * 1e3:.1f}" if n in numpy else "-"
                    print(f"| {name} | {size} | {cache} | {n} | " + " | ".join(cells)
                          + f" | {np_ms} | {best[0] if best else '-'} |", flush=True)
            errors = [f"{p} {c}: {g['error']}" for (p, c), g in figures.items() if "error" in g]
            for line in errors:
                print(f"<!-- {name}: {line} -->", flush=True)
    print(f"\n# sums over the {len(names)} kernels (ms)\n")
    print("| cache | N | " + " | ".join(policies) + " |")
    print("|---|---:|" + "---:|" * len(policies))
    for cache in ("cold", "warm"):
        for n in launches:
            print(f"| {cache} | {n} | " + " | ".join(
                f"{totals.get((p, cache, n), float('nan')):.0f}" for p in policies) + " |")


if __name__ == "__main__":
    main()
