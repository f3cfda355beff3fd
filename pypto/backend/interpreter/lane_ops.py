"""Lane instructions with failure modes, as functions of the lane context: integer division by
zero, negative integer powers, out-of-range float-to-int casts, non-uniform or zero loop steps,
a pointer that names two buffers, and `pto.printf`. Generated code calls them as `_int_div(_ctx,
...)` and so on (codegen.py's namespace), as it does warp_ops.py's shuffles and votes; each error
names its instruction's source location through `ctx.fail`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from pypto import exact
from pypto.backend.interpreter.buffers import Buffer
from pypto.errors import DeadlockError, KernelError

Mask = Any  # None | False | np.ndarray[bool] (lanes.py)


# arithmetic with failure modes ---------------------------------------------------------------

def int_div(ctx: Any, fn: Any, a: Any, b: Any, mask: Mask, site: int) -> Any:
    """Integer `//` or remainder; dividing by zero on an active lane is a KernelError."""
    if isinstance(b, np.ndarray):
        zero = b == 0
        if zero.any():
            active_zero = zero if mask is None else (zero & mask)
            if active_zero.any():
                block, lane = ctx.describe_lane(int(np.argmax(active_zero)))
                raise ctx.fail(f"integer division by zero in block {block}, lane {lane}",
                               site)
            b = np.where(zero, b.dtype.type(1), b)  # inactive lanes: any value will do
    elif b == 0:
        if mask is False:
            return a
        raise ctx.fail("integer division by zero", site)
    return fn(a, b)


def int_pow(ctx: Any, a: Any, b: Any, mask: Mask, site: int) -> Any:
    if np.any(np.asarray(b) < 0) and (mask is None or np.any(np.asarray(b)[mask] < 0)):
        raise ctx.fail("integer '**' with a negative exponent; cast to a float type first",
                       site)
    return np.power(a, np.maximum(b, 0).astype(np.asarray(a).dtype))


def same_buffer(ctx: Any, bt: Buffer | None, bf: Buffer | None, cond: Any, mask: Mask = None,
                site: int | None = None) -> Buffer | None:
    """The buffer of a pointer chosen per lane (a branch or a select): the lanes that are
    active must all pick the same buffer; a per-lane mix of two buffers is an error."""
    if bt is None or bt is bf:
        return bf if bt is None else bt
    if bf is None:
        return bt
    if isinstance(cond, np.ndarray):
        active = cond if not isinstance(mask, np.ndarray) else cond[mask]
        if active.all():
            return bt
        if not active.any():
            return bf
    else:
        return bt if cond else bf
    message = (f"a pointer refers to '{bt.name}' on some lanes and '{bf.name}' on others; "
               f"a pointer chosen per lane must point into one buffer: choose the loaded "
               f"values instead (pto.select(c, pto.load(a + i), pto.load(b + i)))")
    if site is None:
        raise KernelError(message, kernel=ctx.kernel)
    raise ctx.fail(message, site)


def tile_entry(ctx: Any, mask: Mask, site: int) -> None:
    """Warp mode: every lane of this warp must reach a block-level instruction."""
    if mask is not None:
        raise ctx.fail(f"pto.{ctx.sites[site].op} is a block-level instruction but not every "
                       f"lane of the warp reached it", site, DeadlockError)


# synchronisation ------------------------------------------------------------------------------

def barrier_block(ctx: Any, mask: Mask, site: int) -> None:
    """In lockstep execution every active lane is at the barrier; inactive ones never come."""
    if mask is not None:
        per_block = np.asarray(mask).reshape(-1, min(ctx.block_lanes, ctx.count))
        if (per_block.any(axis=1) != per_block.all(axis=1)).any() or ctx.count <= \
                ctx.block_lanes:
            _divergent_barrier(ctx, mask, site, "pto.barrier_block()", "block")
    if not ctx.warp_mode:  # in warp mode the scheduler advances the epoch once per block
        ctx.counters["epoch"] += 1


def barrier_warp(ctx: Any, mask: Mask, site: int) -> None:
    """`pto.barrier()`: every active lane's warp must be active whole."""
    if mask is None:
        return
    if mask is False:
        return
    lanes = np.asarray(mask)
    ws = ctx.warp_size
    if ctx.block_lanes % ws == 0 and ctx.local_base % ws == 0 and ctx.count % ws == 0 \
            and ctx.row_width % ws == 0:
        rows = lanes.reshape(-1, ws)  # whole warps, one per row
        split = rows.any(axis=1) != rows.all(axis=1)
        if split.any():
            row = int(np.argmax(split))
            _divergent_barrier(ctx, mask, site, "pto.barrier()", "warp",
                               row * ws + int(np.argmin(rows[row])))
    else:  # partial warps: count active lanes per warp
        warps = ctx.vector_warps()
        warps = warps - warps[0]
        active = np.bincount(warps, weights=lanes)
        size = np.bincount(warps)
        split = (active > 0) & (active < size)
        if split.any():
            missing = np.flatnonzero((warps == int(np.argmax(split))) & ~lanes)[0]
            _divergent_barrier(ctx, mask, site, "pto.barrier()", "warp", int(missing))


