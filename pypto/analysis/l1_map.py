"""The L1 map of a kernel: which buffer sits where in the block's L1, and when it is live.

`ck.l1_map()` and `pypto-opt --emit=l1-map` show it as a table (offsets, sizes, slots, live
ranges as program points and Python lines, the peak); `to_svg()` draws it as offset × program
point, one box per buffer (no plotting library needed: SVG is text). The layout shown is the one
in the IR (`offset` properties from `pto-allocate-l1`); for a kernel that was not allocated, the
layout `pto-allocate-l1` would choose, marked as such.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func
from xdsl.ir import Operation

from pypto.analysis.l1_liveness import Layout, Placement, layout_from_ir, plan_layout, slots_of
from pypto.diagnostics import source_loc
from pypto.dialects.traits import declares_buffer


def _line(op: Operation) -> tuple[str, int] | None:
    loc = source_loc(op)
    return None if loc is None else (loc.file.rsplit("/", 1)[-1], loc.line)


def _source_span(p: Placement) -> str:
    lines = [found for op in (p.live.first, p.live.last, *p.live.uses)
             if (found := _line(op)) is not None]
    if not lines:
        return "-"
    name = lines[0][0]
    lo, hi = min(n for _, n in lines), max(n for _, n in lines)
    return f"{name}:{lo}" if lo == hi else f"{name}:{lo}-{hi}"


@dataclass
class L1Map:
    """A kernel's L1 layout with live ranges; `str()` gives the table."""

    kernel: str
    layout: Layout
    planned: bool
    """True when the IR had no offsets and the layout is the one pto-allocate-l1 would pick."""

    @property
    def peak(self) -> int:
        return self.layout.peak

    @property
    def capacity(self) -> int:
        return self.layout.capacity

    @property
    def buffers(self) -> list[Placement]:
        return self.layout.placements

    def to_text(self) -> str:
        lay = self.layout
        pct = 100 * lay.peak / lay.capacity if lay.capacity else 0.0
        head = (f"L1 map of kernel '{self.kernel}': peak {lay.peak} of {lay.capacity} bytes "
                f"({pct:.1f}%), {len(lay.placements)} buffer"
                f"{'s' if len(lay.placements) != 1 else ''}, align {lay.align}"
                + (" (not allocated: the layout pto-allocate-l1 would choose)"
                   if self.planned else ""))
        rows = [("offset", "end", "bytes", "buffer", "slots", "live", "source")]
        for p in lay.placements:
            rows.append((str(p.offset), str(p.end), str(p.nbytes), p.name,
                         str(slots_of(p.live.alloc)), f"{p.live.start}-{p.live.end}",
                         _source_span(p)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [head]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        live_bytes, live = lay.live_peak()
        if live:
            names = ", ".join(p.name for p in live)
            lines.append(f"  most bytes live at once: {live_bytes} ({names}); live ranges are "
                         f"program points (ops in pre-order), widened to whole loops")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_text()

    def to_svg(self, path: str | Path | None = None) -> str:
        """The map as an SVG picture (offset down, program point across); written to `path`
        when given. Returns the SVG text."""
        svg = _render_svg(self)
        if path is not None:
            Path(path).write_text(svg, encoding="utf-8")
        return svg


_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac")


def _render_svg(m: L1Map) -> str:
    lay = m.layout
    points = max((p.live.end for p in lay.placements), default=0) + 1
    top = max(lay.peak, 1)
    width, height, left, right, upper, lower = 760, 420, 90, 20, 40, 50
    plot_w, plot_h = width - left - right, height - upper - lower

    def x(point: float) -> float:
        return left + plot_w * point / points

    def y(offset: float) -> float:
        return upper + plot_h * offset / top

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="20" font-size="13">{html.escape(m.to_text().splitlines()[0])}'
             f'</text>',
             f'<rect x="{left}" y="{upper}" width="{plot_w}" height="{plot_h}" fill="none" '
             f'stroke="#888"/>']
    for index, p in enumerate(lay.placements):
        x0, x1 = x(p.live.start), x(p.live.end + 1)
        y0, y1 = y(p.offset), y(p.end)
        color = _PALETTE[index % len(_PALETTE)]
        title = html.escape(f"{p.name}: offset {p.offset}, {p.nbytes} bytes, "
                            f"live {p.live.start}-{p.live.end}")
        parts.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" '
                     f'height="{max(y1 - y0, 1):.1f}" fill="{color}" fill-opacity="0.75" '
                     f'stroke="black" stroke-width="0.5"><title>{title}</title></rect>')
        slots = slots_of(p.live.alloc)
        for s in range(1, slots):
            ys = y(p.offset + p.nbytes * s / slots)
            parts.append(f'<line x1="{x0:.1f}" y1="{ys:.1f}" x2="{x1:.1f}" y2="{ys:.1f}" '
                         f'stroke="black" stroke-dasharray="4,3"/>')
        label = p.name + (f" ×{slots}" if slots > 1 else "")
        parts.append(f'<text x="{x0 + 4:.1f}" y="{(y0 + y1) / 2 + 4:.1f}">'
                     f'{html.escape(label)}</text>')
    for frac in (0, 0.25, 0.5, 0.75, 1):
        offset = int(top * frac)
        parts.append(f'<text x="{left - 6}" y="{y(offset) + 4:.1f}" text-anchor="end">'
                     f'{offset}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle">'
                 f'program point (ops in pre-order, 0-{points - 1})</text>')
    parts.append(f'<text x="16" y="{upper + plot_h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {upper + plot_h / 2})">L1 offset (bytes)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def l1_map(kernel: func.FuncOp, *, capacity: int, align: int) -> L1Map:
    """The L1 map of `kernel` as its IR places the buffers (or as pto-allocate-l1 would)."""
    allocs = [op for op in kernel.walk() if declares_buffer(op)]
    planned = bool(allocs) and all(a.l1_offset is None for a in allocs)  # type: ignore[attr-defined]
    layout = plan_layout(kernel, capacity=capacity, align=align) if planned else \
        layout_from_ir(kernel, capacity=capacity, align=align)
    return L1Map(kernel.sym_name.data, layout, planned)


__all__ = ["L1Map", "l1_map"]
