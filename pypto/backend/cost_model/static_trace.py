"""One block's cost trace without generating and running a traced executable.

`pto-double-buffer` costs each candidate schedule on one block of the recorded launch
(schedule.py). The model needs only that block's event stream (which ops ran, with how many
active lanes, the copies' tokens, where tile pointers point) and the bytes its copies touch in
HBM (the L2 rule's footprints), not the data. For a kernel whose every value is the same in all
lanes of the block — integer arithmetic on constants, the block id, the launch's integer
arguments and loop counters; pointers offset from L1 buffers and tensor parameters; copies,
waits, fills and MMAs — those follow from the IR and the trip counts alone. `static_profile`
walks the IR once in program order, computes those values with the interpreter's integer
semantics (pypto.dialects.arith_semantics, through pypto.analysis.lane_values), and feeds the
*same* instruments the interpreter's run would (`CostTrace`, `CopyRecorder`) the same
`after(op_id, ctx, mask, value)` calls: the event stream, the footprints and hence the cycles
are the traced run's by construction (tests/backend/cost_model/test_static_trace.py compares
them, event for event, on the zoo's pipelined kernels and random matmul shapes).

It declines (returns None, and the caller runs the traced executable as before) for anything
else: a lane-varying value (lane ids), an op outside the list below, a float other than a
constant, a wait for every copy (`wait_all`), printing, and any case where the interpreter could
fail — a division by zero, a tile or copy reaching outside its L1 buffer or tensor, an access to
L1 a copy in flight writes or reads, a copy still in flight at the end — so a candidate that
faults is still reported by the interpreter (docs/cost-model.md "What choosing costs at
compile time").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from pypto.analysis.lane_values import _binary, _compare
from pypto.backend.cost_model.access import AccessGeometry
from pypto.backend.cost_model.footprint import CopyRecorder, Footprints, lane_footprints
from pypto.backend.cost_model.params import ModelParams
from pypto.backend.cost_model.facts import cube_buffers
from pypto.backend.cost_model.profile import Profile, _KnownFacts, build_profile
from pypto.backend.cost_model.trace import CostTrace
from pypto.backend.interpreter.instruments import Chain, OpTable
from pypto.dialects import pto
from pypto.dialects.arith_semantics import DIVISIONS
from pypto.dialects.traits import (
    declared_accesses,
    declares_buffer,
    launch_id,
    offset_base,
    starts_copy,
    tile_footprint,
    waits_on,
)

_CASTS = (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.IndexCastOp)
_TILE_OPS = frozenset({"pto.fill", "pto.mma", "pto.async_load", "pto.async_store",
                       "pto.tile_store", "npu.mma", "npu.load_mma", "npu.copy_in",
                       "npu.copy_out"})
"""Tile instructions and bulk copies whose only effects are on memory (and a token)."""
_QUIET = frozenset({"npu.set_flag"})
"""Ops without a result or an effect the model sees beyond their event."""


class _Decline(Exception):
    """The kernel is outside what the static walk reproduces exactly."""


class _Ctx:
    """The lane vector of one block in block mode, as the instruments read it."""

    __slots__ = ("block_lanes", "count", "first_lane", "warp_index", "warp_size", "inflight")

    def __init__(self, lanes: int, warp_size: int):
        self.block_lanes = lanes
        self.count = lanes
        self.first_lane = 0
        self.warp_index = None
        self.warp_size = warp_size
        self.inflight: dict[int, Any] = {}


def _width(v: SSAValue) -> int | None:
    t = v.type
    if isinstance(t, IntegerType):
        return t.width.data
    return 64 if isinstance(t, IndexType) else None


class _Walk:
    """Program-order execution of one block's uniform values, feeding the instruments."""

    def __init__(self, kernel: func.FuncOp, table: OpTable, block: tuple[int, int, int],
                 args: Sequence[Any], sizes: Sequence[int | None], instrument: Chain,
                 warp_size: int):
        self.kernel = kernel
        self.table = table
        self.block = block
        self.values: dict[SSAValue, Any] = {}
        self.roots: dict[SSAValue, tuple[SSAValue, int]] = {}  # pointer -> (root, offset)
        self.sizes = sizes
        self.ins = instrument
        self.ctx = _Ctx(block[0] * block[1] * block[2], warp_size)
        self.next_token = 0
        self.kinds: dict[Operation, tuple[str, int, Any]] = {}
        # token -> (L1 root, lo, hi) the copy accesses while in flight
        self.inflight: dict[int, list[tuple[SSAValue, int, int]]] = {}
        for arg, given in zip(kernel.body.block.args, args):
            if isinstance(arg.type, pto.PtrType):
                self.values[arg] = 0
                self.roots[arg] = (arg, 0)
            elif isinstance(given, int) and _width(arg) is not None:
                self.values[arg] = _wrap_int(given, _width(arg))
            else:
                raise _Decline(f"parameter {arg}")

    # values ------------------------------------------------------------------------------------

    def int_of(self, v: SSAValue) -> int | None:
        got = self.values.get(v)
        return None if got is None or isinstance(got, float) else int(got)

    def _scalar(self, op: Operation) -> Any:
        """The value of an integer (or id, or constant) op."""
        ident = launch_id(op)
        if ident is not None:
            d = getattr(op, "dim_index", 0)
            if ident == "block_id":
                return 0
            if ident == "grid_dim":
                return 1
            if ident == "block_dim":
                return self.block[d]
            raise _Decline(f"lane-varying {op.name}")
        if isinstance(op, arith.ConstantOp):
            if isinstance(op.value, IntegerAttr):
                return int(op.value.value.data)
            if isinstance(op.value, FloatAttr):
                return float(op.value.value.data)
            raise _Decline("constant")
        width = _width(op.results[0]) if len(op.results) == 1 else None
        if width is None:
            raise _Decline(op.name)
        operands = [self.values[o] for o in op.operands]
        if any(isinstance(x, float) for x in operands):
            raise _Decline("float arithmetic")
        if isinstance(op, arith.CmpiOp):
            out = _compare(op.predicate.value.data, np.asarray(operands[0]),
                           np.asarray(operands[1]), _width(op.operands[0]) or 64)
            if out is None:
                raise _Decline("predicate")
            return int(bool(out))
        if isinstance(op, arith.SelectOp):
            return operands[1] if operands[0] != 0 else operands[2]
        if isinstance(op, arith.ExtSIOp) and _width(op.operands[0]) == 1:
            return -1 if operands[0] else 0
        if isinstance(op, arith.ExtUIOp):
            w = _width(op.operands[0]) or 64
            return int(operands[0]) & ((1 << w) - 1) if w < 64 else operands[0]
        if isinstance(op, _CASTS):
            return _wrap_int(int(operands[0]), width)
        if len(operands) == 2:
            if op.name in DIVISIONS and int(operands[1]) == 0:
                raise _Decline("division by zero")  # the interpreter reports it
            out = _binary(op, np.asarray(operands[0]), np.asarray(operands[1]),
                          _width(op.operands[0]) or 64)
            if out is not None:
                return _wrap_int(int(out), width)
        raise _Decline(op.name)

    # memory ------------------------------------------------------------------------------------

    def _regions(self, op: Operation) -> list[tuple[SSAValue, int, int, str, str]]:
        """(root, lo, hi, space, kind) of every memory operand of a tile op, checked in bounds."""
        tiles = tile_footprint(op, self.int_of)
        if tiles is None:
            raise _Decline(op.name)
        out = []
        for access in declared_accesses(op):
            address = op.operands[access.operand]
            tile = tiles.get(access.operand)
            rooted = self.roots.get(address)
            if tile is None or rooted is None:
                raise _Decline("an unknown tile")
            root, offset = rooted
            lo, hi = offset, offset + tile.extent
            if isinstance(root, BlockArgument):
                size = self.sizes[root.index]
                space = "global"
            else:
                size = root.type.size
                space = "local"
            if size is None or lo < 0 or hi > size or tile.rows < 0 or tile.row_len < 0:
                raise _Decline("out of bounds")  # the interpreter says where
            out.append((root, lo, hi, space, access.kind))
        return out

    def _check_in_flight(self, regions: list[tuple[SSAValue, int, int, str, str]]) -> None:
        for root, lo, hi, space, _ in regions:
            if space != "local":
                continue
            for busy in self.inflight.values():
                for other, olo, ohi in busy:
                    if other is root and olo < hi and lo < ohi:
                        raise _Decline("an access to L1 a copy in flight uses")

    # execution ---------------------------------------------------------------------------------

    def run_block(self, block: Block) -> list[Any]:
        """Runs the ops of `block`; returns the values its terminator yields."""
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                return [self.values[o] for o in op.operands]
            if isinstance(op, func.ReturnOp):
                if self.inflight:
                    raise _Decline("copies in flight at the end")
                return []
            self.op(op)
        return []

    def _kind(self, op: Operation) -> str:
        """What `op` is to the walk (asked of its traits once per op, not per execution)."""
        name = op.name
        if isinstance(op, scf.ForOp):
            return "for"
        if isinstance(op, scf.IfOp):
            return "if"
        if declares_buffer(op):
            return "alloc"
        if offset_base(op) is not None:
            return "ptr"
        if name in _TILE_OPS:
            return "tile"
        if waits_on(op) == "token":
            return "wait"
        if name in _QUIET:
            return "quiet"
        if op.results and not op.regions and not declared_accesses(op) and \
                (name.startswith("arith.") or launch_id(op) is not None):
            if name in _FAST and all(_width(v) in (32, 64) for v in (*op.operands, *op.results)):
                return name
            return "scalar"
        raise _Decline(name)

    def op(self, op: Operation) -> None:
        known = self.kinds.get(op)
        if known is None:
            kind = self._kind(op)
            constant = self._scalar(op) if isinstance(op, arith.ConstantOp) else None
            known = self.kinds[op] = (kind, self.table.id_of(op), constant)
        kind, op_id, value = known
        values = self.values
        fast = _FAST.get(kind)
        if value is not None:  # a constant
            values[op.results[0]] = value
        elif fast is not None:
            width = _width(op.results[0])
            value = _wrap_int(fast(values[op.operands[0]], values[op.operands[1]]), width)
            values[op.results[0]] = value
        elif kind == "for":
            lb, ub, step = (self.int_of(v) for v in (op.lb, op.ub, op.step))
            if lb is None or ub is None or step is None or step <= 0:
                raise _Decline("loop bounds")
            carried = [values[v] for v in op.iter_args]
            body = op.body.block
            for i in range(lb, ub, step):
                values[body.args[0]] = i
                for arg, v in zip(body.args[1:], carried):
                    values[arg] = v
                carried = self.run_block(body)
            for r, v in zip(op.results, carried):
                values[r] = v
            value = carried[0] if carried else None
        elif kind == "if":
            cond = self.int_of(op.cond)
            if cond is None:
                raise _Decline("condition")
            region = op.true_region if cond else op.false_region
            results = self.run_block(region.block) if region.blocks else []
            for r, v in zip(op.results, results):
                values[r] = v
            value = results[0] if results else None
        elif kind == "alloc":
            value = values[op.results[0]] = 0
            self.roots[op.results[0]] = (op.results[0], 0)
        elif kind == "ptr":
            base = op.operands[0]
            offset = self.int_of(op.operands[1])
            rooted = self.roots.get(base)
            if offset is None or rooted is None:
                raise _Decline("pointer")
            value = values[op.results[0]] = int(values[base]) + offset
            self.roots[op.results[0]] = (rooted[0], rooted[1] + offset)
        elif kind == "tile":
            regions = self._regions(op)
            self._check_in_flight(regions)
            if starts_copy(op):
                value = self.next_token
                self.next_token += 1
                self.inflight[value] = [(root, lo, hi) for root, lo, hi, space, _ in regions
                                        if space == "local"]
                values[op.results[0]] = value
            elif op.results:
                raise _Decline(op.name)
        elif kind == "wait":
            token = self.int_of(op.operands[0])
            if token is None:
                raise _Decline("token")
            self.inflight.pop(token, None)
            value = token
        elif kind == "scalar":
            value = values[op.results[0]] = self._scalar(op)
        self.ctx.inflight = self.inflight
        self.ins.after(op_id, self.ctx, None, value)


