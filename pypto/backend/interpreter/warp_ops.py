"""Warp shuffles and votes on a lane vector (docs/language.md#warp-shuffles-and-votes).

What generated code calls for `pto.shfl` / `shfl_up` / `shfl_down` / `shfl_xor` (`shuffle`)
and `pto.ballot` / `vote_any` / `vote_all` (`vote`): NumPy over the whole vector, never a
Python loop over lanes or warps.

The lane vectors these run on hold whole warps: every vector of grid, batch and block mode is
whole blocks, and a warp-mode vector is one warp (executor.py); windowed branches never hold a
warp collective (planning.py `_follows_window`). So vector position `p` is block-local lane
`(local_base + p) % block_lanes`, its warp starts at position `p - lane` and has
`min(32, block_lanes - warp_start)` lanes (fewer in the last warp of a block whose lane count is
not a multiple of 32: a *partial* warp).

Semantics (CUDA's, with PTX's treatment of the lane operand):
- the source lane / delta / mask is taken modulo 32 (its low 5 bits, as PTX's `shfl`);
- `shfl`: lane `src mod 32`; `shfl_up`: `lane - d`; `shfl_down`: `lane + d`; `shfl_xor`:
  `lane ^ m`; a lane whose source lane does not exist in its warp (below 0, past 31, or past the
  end of a partial warp) keeps its own value;
- `ballot`: bit k set when lane k exists and its predicate holds (an int32: bit 31 is the sign);
  `vote_any` / `vote_all`: the predicate on some / every existing lane of the warp.

Every existing lane of a warp that executes one must be active (`DeadlockError` otherwise,
naming a lane that is missing): the run-time side of the static check of
pypto.analysis.uniformity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto.errors import DeadlockError

MODES = ("idx", "up", "down", "xor")
"""The shuffle kinds: `shfl`, `shfl_up`, `shfl_down`, `shfl_xor`."""

VOTES = ("ballot", "any", "all")


def geometry(ctx: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per vector position: its lane in the warp, the position of its warp's lane 0, its warp's
    lane count, and its warp's index in the vector; and the positions where warps start.
    Computed once per vector shape (the Executable's cache)."""
    ws, lanes, base, count = ctx.warp_size, ctx.block_lanes, ctx.local_base, ctx.count

    def make() -> tuple[np.ndarray, ...]:
        local = (np.arange(count, dtype=np.int64) + base) % lanes
        lane = local % ws
        start = np.arange(count, dtype=np.int64) - lane
        width = np.minimum(ws, lanes - (local - lane))
        first = lane == 0
        return lane, start, width, np.cumsum(first) - 1, np.flatnonzero(first)

    return ctx.cache.geometry(("warp_geometry", count, lanes, base, ws), make)


def _whole_warps(ctx: Any) -> bool:
    """Every warp of the vector is full and starts at a multiple of 32 positions."""
    ws = ctx.warp_size
    return ctx.block_lanes % ws == 0 and ctx.count % ws == 0 and ctx.local_base % ws == 0


def check_converged(ctx: Any, mask: Any, site: int, what: str) -> None:
    """Every lane of a warp that has an active lane is active (else a `DeadlockError` naming a
    lane that did not arrive)."""
    if mask is None or mask is False:
        return
    lanes = np.asarray(mask, dtype=bool)
    if _whole_warps(ctx):
        rows = lanes.reshape(-1, ctx.warp_size)
        split = rows.any(axis=1) != rows.all(axis=1)
        if not split.any():
            return
        row = int(np.argmax(split))
        missing = row * ctx.warp_size + int(np.argmin(rows[row]))
    else:
        _, start, _, widx, starts = geometry(ctx)
        some = np.logical_or.reduceat(lanes, starts)
        every = np.logical_and.reduceat(lanes, starts)
        split = (some != every)[widx] & ~lanes
        if not split.any():
            return
        missing = int(np.argmax(split))
    block, lane = ctx.describe_lane(missing)
    raise ctx.fail(
        f"deadlock: pto.{what} is a warp collective but lane {lane} of block {block} did not "
        f"reach it with the rest of its warp (it took another path); every lane of a warp must "
        f"execute a shuffle or a vote together: compute the value under the condition (or "
        f"pto.select it) and shuffle outside the branch", site, DeadlockError)


def _source_lane(mode: str, lane: np.ndarray, operand: Any) -> np.ndarray:
    """The lane in the warp each position reads (may lie outside the warp)."""
    k = np.bitwise_and(np.asarray(operand).astype(np.int64), 31)  # modulo 32 (low 5 bits)
    if mode == "idx":
        return np.broadcast_to(k, lane.shape)
    if mode == "up":
        return lane - k
    if mode == "down":
        return lane + k
    return np.bitwise_xor(lane, k)


def shuffle(ctx: Any, mode: str, value: Any, operand: Any, mask: Any, site: int,
            array: bool) -> Any:
    """`pto.shfl*` of `value` by `operand` (a source lane, delta or mask) on the vector.
    `array`: the result must be a per-lane array even when `value` is uniform."""
    check_converged(ctx, mask, site, "shfl" if mode == "idx" else f"shfl_{mode}")
    if not isinstance(value, np.ndarray):  # the same on every lane: any lane's is its own
        return np.full(ctx.count, value) if array else value
    ws = ctx.warp_size
    if mask is False:
        return value
    if not isinstance(operand, np.ndarray) and _whole_warps(ctx):
        k = int(operand) & 31
        rows = value.reshape(-1, ws)
        if mode == "idx":
            return np.repeat(rows[:, k], ws)
        if mode == "xor":
            return rows[:, np.arange(ws) ^ k].reshape(-1)
        out = rows.copy()
        if mode == "down" and k:
            out[:, :ws - k] = rows[:, k:]
        elif mode == "up" and k:
            out[:, k:] = rows[:, :ws - k]
        return out.reshape(-1)
    lane, start, width, _, _ = geometry(ctx)
    j = _source_lane(mode, lane, operand)
    valid = (j >= 0) & (j < width)
    positions = np.where(valid, start + j, np.arange(ctx.count, dtype=np.int64))
    return value[positions]


def vote(ctx: Any, kind: str, pred: Any, mask: Any, site: int) -> np.ndarray:
    """`pto.ballot` (int32 per lane), `pto.vote_any` / `vote_all` (bool per lane)."""
    check_converged(ctx, mask, site, "ballot" if kind == "ballot" else f"vote_{kind}")
    ws, count = ctx.warp_size, ctx.count
    p = np.broadcast_to(np.asarray(pred, dtype=bool), (count,))
    if _whole_warps(ctx):
        rows = p.reshape(-1, ws)
        if kind == "any":
            per_warp = rows.any(axis=1)
        elif kind == "all":
            per_warp = rows.all(axis=1)
        else:
            bits = np.left_shift(np.uint32(1), np.arange(ws, dtype=np.uint32))
            per_warp = (rows * bits).sum(axis=1, dtype=np.uint32).view(np.int32)
        return np.repeat(per_warp, ws)
    lane, _, _, widx, starts = geometry(ctx)
    if kind == "any":
        per_warp = np.logical_or.reduceat(p, starts)
    elif kind == "all":
        per_warp = np.logical_and.reduceat(p, starts)
    else:
        weights = np.where(p, np.left_shift(np.int64(1), lane), np.int64(0))
        per_warp = np.add.reduceat(weights, starts).astype(np.uint32).view(np.int32)
    return per_warp[widx]


__all__ = ["MODES", "VOTES", "check_converged", "geometry", "shuffle", "vote"]
