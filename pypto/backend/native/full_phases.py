"""Full blocks inside phases: a phase's lanes without the bounds guards every lane passes.

A phase (phase_codegen.py) runs its lanes over its fast lane function once its range check
passes; the lanes' guards (`if i < n`, `if g >= 0 and g < n`) stay in that loop, so LLVM
vectorises them with masked loads and stores, and a load at a uniform address under a guard
(conv1d's `taps + k`) becomes a masked gather. This module gives every phase with guards what
[full blocks](full_blocks.py) give a kernel without phases: `@k.pN.guards` (the phase's range
function's arguments; 1 when each guard has its expected value at every corner of the lanes
the phase runs) and `@k.pN.full.lane` (the fast lane function with those comparisons replaced
by their expected values), and rewrites the grid function's fast branch of that phase from

    scf.if %range_ok { fast lane loops }

to

    scf.if %range_ok { scf.if %guards_ok { the same loops over .full.lane } else { fast lane
    loops } }

Per invocation of the phase (a block-level loop's phase is checked per trip, as its range is).
Same bits: the full lane function is the fast one with comparisons replaced by the values they
have for every lane it runs. docs/native.md#full-blocks.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, SymbolRefAttr, i32
from xdsl.ir import Block, Region

from pypto.backend.native import warp_lanes
from pypto.backend.native.fast_blocks import FAST_SUFFIX
from pypto.backend.native.full_blocks import FULL_SUFFIX, GUARDS_SUFFIX, full_variants

_RANGE_SUFFIX = ".range"
_LANE_SUFFIX = ".lane"


def calls_by_callee(grid: func.FuncOp) -> dict[str, list[func.CallOp]]:
    """The calls of `grid` by callee name (one walk for all phases)."""
    found: dict[str, list[func.CallOp]] = {}
    for op in grid.walk():
        if isinstance(op, func.CallOp):
            found.setdefault(op.callee.string_value(), []).append(op)
    return found


def add_full_phase(grid: func.FuncOp, lane: func.FuncOp, fast: func.FuncOp, name: str,
                   num_params: int, calls: dict[str, list[func.CallOp]] | None = None
                   ) -> list[func.FuncOp]:
    """The guard function and full lane function of phase `name` (none when it has no
    guard), with `grid`'s fast branches of that phase choosing between full and fast lanes
    (`calls`: `calls_by_callee(grid)` taken once for all phases, instead of a walk of the grid
    function per phase: docs/native.md#compile-time)."""
    full = full_variants(lane, fast, name, num_params)
    if full is None:
        return []
    check, full_lane = full
    fast_name = name + FAST_SUFFIX + _LANE_SUFFIX
    full_name = name + FULL_SUFFIX + _LANE_SUFFIX
    rewired = 0
    for call in (calls_by_callee(grid) if calls is None else calls).get(name + _RANGE_SUFFIX, []):
        uses = list(call.results[0].uses)
        if len(uses) != 1 or not isinstance(uses[0].operation, arith.CmpiOp):
            continue
        cmp_uses = list(uses[0].operation.results[0].uses)
        if len(cmp_uses) != 1 or not isinstance(cmp_uses[0].operation, scf.IfOp):
            continue
        branch = cmp_uses[0].operation
        fast_lanes = Region()
        branch.true_region.move_blocks(fast_lanes)
        full_lanes = fast_lanes.clone()
        warp_lanes.keep_plain(fast_lanes)  # (docs/native.md#warp-lanes)
        for op in full_lanes.walk():
            if isinstance(op, func.CallOp) and op.callee.string_value() == fast_name:
                op.properties["callee"] = SymbolRefAttr(full_name)
        block = Block()
        passed = func.CallOp(name + GUARDS_SUFFIX, list(call.operands), [i32])
        zero = arith.ConstantOp(IntegerAttr(0, i32))
        ok = arith.CmpiOp(passed, zero, "ne")
        block.add_ops([passed, zero, ok, scf.IfOp(ok, [], full_lanes, fast_lanes), scf.YieldOp()])
        branch.true_region.add_block(block)
        rewired += 1
    if not rewired:
        return []
    return [check, full_lane]