def _wrap_int(x: int, width: int | None) -> int:
    """Two's-complement wrap of a Python int to `width` bits (32 or 64)."""
    if width is None or width >= 64 and -(1 << 63) <= x < (1 << 63):
        return x
    if width == 1:
        return x & 1  # i1 stays 0 / 1 (pypto.analysis.lane_values._wrap)
    half = 1 << (width - 1)
    return ((x + half) & ((1 << width) - 1)) - half


_FAST: dict[str, Any] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.maxsi": max,
    "arith.minsi": min,
}
"""Integer ops whose wrapped result is the wrapped exact one (operands already in range):
computed on Python ints; the others through the shared semantics (`_binary`)."""


def static_profile(kernel: func.FuncOp, block: tuple[int, int, int], args: Sequence[Any],
                   sizes: Sequence[int | None], params: ModelParams) -> Profile | None:
    """The `Profile` of one block (grid 1 x 1 x 1) of `kernel` with `args` (integers for
    scalar parameters, anything for tensors) whose tensors hold `sizes` elements (by
    parameter index), as `run_and_cost` of a traced run gives it; None when the kernel is
    outside what a static walk reproduces (see the module docstring)."""
    table = OpTable.of(kernel)
    geometry = AccessGeometry.of(params.target)
    trace = CostTrace(geometry)
    footprints = Footprints()
    copies = CopyRecorder(args, footprints)
    chain = Chain(trace, copies)
    grid = (1, 1, 1)
    chain.begin(table, grid, block)
    try:
        walk = _Walk(kernel, table, block, args, sizes, chain, params.target.warp_size)
        walk.run_block(kernel.body.block)
    except (_Decline, KeyError):
        return None
    finally:
        chain.end()
    tensor_bytes = {i: n * _itemsize(arg) for i, (n, arg) in
                    enumerate(zip(sizes, kernel.body.block.args)) if n is not None}
    lane_footprints(trace.lane_spans(), trace.table, None, None, footprints)
    # every value the walk computed is one per block: no lane-varying value, so the facts need
    # no uniformity analysis of the kernel (its answer would be the empty set)
    table.derived("cost-facts", _UniformFacts)
    return build_profile(kernel.sym_name.data, grid, block, params, table,
                         trace.block_classes(), tensor_bytes,
                         footprints.bytes(geometry.sector_bytes))


class _UniformFacts(_KnownFacts):
    """The facts of a kernel whose values are all block-uniform (what the walk accepted)."""

    def __init__(self, ops: Sequence[Any]) -> None:
        self.ops = ops
        self.varying = set()
        self.cube = cube_buffers(ops[0].op) if len(ops) else None
        self.facts = {}


def _itemsize(arg: BlockArgument) -> int:
    from pypto import dtypes

    return int(np.dtype(dtypes.np_dtype_of(arg.type.element_type)).itemsize)


__all__ = ["static_profile"]
