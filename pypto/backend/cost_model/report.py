"""`Profile.to_text()`: an llvm-mca-like report of a modelled launch.

Sections: the header (modelled, by which model, from which target file); the launch summary;
the article's instruction timeline of block 0 (`Cycle 0: Lane 0-255: LOAD`); an llvm-mca
timeline view, one row per instruction and one column per cycle (or per group of cycles for
long blocks): `D` dispatched, `=` waiting, `e` executing, `E` last cycle; the resource pressure
per pipe; the cycle breakdown; the bubbles with their causes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pypto.backend.cost_model.params import PIPES

if TYPE_CHECKING:
    from pypto.backend.cost_model.profile import Profile

TIMELINE_COLUMNS = 80


def profile_text(prof: Profile, *, max_instructions: int = 60) -> str:
    lines = [f"# {prof.header}",
             f"# kernel {prof.kernel}, grid {prof.grid}, block {prof.block}",
             f"Total: {prof.summary()}", ""]
    rep = prof.representative
    entries = prof.timeline
    lines.append(f"Instruction timeline of block 0 ({rep.cycles} cycles):")
    for e in entries[:max_instructions]:
        f = prof.facts.get(e.op_id)
        part = f" (its copy on {e.pipe})" if f is not None and f.pipe != e.pipe else ""
        lines.append(f"Cycle {e.cycle}: Lane {e.lane}: {e.inst}{part}")
    if len(entries) > max_instructions:
        lines.append(f"... {len(entries) - max_instructions} more instructions")
    lines.append("")
    lines.extend(_timeline_view(prof, max_instructions))
    lines.append("")
    lines.append("Resource pressure per pipe (block 0):")
    lines.append("  " + "  ".join(f"{p:>8}" for p in PIPES))
    span = max(1, rep.cycles)
    lines.append("  " + "  ".join(f"{rep.busy[p]:>8}" for p in PIPES) + "   busy cycles")
    lines.append("  " + "  ".join(f"{100 * rep.busy[p] / span:>7.1f}%" for p in PIPES))
    lines.append("")
    lines.append("Cycle breakdown (whole launch):")
    lines.extend("  " + line for line in str(prof.cycle_breakdown()).splitlines()[1:])
    bubbles = prof.bubbles()
    lines.append("")
    lines.append(f"Bubbles ({len(bubbles)}):" if bubbles else "Bubbles: none")
    for b in bubbles[:20]:
        lines.append(f"  {b}" + (f" [x{b.blocks} blocks]" if b.blocks > 1 else ""))
    return "\n".join(lines) + "\n"


def ruler(width: int, scale: int) -> str:
    """The cycle ruler over `width` columns of `scale` cycles: every tenth column carries the
    cycle it starts at (`0.........40........80...`), the others a dot."""
    cells = ["."] * width
    for c in range(0, width, 10):
        label = str(c * scale)
        if c + len(label) <= width:
            cells[c:c + len(label)] = label
    return "".join(cells)


def _timeline_view(prof: Profile, max_instructions: int) -> list[str]:
    rep = prof.representative
    slices = sorted(rep.slices, key=lambda s: (s.dispatch, s.start))[:max_instructions]
    if not slices:
        return ["Timeline view: no instructions"]
    span = max(s.end for s in slices)
    scale = max(1, math.ceil(span / TIMELINE_COLUMNS))
    width = math.ceil(span / scale)
    out = [f"Timeline view (D dispatched, = waiting, e executing, E last cycle; "
           f"{scale} cycle{'s' if scale > 1 else ''} per column):"]
    out.append(f"{'':>6} {'':<8} {ruler(width, scale)}")
    for index, s in enumerate(slices):
        f = prof.facts[s.op_id]
        row = [" "] * width
        for c in range(s.dispatch // scale, min(width, math.ceil(s.end / scale))):
            row[c] = "="
        for c in range(s.start // scale, min(width, math.ceil(s.end / scale))):
            row[c] = "e"
        row[min(width - 1, (s.end - 1) // scale)] = "E"
        row[min(width - 1, s.dispatch // scale)] = "D" if s.start > s.dispatch else \
            row[min(width - 1, s.dispatch // scale)]
        source = f.source.rsplit(":", 1)[0]
        out.append(f"[{index:>3}]  {s.pipe:<8} {''.join(row)}  {f.kind} ({source})")
    return out
