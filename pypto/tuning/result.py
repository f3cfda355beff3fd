"""What `pto.autotune` returns: the winner, its launch arguments, and every config's row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.errors import UsageError
from pypto.tuning.worker import OK


@dataclass(frozen=True)
class Record:
    """One config of a sweep, as its row of the table."""

    index: int
    config: dict[str, Any]
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    status: str              # "ok" or why the config was rejected (see `TuneResult.table`)
    cycles: int | None       # modelled cycles of the launch (None when it was not profiled)
    bound: str               # the binding resource: "HBM bandwidth" or the busiest pipe
    l1_peak: int | None      # L1 bytes at the peak, after double buffering and allocation
    check: str               # "reference", "passed", "" (not run on the interpreter)
    reason: str              # why it was rejected ('' when it was not)
    cached: bool = False     # its profile came from the disk cache
    seconds: float = 0.0     # time its profiling task took (when it ran, not from the cache)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def row(self) -> dict[str, Any]:
        """The table's row: plain values, the same whatever executor ran the sweep."""
        return {"index": self.index, "config": dict(self.config), "grid": self.grid,
                "block": self.block, "status": self.status, "cycles": self.cycles,
                "bound": self.bound, "l1_peak": self.l1_peak, "check": self.check,
                "reason": self.reason}


class Table(list[dict[str, Any]]):
    """Every config's row (dicts: index, config, grid, block, status, cycles, bound, l1_peak,
    check, reason), in the order the configs were given; `str()` is an aligned text table
    with the winner marked `*` and each rejection's reason below the table."""

    winner: int | None = None

    def __str__(self) -> str:
        keys = list(dict.fromkeys(k for row in self for k in row["config"]))
        head = ["#", *keys, "grid", "block", "cycles", "vs best", "bound by", "L1 peak",
                "status", "check"]
        best = min((r["cycles"] for r in self if r["status"] == OK), default=None)
        lines = []
        for r in self:
            mark = "*" if r["index"] == self.winner else " "
            lines.append([
                f"{mark}{r['index']}", *(str(r["config"].get(k, "")) for k in keys),
                _dims(r["grid"]), _dims(r["block"]),
                "" if r["cycles"] is None else str(r["cycles"]),
                "" if r["cycles"] is None or r["status"] != OK or not best
                else f"{r['cycles'] / best:.2f}x",
                r["bound"], "" if r["l1_peak"] is None else str(r["l1_peak"]),
                r["status"], r["check"]])
        widths = [max(len(h), *(len(row[i]) for row in lines)) if lines else len(h)
                  for i, h in enumerate(head)]
        out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in lines]
        reasons = [f"#{r['index']} {r['status']}: {r['reason']}" for r in self if r["reason"]]
        if reasons:
            out += ["", "rejected:"] + [f"  {line}" for line in reasons]
        return "\n".join(out)


def _dims(d: tuple[int, int, int] | None) -> str:
    if d is None:
        return ""
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "x".join(map(str, d))


@dataclass
class TuneStats:
    """How a sweep went: configs profiled now and taken from the cache, interpreter checks run,
    the wall time, and the time the profiling tasks themselves took, wall and CPU, summed
    over the workers (the rest of the wall time, times the workers, is machinery: shipping,
    scheduling, the cache, the checks — or, on a loaded machine, waiting for a core)."""

    configs: int
    profiled: int
    cached: int
    checks: int
    seconds: float
    task_seconds: float
    task_cpu_seconds: float = 0.0
    check_seconds: float = 0.0    # wall time of the interpreter checks (reference included)


class TuneResult:
    """The outcome of `pto.autotune` (docs/autotune.md#the-result).

    `config` / `cycles`: the winner (lowest modelled cycles among the configs that compile,
    fit, run and pass their check; ties go to the earlier config). `launch_args`: a dict for
    `pto.launch(kernel, **result.launch_args)` — the winner's grid, block, the user's own
    arguments with the config's values bound, and the pass pipeline its pass options give.
    `records`: every config (see `table()`); `reference`: the config the checks compare with.
    """

    def __init__(self, kernel: Any, records: list[Record], winner: Record, reference: Record,
                 launch_args: dict[str, Any], stats: TuneStats, model: str):
        self.kernel = kernel
        self.records = records
        self.winner = winner
        self.reference = reference
        self.launch_args = launch_args
        self.stats = stats
        self.model = model

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.winner.config)

    @property
    def cycles(self) -> int:
        assert self.winner.cycles is not None
        return self.winner.cycles

    def table(self) -> Table:
        """Every config, in the order given: cycles, binding resource, L1 peak, status and
        check, and the reason of each rejection (does not compile, L1 too small, refused by a
        pass, bad launch, fails at run time, wrong results). `print(result.table())`."""
        table = Table(r.row() for r in self.records)
        table.winner = self.winner.index
        return table

    def plot(self, path: str | Path, *, title: str | None = None) -> Path:
        """Draw the modelled cycles of every config (rejected ones marked with their status,
        the winner highlighted) into an image file (PNG, SVG, PDF: by the suffix). Needs
        matplotlib: `pip install 'pypto[plot]'`."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise UsageError("TuneResult.plot needs matplotlib: pip install 'pypto[plot]' "
                             "(or pip install matplotlib)") from None
        from pypto.tuning.plot import draw

        return draw(plt, self, Path(path), title)

    def __repr__(self) -> str:
        rejected = sum(not r.ok for r in self.records)
        return (f"<pto.TuneResult {self.kernel.name}: best {self.config} at {self.cycles} "
                f"cycles ({self.model} model) of {len(self.records)} configs, {rejected} "
                f"rejected>")
