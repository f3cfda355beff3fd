"""Cross-validation of `pto-verify-barriers` (static) against the race detector (dynamic).

A kernel the dynamic detector catches under some warp schedule but the static check passes is a
soundness bug of the static check. A kernel the static check rejects but no schedule exposes is a
false positive (expected in some cases: the static check is conservative, and the dynamic one
only sees the paths taken).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from xdsl.parser import Parser

from pypto.backend.interpreter import Executable
from pypto.errors import DeadlockError, PtoError, RaceError
from pypto.ir import make_context
from tests.passes.random_kernels import N, generate

BLOCK = 128
GRID = 2
SCHEDULES = (None, "in_order", "reverse", "random:1", "random:2")


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def static_rejects(text: str) -> str | None:
    """The static check's error message (a proven hazard), or its first remark about a hazard
    it could not decide (docs/barriers.md#prove-or-defer: flagged, not silent), or None when
    it accepts the kernel."""
    from pypto.diagnostics import capture_diagnostics
    from pypto.passes.verify_barriers import VerifyBarriersPass

    module = parse(text)
    deferred: list[str] = []
    try:
        with capture_diagnostics(lambda d: deferred.append(d.message)
                                 if d.severity == "remark" and "hazard" in d.message else None):
            VerifyBarriersPass(block_size=BLOCK).apply(make_context(), module)
    except PtoError as exc:
        return str(exc)
    return deferred[0] if deferred else None


def dynamic_rejects(text: str) -> str | None:
    """The first race the interpreter finds under any schedule, or None."""
    import pypto as pto

    module = parse(text)
    func = next(iter(module.ops))
    for schedule in SCHEDULES:
        src = pto.alloc_tensor(N * 4)
        out = pto.alloc_tensor(GRID * BLOCK * 4)
        pto.memcpy_h2d(src, np.arange(N, dtype=np.float32))
        pto.sync()
        exe = Executable(func, schedule=schedule, race_check=True)
        try:
            exe.run((GRID, 1, 1), (BLOCK, 1, 1), (src, out))
        except RaceError as exc:
            return f"[{schedule}] {exc}"
        except DeadlockError as exc:  # pragma: no cover - generator avoids divergent barriers
            return f"[{schedule}] deadlock: {exc}"
    return None


@dataclass
class Report:
    total: int = 0
    both: int = 0
    neither: int = 0
    static_only: int = 0
    dynamic_only: int = 0
    disagreements: list[str] = field(default_factory=list)

    def summary(self) -> str:
        flagged = self.both + self.static_only
        fp = self.static_only / flagged if flagged else 0.0
        return (f"{self.total} kernels: both reject {self.both}, both accept {self.neither}, "
                f"static only {self.static_only} (false-positive rate {fp:.1%} of static "
                f"rejections), dynamic only {self.dynamic_only} (must be 0)")


def cross_validate(seeds: Iterable[int]) -> Report:
    report = Report()
    for seed in seeds:
        text = generate(seed)
        s = static_rejects(text)
        d = dynamic_rejects(text)
        report.total += 1
        if s and d:
            report.both += 1
        elif not s and not d:
            report.neither += 1
        elif s:
            report.static_only += 1
        else:
            report.dynamic_only += 1
            report.disagreements.append(f"seed {seed}: dynamic found {d.splitlines()[0]}")
    return report