def _divergent_barrier(ctx: Any, mask: Mask, site: int, what: str, scope: str,
                       missing: int | None = None) -> None:
    """Report a barrier some lanes of its scope miss (`missing`: one of them, by default
    the first inactive lane of the vector)."""
    lanes = np.asarray(mask)
    if missing is None:
        missing = int(np.argmin(lanes)) if lanes.ndim else 0
    block, lane = ctx.describe_lane(missing)
    raise ctx.fail(
        f"deadlock: {what} is not reached by every lane of the {scope} (lane {lane} of block "
        f"{block} took another path); a barrier must sit in control flow that is uniform "
        f"across the {scope}", site, DeadlockError)


# misc -------------------------------------------------------------------------------------

def loop_range(ctx: Any, lb: Any, ub: Any, step: Any, site: int) -> range:
    if isinstance(lb, np.ndarray) or isinstance(ub, np.ndarray):
        raise ctx.fail("loop bounds differ between lanes; they must be uniform", site)
    if isinstance(step, np.ndarray) or not step:
        shown = "different on different lanes" if isinstance(step, np.ndarray) else int(step)
        raise ctx.fail(f"the loop step is {shown}: it must be a non-zero integer, the same "
                       f"on every lane (a zero step never ends)", site)
    return range(int(lb), int(ub), int(step))


def float_to_int(ctx: Any, x: Any, dtype: np.dtype, mask: Any, site: int) -> Any:
    """Truncation toward zero; NaN or out-of-range values on active lanes are an error."""
    arr = np.asarray(x, dtype=np.float64)
    bad = ~exact.float_in_int_range(np.trunc(arr), dtype)
    if mask is not None and mask is not False and arr.ndim:
        bad &= mask
    if np.any(bad):
        value = arr[bad].flat[0] if arr.ndim else float(arr)
        raise ctx.fail(f"pto.cast of {value} to {dtype} is out of range (or NaN)", site)
    if isinstance(x, np.ndarray):
        return np.trunc(arr).astype(dtype)
    return dtype.type(np.trunc(arr))


def printf(ctx: Any, fmt: str, values: tuple[Any, ...], mask: Any, site: int) -> None:
    lanes = range(ctx.count) if mask is None else np.nonzero(mask)[0]
    out = []
    for pos in lanes:
        row = tuple(_py(v[pos] if isinstance(v, np.ndarray) else v) for v in values)
        block, lane = ctx.describe_lane(int(pos))
        try:
            text = (fmt[:-1] if fmt.endswith("\n") else fmt) % row  # C's final newline
        except (TypeError, ValueError, OverflowError) as exc:
            raise ctx.fail(f"pto.printf format {fmt!r} cannot print {row}: {exc}",
                           site) from None
        out.append(f"[block {block} lane {lane}] {text}")
    if out:
        sys.stdout.write("\n".join(out) + "\n")


def _py(v: Any) -> Any:
    if isinstance(v, np.floating) or (hasattr(v, "dtype") and v.dtype.name == "bfloat16"):
        return float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


GENERATED = ("int_div", "int_pow", "same_buffer", "tile_entry", "barrier_block", "loop_range",
             "float_to_int", "printf")
"""The functions generated code calls, each bound in its namespace as `_<name>` (codegen.py)."""
