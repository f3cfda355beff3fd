"""`TuneResult.plot`: modelled cycles per config, drawn with matplotlib (an optional extra)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypto.tuning.result import TuneResult

_MARKERS = ["x", "v", "s", "D", "P", "^", "*"]


def _label(config: dict[str, Any]) -> str:
    return ",".join(str(v) for v in config.values())


def draw(plt: Any, result: TuneResult, path: Path, title: str | None) -> Path:
    records = result.records
    n = len(records)
    fig, ax = plt.subplots(figsize=(min(4 + 0.28 * n, 24), 4.8), layout="constrained")
    ok = [r for r in records if r.ok and r.cycles is not None]
    ax.bar([r.index for r in ok], [r.cycles for r in ok], color="#4c78a8",
           label="modelled cycles")
    w = result.winner
    ax.bar([w.index], [w.cycles], color="#f58518",
           label=f"winner #{w.index} {_label(w.config)}: {w.cycles} cycles")
    ref = result.reference
    if ref.cycles is not None:
        ax.axhline(ref.cycles, color="#555555", linestyle="--", linewidth=1,
                   label=f"reference #{ref.index} (first valid config)")
    wrong = [r for r in records if not r.ok and r.cycles is not None]
    if wrong:  # profiled, then rejected by the interpreter check: their cycles, hatched
        ax.bar([r.index for r in wrong], [r.cycles for r in wrong], color="white",
               edgecolor="#e45756", hatch="//", label="profiled, then rejected")
    statuses = sorted({r.status for r in records if not r.ok})
    for k, status in enumerate(statuses):
        xs = [r.index for r in records if r.status == status]
        ax.scatter(xs, [0] * len(xs), marker=_MARKERS[k % len(_MARKERS)], color="#e45756",
                   zorder=3, clip_on=False, label=f"rejected: {status} ({len(xs)})")
    keys = ",".join(dict.fromkeys(k for r in records for k in r.config))
    if n <= 60:
        ax.set_xticks([r.index for r in records],
                      [_label(r.config) for r in records], rotation=90, fontsize=7)
        ax.set_xlabel(f"config ({keys})")
    else:
        ax.set_xlabel(f"config index (configs: {keys})")
    ax.set_ylabel(f"modelled cycles ({result.model} model)")
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_title(title or f"pto.autotune of {result.kernel.name}: {n} configs "
                          f"(modelled, not measured)")
    ax.legend(fontsize=8, loc="best")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
