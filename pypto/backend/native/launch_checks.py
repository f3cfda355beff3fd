"""One range check and one guard check per launch instead of per block, when they can be proven.

A fast block's range function (`@k.range`, fast_blocks.py) and guard function (`@k.guards`,
full_blocks.py) take the corners of one block's box of lanes, the block coordinates being
uniform values. In a launch of many small blocks (add3d's 8 x 4 x 2 lanes) those per-block
checks cost more than the lanes' work. But when every offset and guard is affine in the block
coordinates *too* (`get_block_id(d) * get_block_dim(d) + get_local_id(d)`, `(k * h + j) * w + i`),
an affine function of the (block, lane) pairs of the whole grid is bounded by interval
arithmetic over their box. So this module builds `@k.launch.range` and `@k.launch.guards` with
the block coordinates as further box coordinates (from 0 to the grid dimension - 1): every check of the per-block functions (in range, no i32
overflow of a value the block coordinates or lanes vary, each guard at its expected value),
now including the i32 products of block coordinates that were uniform before. When both
return 1, every block would pass its own checks, and the grid function runs every block's full
lanes with no per-block check; when not, it runs the per-block path, which finds the failing
blocks itself (and their errors are the interpreter's: docs/native.md#errors).

Built only when every value the per-block functions take as uniform is, here, either uniform in
the whole launch (parameters, dims, constants) or affine in the block and lane coordinates; a
kernel with `get_block_id(0) % 2` in an offset, or a loop bound that depends on a block
coordinate, keeps the per-block checks. docs/native.md#one-check-per-launch.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import UnitAttr, UnrealizedConversionCastOp, i32, i64
from xdsl.ir import Block, BlockArgument, Region, SSAValue

from pypto.backend.native.fast_blocks import (_ACCESSES, _I32_MAX, _I32_MIN, _UNIFORM_I64_BOUND,
                                              COUNT_ATTR, LAUNCH_SUFFIX, RANGE_ATTR,
                                              _access_ptr, _Analysis, _RangeBuilder, _root)
from pypto.dialects import pto
from pypto.backend.native.full_blocks import guards

class _NotLaunchUniform(Exception):
    """A value the per-block check takes as uniform depends on a block coordinate in a way the
    launch check cannot follow (not affine in it)."""


class _LaunchAnalysis(_Analysis):
    """`_Analysis` with the block coordinates as affine coordinates, not uniform values."""

    def __init__(self, lane: func.FuncOp, num_params: int):
        super().__init__(lane, num_params)
        args = lane.body.blocks[0].args
        self.block_coords = list(args[num_params:num_params + 3])
        self.entry_args -= set(self.block_coords)
        self.uniform_memo.clear()
        self.affine_memo.clear()

    def affine(self, v: SSAValue) -> bool:
        if v in self.block_coords:
            return True
        return super().affine(v)


class _LaunchBuilder(_RangeBuilder):
    """`_RangeBuilder` over the box of (block, lane) pairs (block coordinate d from 0 to grid
    dim d - 1), bounding values by intervals instead of corners (`interval`)."""

    def __init__(self, an: _LaunchAnalysis, block: Block, lane_args: list[SSAValue],
                 range_args: list[SSAValue], num_params: int):
        super().__init__(an, block, lane_args, range_args, num_params)
        self.lan = an
        for j in range(3):
            del self.map[lane_args[num_params + j]]
        self.gdims = range_args[num_params + 3:num_params + 6]
        self.interval_memo: dict[tuple, tuple[SSAValue, SSAValue]] = {}

    def uniform(self, v: SSAValue) -> SSAValue:
        if isinstance(v, BlockArgument) and v not in self.map:
            raise _NotLaunchUniform
        return super().uniform(v)

    def split_dim(self, v: SSAValue) -> int:
        raise _NotLaunchUniform  # (a warp or lane id: bounded per access, per block)

    def interval(self, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """[lo, hi] (i64, inclusive) containing every value of lane-affine `v` over the
        (block, lane, loop counter) box, each i32 step checked not to overflow there. Interval
        arithmetic: exact for an affine form using each coordinate once (add3d's offset), a
        superset otherwise (a failure only costs the one-check path); linear in the form's
        size where the corners are exponential in its coordinates (6 in a 3-D launch)."""
        key = (v, self.x_box, self.epoch)
        if key in self.interval_memo:
            return self.interval_memo[key]
        one = self.const(1, i32)
        if v in self.lan.block_coords:
            last = self.add(arith.SubiOp(self.gdims[self.lan.block_coords.index(v)], one))
            result = self.const(0), self.add(arith.ExtSIOp(last, i64))
        elif v in self.an.lane_coords:
            d = self.an.lane_coords.index(v)
            first = self.x_box[0] if d == 0 else self.const(0, i32)
            last = self.add(arith.SubiOp(self.x_box[1] if d == 0 else self.bdims[d], one))
            result = self.add(arith.ExtSIOp(first, i64)), self.add(arith.ExtSIOp(last, i64))
        elif v in self.an.loop_ivs:  # (its first and last values: `at` at both ends)
            bit = 1 << (3 + list(self.an.loop_ivs).index(v))
            result = super().at(v, 0), super().at(v, bit)
        elif self.an.split(v):
            raise _NotLaunchUniform
        else:
            op = v.owner
            if isinstance(op, arith.ExtSIOp):
                result = self.interval(op.operands[0])
            else:
                (alo, ahi), (blo, bhi) = (self.interval(o) if self.an.affine(o)
                                          else (self.wide(o),) * 2 for o in op.operands)
                if isinstance(op, arith.AddiOp):
                    lo, hi = self.add(arith.AddiOp(alo, blo)), self.add(arith.AddiOp(ahi, bhi))
                elif isinstance(op, arith.SubiOp):
                    lo, hi = self.add(arith.SubiOp(alo, bhi)), self.add(arith.SubiOp(ahi, blo))
                else:
                    products = [self.add(arith.MuliOp(a, b)) for a in (alo, ahi)
                                for b in (blo, bhi)]
                    lo, hi = products[0], products[0]
                    for p in products[1:]:
                        lo, hi = self.add(arith.MinSIOp(lo, p)), self.add(arith.MaxSIOp(hi, p))
                self.in_range(lo, _I32_MIN, _I32_MAX)  # an i32 value: no overflow
                self.in_range(hi, _I32_MIN, _I32_MAX)
                result = lo, hi
        self.interval_memo[key] = result
        return result

    def _access(self, param: SSAValue, offsets: list[SSAValue]) -> None:
        """Every value of the access's offset in `[0, count)`: its interval's ends."""
        if isinstance(param.owner, pto.AllocLocalOp):
            count = self.const(param.owner.result.type.size)
        else:
            count = self.add(UnrealizedConversionCastOp.get([self.map[param]], [i64]))
            count.owner.attributes[COUNT_ATTR] = UnitAttr()
        lo = hi = self.const(0)
        for o in offsets:
            if self.an.affine(o):
                olo, ohi = self.interval(o)
            else:
                olo = ohi = self.wide(o)
                if o.type == i64:
                    self.in_range(olo, -_UNIFORM_I64_BOUND, _UNIFORM_I64_BOUND)
            lo, hi = self.add(arith.AddiOp(lo, olo)), self.add(arith.AddiOp(hi, ohi))
        self.checks.append(self.add(arith.CmpiOp(lo, count, "ult")))
        self.checks.append(self.add(arith.CmpiOp(hi, count, "ult")))


def _signature(lane: func.FuncOp, num_params: int) -> list:
    return [a.type for a in list(lane.body.blocks[0].args)[:num_params]] + [i32] * 11


def launch_variants(lane: func.FuncOp, name: str,
                    num_params: int) -> tuple[func.FuncOp, func.FuncOp] | None:
    """(`@name.launch.range`, `@name.launch.guards`) for lane function `lane` (in `cf` form, as
    `add_fast_blocks` gets it), same signature as `@name.range` (the block coordinates passed
    are ignored), or None when some check cannot be taken over the whole launch."""
    block_an = _Analysis(lane, num_params)
    found = guards(lane, block_an)
    if not found:
        return None
    an = _LaunchAnalysis(lane, num_params)
    lane_args = list(lane.body.blocks[0].args)
    types = _signature(lane, num_params)
    try:
        rblock = Block(arg_types=types)
        builder = _LaunchBuilder(an, rblock, lane_args, list(rblock.args), num_params)
        for op in lane.walk():
            if not isinstance(op, _ACCESSES):
                continue
            offsets = block_an.offsets(_access_ptr(op))
            if offsets is None or not any(block_an.affine(o) for o in offsets):
                continue  # (not proven per block either: its check stays in the lane)
            if any(not an.affine(o) and not an.uniform(o) for o in offsets):
                return None
            if any(an.split(o) for o in offsets):  # (warp / lane ids: per-block only)
                return None
            builder.access(_root(_access_ptr(op)), offsets, op)
        rblock.add_op(func.ReturnOp(builder.result()))
        gblock = Block(arg_types=types)
        gbuilder = _LaunchBuilder(an, gblock, lane_args, list(gblock.args), num_params)
        for guard in found:
            if not an.affine(guard.affine):
                return None
            u = gbuilder.wide(guard.uniform)
            pred = guard.pred if guard.expected else \
                {"slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt"}[guard.pred]
            lo, hi = gbuilder.interval(guard.affine)  # (true for all: at its end that binds)
            value = hi if pred in ("slt", "sle") else lo
            gbuilder.checks.append(gbuilder.add(arith.CmpiOp(value, u, pred)))
        gblock.add_op(func.ReturnOp(gbuilder.result()))
    except _NotLaunchUniform:
        return None
    made: list[func.FuncOp] = []
    for suffix, block in ((".range", rblock), (".guards", gblock)):
        fn = func.FuncOp(name + LAUNCH_SUFFIX + suffix, (types, [i32]), Region(block))
        fn.attributes[RANGE_ATTR] = UnitAttr()
        made.append(fn)
    return made[0], made[1]
