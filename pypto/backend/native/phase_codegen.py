"""Code generation of the phase plan (phases.py): phase functions and the grid function.

`split(kernel)` turns a kernel the plan accepts into one function per phase (the lane-level ops
of the phase under its guards, with a prologue that recomputes, receives or loads from spill
slots the values it uses) and a grid function running the block-level code: the loop over
blocks, the L1 arena's refill, block-level loops and ifs, block-level instructions, and a lane
loop per phase. docs/native.md#phases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, replace

from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import (ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr,
                                   IntegerType, UnitAttr, i1, i32, i64)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto.backend.native import lane_jam, pair_fusion, pair_runs, tile_loops, while_codegen
from pypto.backend.native.quick_ops import append as _add, int_constant
from pypto.backend.native.row_copies import tile_store
from pypto.backend.native import arena_refill, fast_prefix, warp_lanes
from pypto.backend.native.constant_lanes import GATHER_FREE_ATTR, MAX_LOOPS, constant_lanes
from pypto.backend.native.fast_blocks import BLOCK_ATTR, FAST_SUFFIX, NSW_ATTR, clip_x, x_guard
from pypto.backend.native.phases import (ARENA_ATTR, L1_INDEX_ATTR, LANE_SUFFIX, UNIFORM_IDS,
                                         BarrierCheck, Collective, If, Item, Loop, Phase,
                                         Plan, While,
                                         _floating,
                                         allocs, arena_layout, arena_words, needs_phases, plan)
from pypto.dialects import pto
from pypto.dialects.traits import launch_id

Guards = tuple[tuple[SSAValue, bool], ...]
RANGE_SUFFIX = ".range"
"""`@k.pN.range`: 1 when phase N's lane-affine accesses are in range for the whole block
(fast_blocks.py); the grid function then runs its fast lane loops."""


def _c(block: Block, value: int, t: IntegerType = i32) -> SSAValue:
    op = int_constant(value, t)  # (quick_ops: docs/native.md#compile-time)
    block.add_op(op)
    return op.result


def _token(v: SSAValue) -> bool:
    """Tokens compile to nothing: copies complete at issue, waits are proven exact
    (tokens.py), so loops and ifs carry no token."""
    return isinstance(v.type, pto.TokenType)


def _nsw(op: Operation) -> Operation:
    """Mark lane-index arithmetic that cannot overflow (`slot * lanes + linear lane` stays
    below the spill array's length, allocated at launch): LLVM then sees consecutive slots."""
    op.attributes[NSW_ATTR] = UnitAttr()
    return op


class _PhaseFn:
    """One phase function: a prologue (the outside values it uses, recomputed, passed or
    loaded from spill slots), then its ops under its guards (nested `scf.if`)."""

    def __init__(self, emitter: "_Emitter", index: int, phase: Phase):
        self.em = emitter
        self.index = index
        self.phase = phase
        params = list(emitter.plan.kernel.body.block.args)
        self.entry = Block(arg_types=[a.type for a in params])
        self.sources: list[tuple[str, object]] = [("param", i) for i in range(len(params))]
        self.map: dict[SSAValue, SSAValue] = dict(zip(params, self.entry.args))
        self.spill = self._arg(llvm.LLVMPointerType(), ("spill", None))
        self.arena = self._arg(llvm.LLVMPointerType(), ("arena", None))
        self._lin: tuple[SSAValue, SSAValue] | None = None
        self.clones: dict[Operation, Operation] = {}

    def _arg(self, t: object, source: tuple[str, object]) -> SSAValue:
        arg = self.entry.insert_arg(t, len(self.entry.args))  # type: ignore[arg-type]
        self.sources.append(source)
        return arg

    def _lanes(self) -> tuple[SSAValue, SSAValue]:
        """(linear lane id, lanes per block), computed once in the prologue."""
        if self._lin is None:
            b = self.entry
            lx, ly, lz = (_add(b, pto.GetLocalIdOp(d)) for d in range(3))
            bx, by, bz = (_add(b, pto.GetBlockDimOp(d)) for d in range(3))
            inner = _add(b, _nsw(arith.AddiOp(ly, _add(b, _nsw(arith.MuliOp(by, lz))))))
            lin = _add(b, _nsw(arith.AddiOp(lx, _add(b, _nsw(arith.MuliOp(bx, inner))))))
            lanes = _add(b, _nsw(arith.MuliOp(_add(b, _nsw(arith.MuliOp(bx, by))), bz)))
            self._lin = (lin, lanes)
        return self._lin

    def slot_ops(self, slot: int, t: Attribute) -> tuple[list[Operation], SSAValue]:
        """Ops computing the address of this lane's entry of spill slot `slot` holding a `t`:
        slot `slot` is the 8-byte words `[slot * lanes, (slot + 1) * lanes)`, its entries
        `t`-sized from there, so a lane loop reads and writes them consecutively (vectorised
        loads and stores, not gathers and scatters)."""
        lin, lanes = self._lanes()
        s = arith.ConstantOp(IntegerAttr(slot, i32))
        row = _nsw(arith.MuliOp(s, lanes))
        wide_row = arith.ExtSIOp(row, i64)
        base = llvm.GEPOp.from_mixed_indices(self.spill, [wide_row], i64)
        wide = arith.ExtSIOp(lin, i64)
        gep = llvm.GEPOp.from_mixed_indices(base, [wide], t)
        return [s, row, wide_row, base, wide, gep], gep.results[0]

    def resolve(self, v: SSAValue) -> SSAValue:
        """`v` (a kernel value) inside this phase function."""
        found = self.map.get(v)
        if found is not None:
            return found
        plan = self.em.plan
        owner = v.owner
        if isinstance(owner, Operation) and _floating(owner):
            operands = [self.resolve(o) for o in owner.operands]
            clone = owner.clone(value_mapper=dict(zip(owner.operands, operands)))
            self.entry.add_op(clone)
            for old, new in zip(owner.results, clone.results):
                self.map[old] = new
            return self.map[v]
        if plan.uniform(v):
            arg = self._arg(v.type, ("extra", v))
            self.map[v] = arg
            return arg
        ops, address = self.slot_ops(self.em.slot(v), v.type)
        load = llvm.LoadOp(address, v.type)
        self.entry.add_ops([*ops, load])
        self.map[v] = load.results[0]
        return load.results[0]

    def build(self) -> func.FuncOp:
        phase = self.phase
        self._lanes()  # first: spill addresses may be needed anywhere below
        inside: set[SSAValue] = set()
        for op in phase.ops:
            for o in op.walk():
                inside.update(o.results)
                for r in o.regions:
                    for b in r.blocks:
                        inside.update(b.args)
        for op in phase.ops:
            for o in op.walk():
                for operand in o.operands:
                    if operand not in inside:
                        self.resolve(operand)
        conds = [(self.resolve(c), taken) for c, taken in phase.guards]
        made = {r for op in phase.ops for r in op.results}  # (copies of this phase's values:
        values = [None if src in made else self.resolve(src)   # taken after its ops, below)
                  for src, _ in phase.copies]
        body = self.entry
        nest: list[Block] = []
        for cond, taken in conds:
            if not taken:
                one = arith.ConstantOp(IntegerAttr(1, i1))
                flip = arith.XOrIOp(cond, one)
                body.add_ops([one, flip])
                cond = flip.result
            inner = Block()
            body.add_op(scf.IfOp(cond, [], Region(inner), None))
            nest.append(body)
            body = inner
        mapper = dict(self.map)
        for op in phase.ops:
            clone = op.clone(value_mapper=mapper)
            body.add_op(clone)
            self.clones[op] = clone
            mapper.update(zip(op.results, clone.results))
        for (src, key), value in zip(phase.copies, values):
            value = mapper[src] if value is None else value
            ops, address = self.slot_ops(self.em.slot(key), value.type)
            body.add_ops([*ops, llvm.StoreOp(value, address)])
        if nest:
            body.add_op(scf.YieldOp())
            for outer in reversed(nest[1:]):
                outer.add_op(scf.YieldOp())
        self.entry.add_op(func.ReturnOp())
        kernel = self.em.plan.kernel
        inputs = [a.type for a in self.entry.args]
        fn = func.FuncOp(f"{self.em.name}.p{self.index}", FunctionType.from_lists(inputs, []),
                         Region(self.entry))
        n = len(kernel.body.block.args)
        if kernel.arg_attrs is not None:
            fn.arg_attrs = ArrayAttr([*kernel.arg_attrs.data,
                                      *[DictionaryAttr({})] * (len(inputs) - n)])
        fn.attributes["pto.kernel"] = UnitAttr()
        fn.attributes[ARENA_ATTR] = IntegerAttr(self.arena.index, i64)
        self.func = fn
        return fn

    def spill_store(self, value: SSAValue, slot: int) -> None:
        """Store this phase's `value` (a result of one of its ops) in its slot, right after
        the op."""
        clone = self.clones[value.owner]  # type: ignore[index]
        ops, address = self.slot_ops(slot, value.type)
        block = clone.parent_block()
        assert block is not None and clone.next_op is not None
        block.insert_ops_before([*ops, llvm.StoreOp(clone.results[value.index], address)],
                                clone.next_op)


@dataclass
class _Grid:
    """The grid function's values during emission."""

    params: list[SSAValue]
    block_ids: list[SSAValue]
    grid_dims: list[SSAValue]
    block_dims: list[SSAValue]
    arena: SSAValue
    spill: SSAValue
    err: SSAValue


class _Emitter:
    """Builds the phase functions and the grid function of a phase-split kernel."""

    def __init__(self, plan: Plan, name: str):
        self.plan = plan
        self.name = name
        self.slots: dict[SSAValue, int] = {}
        self.phases: list[_PhaseFn] = []
        self.defined_in: dict[Operation, _PhaseFn] = {}
        self.requests: dict[SSAValue, int] = {}
        self.scopes: list[dict[SSAValue, SSAValue]] = []
        self.shape: tuple[int, int, int] | None = None  # the compiled block (split)
        self.run_lanes: dict[int, list[tuple[int, int]]] = {}  # (constant_lanes.py)
        self.gather_free = False
        self.last_lanes: tuple[_PhaseFn, Phase] | None = None  # (fast_prefix.py)

    # slots ----------------------------------------------------------------------------------

    def slot(self, v: SSAValue) -> int:
        owner = v.owner
        key = v
        if isinstance(owner, scf.ForOp) and owner in self.plan.structural:
            key = owner.body.block.args[v.index + 1]  # a loop's result: its iter arg's slot
        elif isinstance(owner, scf.WhileOp) and owner in self.plan.structural:
            key = owner.after_region.block.args[v.index]  # (the condition's last values)
        if key not in self.slots:
            self.slots[key] = len(self.slots)
        slot = self.slots[key]
        if isinstance(owner, Operation) and owner not in self.plan.structural:
            self.requests[v] = slot  # an op's result: its phase stores it
        return slot

    # the grid function ----------------------------------------------------------------------

    def grid(self) -> tuple[list[func.FuncOp], func.FuncOp]:
        """(phase functions, grid function); the phase functions still have pto launch ids
        (`pto-simt-to-lanes` turns them into lane functions)."""
        kernel = self.plan.kernel
        params = [a.type for a in kernel.body.block.args]
        ptr = llvm.LLVMPointerType()
        inputs = [*params, *[i32] * 8, ptr, ptr, ptr]
        entry = Block(arg_types=inputs)
        a = entry.args
        n = len(params)
        gx, gy, gz, bx, by, bz, first, end = a[n:n + 8]
        arena, spill, err = a[n + 8:n + 11]
        c0, c1 = _c(entry, 0), _c(entry, 1)

        before = Block(arg_types=[i32, i32])
        b, st = before.args
        go = _add(before, arith.AndIOp(_add(before, arith.CmpiOp(b, end, "slt")),
                                      _add(before, arith.CmpiOp(st, c0, "eq"))))
        before.add_op(scf.ConditionOp(go, b, st))
        body = Block(arg_types=[i32, i32])
        b1 = body.args[0]
        cbx = _add(body, arith.RemUIOp(b1, gx))
        rest = _add(body, arith.DivUIOp(b1, gx))
        cby = _add(body, arith.RemUIOp(rest, gy))
        cbz = _add(body, arith.DivUIOp(rest, gy))
        g = _Grid(list(a[:n]), [cbx, cby, cbz], [gx, gy, gz], [bx, by, bz], arena, spill, err)
        for slot, coord in zip((4, 5, 6), (cbx, cby, cbz)):  # the block, for collectives'
            wide = _add(body, arith.ExtSIOp(coord, i64))       # error messages
            where = _add(body, llvm.GEPOp.from_mixed_indices(err, [slot], i64))
            body.add_op(llvm.StoreOp(wide, where))
        self._refill_arena(body, arena, g)
        self.scopes = [dict(zip(kernel.body.block.args, a[:n]))]
        self._emit(self.plan.items, body, g)
        status = _add(body, arith.TruncIOp(_add(body, llvm.LoadOp(err, i64)), i32))
        body.add_op(scf.YieldOp(_add(body, arith.AddiOp(b1, c1)), status))
        outer = scf.WhileOp([first, c0], [i32, i32], Region(before), Region(body))
        entry.add_op(outer)
        entry.add_op(func.ReturnOp(outer.results[1]))
        grid = func.FuncOp(self.name, (inputs, [i32]), Region(entry))
        grid.attributes[ARENA_ATTR] = IntegerAttr(n + 8, i64)
        if self.gather_free:
            grid.attributes[GATHER_FREE_ATTR] = UnitAttr()
        for value, slot in self.requests.items():
            self.defined_in[value.owner].spill_store(value, slot)  # type: ignore[index]
        return [p.func for p in self.phases], grid

    def _refill_arena(self, block: Block, arena: SSAValue, g: _Grid) -> None:
        """Copy the poisoned template (the arena's second half) over the block's arena; in a
        launch of the compiled 1-D shape only the words a read may see (arena_refill.py)."""
        words = arena_words(arena_layout(self.plan.kernel))
        if not words:
            return
        shape = self.shape
        ranges = arena_refill.refill_ranges(self.plan.kernel, shape[0], self.plan.uniform) \
            if shape is not None and shape[1:] == (1, 1) else None
        if ranges is None:
            _copy_words(block, arena, words, 0, words)
            return
        go = _c(block, 1, i1)
        for dim, size in zip(g.block_dims, shape):  # type: ignore[arg-type]
            go = _add(block, arith.AndIOp(go, _add(block, arith.CmpiOp(
                dim, _c(block, size), "eq"))))
        known, every = Block(), Block()
        for start, end in ranges:
            _copy_words(known, arena, words, start, end)
        known.add_op(scf.YieldOp())
        _copy_words(every, arena, words, 0, words)
        every.add_op(scf.YieldOp())
        block.add_op(scf.IfOp(go, [], Region(known), Region(every)))

    def gresolve(self, v: SSAValue, block: Block, g: _Grid) -> SSAValue:
        """A uniform kernel value in the grid function (recomputed at `block` if needed)."""
        for scope in reversed(self.scopes):
            if v in scope:
                return scope[v]
        op = v.owner
        assert isinstance(op, Operation), v
        name = launch_id(op)
        if name in UNIFORM_IDS:
            d = op.properties["dim"].value.data  # type: ignore[union-attr]
            result = {"block_id": g.block_ids, "block_dim": g.block_dims,
                      "grid_dim": g.grid_dims}[name][d]
        elif isinstance(op, pto.AllocLocalOp):
            clone = op.clone()
            block.add_op(clone)
            result = clone.results[0]
        else:
            assert _floating(op) and self.plan.uniform(v), op
            operands = [self.gresolve(o, block, g) for o in op.operands]
            clone = op.clone(value_mapper=dict(zip(op.operands, operands)))
            block.add_op(clone)
            result = clone.results[v.index]  # type: ignore[union-attr]
        self.scopes[-1][v] = result
        return result

    def _phase(self, phase: Phase, block: Block, g: _Grid) -> None:
        fn, args = self._phase_fn(phase, block, g)
        pairs = pair_runs.emit(phase.ops, phase.guards, phase.copies, self.shape,
                               self.plan.uniform, lambda v, at: self.gresolve(v, at, g), block,
                               g.block_dims)  # a sorting network's step: runs of pairs
        if pairs is not None:  # (the lane loops below: for the other `j`)
            self.scopes.append({})
            self._lane_loops(fn, phase, args, pairs, g)
            self.scopes.pop()
            pairs.add_op(scf.YieldOp())
        else:
            self._lane_loops(fn, phase, args, block, g)
            self.last_lanes = (fn, phase)

    def _phase_fn(self, phase: Phase, block: Block, g: _Grid) -> tuple[_PhaseFn, list[SSAValue]]:
        """The phase's function, built and registered, and its call's arguments at `block`."""
        fn = _PhaseFn(self, len(self.phases), phase)
        fn.build()
        for op in phase.ops:
            self.defined_in[op] = fn
        self.phases.append(fn)
        return fn, self.call_args(fn, block, g)

    def call_args(self, fn: _PhaseFn, block: Block, g: _Grid) -> list[SSAValue]:
        """The arguments of a call of phase function `fn` at `block`."""
        args: list[SSAValue] = []
        for kind, what in fn.sources:
            if kind == "param":
                args.append(g.params[what])  # type: ignore[index]
            elif kind == "spill":
                args.append(g.spill)
            elif kind == "arena":
                args.append(g.arena)
            else:
                args.append(self.gresolve(what, block, g))  # type: ignore[arg-type]
        return args

    def _range_call(self, fn: _PhaseFn, phase: Phase, args: list[SSAValue], block: Block,
                    g: _Grid) -> tuple[bool, tuple[SSAValue, SSAValue], SSAValue]:
        """The call of the phase's range function at `block`: whether its prologue is checked
        (it may raise for a lane left out), the lanes' x bounds, and the verdict."""
        checked_prologue = any(isinstance(o, arith.FPToSIOp | arith.FPToUIOp)
                               for o in fn.entry.ops)
        lo_hi = _x_bounds(self, () if checked_prologue else phase.guards, block, g)
        ok = _add(block, func.CallOp(fn.func.sym_name.data + RANGE_SUFFIX,
                                     [*args, *g.block_ids, *g.grid_dims, *g.block_dims, *lo_hi],
                                     [i32]))
        return checked_prologue, lo_hi, ok

    def _lane_loops(self, fn: _PhaseFn, phase: Phase, args: list[SSAValue], block: Block,
                    g: _Grid) -> None:
        """The phase's lane loops: fast ones when its range function passes, else checked."""
        checked_prologue, lo_hi, ok = self._range_call(fn, phase, args, block, g)
        self._fast_or_checked(phase, fn.func.sym_name.data, args, checked_prologue, lo_hi, ok,
                              block, g)

    def _prepare(self, phase: Phase, block: Block, g: _Grid) -> tuple[Any, ...]:
        """A phase of a run (constant_lanes.py): its function, arguments and range check's
        call at `block` (`_fast_or_checked`'s arguments before `block`)."""
        fn, args = self._phase_fn(phase, block, g)
        checked_prologue, lo_hi, ok = self._range_call(fn, phase, args, block, g)
        return phase, fn.func.sym_name.data, args, checked_prologue, lo_hi, ok

    def _fast_or_checked(self, phase: Phase, name: str, args: list[SSAValue],
                         checked_prologue: bool, lo_hi: tuple[SSAValue, SSAValue],
                         ok: SSAValue, block: Block, g: _Grid) -> None:
        """The phase's fast lane loops when its range check `ok` passed, else its checked
        lane loop."""
        fast, checked = self.fast_lanes(phase, name, args, checked_prologue, lo_hi, block, g), \
            Block()
        _lane_loop(checked, name, args, g)
        checked.add_op(scf.YieldOp())
        block.add_op(scf.IfOp(_add(block, arith.CmpiOp(ok, _c(block, 0), "ne")), [],
                              Region(fast), Region(checked)))

    def fast_lanes(self, phase: Phase, name: str, args: list[SSAValue], checked_prologue: bool,
                   lo_hi: tuple[SSAValue, SSAValue], block: Block, g: _Grid) -> Block:
        """A block (ending in `scf.yield`) running the phase's fast lane loops, for a region
        under `block` where its range check passed."""
        fast = Block()
        lanes = _lane_bounds(self, () if checked_prologue else phase.guards, block, g)
        if lanes is None and self.shape is not None and phase.ops and \
                lane_jam.candidate(phase.ops):  # (not a phase of slot copies alone)
            # constant lane loops, rows of lanes jammed: docs/native.md#jammed-rows
            def lane_call(b: Block, tx: SSAValue, ty: SSAValue, tz: SSAValue) -> SSAValue:
                return _add(b, func.CallOp(name + FAST_SUFFIX + LANE_SUFFIX,
                                           [*args, *g.block_ids, tx, ty, tz, *g.grid_dims,
                                            *g.block_dims, g.err], [i32]))
            lane_jam.jammed_or(fast, name,
                               lambda b: _fast_lane_loops(b, name, args, g, lo_hi),
                               lane_call, lo_hi, g.block_dims, self.shape, g.err)
        elif lanes is None and self.shape is not None and tile_store(phase.ops):
            # a tile store: constant lane loops in the interpreter's lane order, each row a
            # constant-length copy (docs/native.md#tile-stores)
            def lane_call(b: Block, tx: SSAValue, ty: SSAValue, tz: SSAValue) -> SSAValue:
                return _add(b, func.CallOp(name + FAST_SUFFIX + LANE_SUFFIX,
                                           [*args, *g.block_ids, tx, ty, tz, *g.grid_dims,
                                            *g.block_dims, g.err], [i32]))
            lane_jam.jammed_or(fast, None,
                               lambda b: _fast_lane_loops(b, name, args, g, lo_hi),
                               lane_call, lo_hi, g.block_dims, self.shape, g.err,
                               launch_rows=True)
        elif lanes is None and warp_lanes.applies(self.shape) and \
                not any(_x_guard(c, t, self) for c, t in phase.guards) and \
                warp_lanes.permutes_warps(phase.ops, self.plan.uniform):
            # whole warps, 32 lanes of constant trip count each: docs/native.md#warp-lanes
            shaped = replace(g, block_dims=[_c(fast, size) for size in self.shape])

            def x_call(b: Block, tx: SSAValue) -> SSAValue:
                return _add(b, func.CallOp(name + FAST_SUFFIX + LANE_SUFFIX,
                                           [*args, *g.block_ids, tx, _c(b, 0), _c(b, 0),
                                            *g.grid_dims, *shaped.block_dims, g.err], [i32]))
            warp_lanes.emit(fast, g.block_dims, self.shape, g.err, x_call,  # type: ignore
                            lambda b: _fast_lane_loops(b, name, args, g, lo_hi))
        else:
            _fast_lane_loops(fast, name, args, g, lo_hi, lanes)
        fast.add_op(scf.YieldOp())
        return fast

    def _group_length(self, items: list[Item], start: int) -> int:
        """How many phases from `items[start]` on get constant lane ranges (constant_lanes.py)."""
        shape = self.shape
        if shape is None or shape[1] != 1 or shape[2] != 1:
            return 0
        count, loops = 0, 0
        for item in items[start:]:
            if not isinstance(item, Phase) or not item.guards:
                break
            lanes = constant_lanes(item.ops, item.guards, self.plan.uniform, shape[0])
            if lanes is None:
                break
            loops += sum(1 for a, b in lanes if a < b)
            if loops > MAX_LOOPS:
                break
            self.run_lanes[id(item)] = lanes
            count += 1
        return count

    def _group(self, phases: list[Phase], block: Block, g: _Grid) -> None:
        """A run of phases with constant lane ranges (constant_lanes.py): every range check
        first; when all pass in a launch of the compiled block shape, the phases' fast lane
        loops with constant bounds (phase after phase, lanes in order: the same order), else
        each phase as `_phase` runs it."""
        assert self.shape is not None
        prepared = [self._prepare(phase, block, g) for phase in phases]
        go = _c(block, 1, i1)
        for dim, size in zip(g.block_dims, self.shape):
            go = _add(block, arith.AndIOp(go, _add(block, arith.CmpiOp(
                dim, _c(block, size), "eq"))))
        for *_, ok in prepared:
            go = _add(block, arith.AndIOp(go, _add(block, arith.CmpiOp(ok, _c(block, 0), "ne"))))
        self.gather_free = True  # (constant_lanes.GATHER_FREE_ATTR)
        known, each = Block(), Block()
        shaped = replace(g, block_dims=[_c(known, size) for size in self.shape])
        lanes = [self.run_lanes[id(p)] for p in phases]
        for (phase, name, args, *_), ranges in zip(prepared, lanes):
            for start, end in ranges:
                if start < end:
                    _fast_lane_loops(known, name, args, shaped,
                                     (_c(known, start), _c(known, end)))
        known.add_op(scf.YieldOp())
        for p in prepared:
            self._fast_or_checked(*p, each, g)
        each.add_op(scf.YieldOp())
        block.add_op(scf.IfOp(go, [], Region(known), Region(each)))

    def _emit(self, items: list[Item], block: Block, g: _Grid) -> None:
        skip = 0
        for index, item in enumerate(items):
            if skip:
                skip -= 1
                continue
            run = self._group_length(items, index)
            if run:
                self._group(items[index:index + run], block, g)  # type: ignore[arg-type]
                skip = run - 1
            elif isinstance(item, Phase):
                self._phase(item, block, g)
            elif isinstance(item, Loop):
                self._loop(item, block, g)
            elif isinstance(item, Collective):
                self._collective(item.op, block, g)
            elif isinstance(item, While):  # while_codegen.py
                while_codegen.emit(self, item, block, g)
            elif isinstance(item, BarrierCheck):
                while_codegen.check_barrier(self, item, block, g)
            else:
                self._if(item, block, g)

    def _collective(self, op: Operation, block: Block, g: _Grid) -> None:
        """Once per block, between lane loops: the copy itself (complete at issue, as the
        interpreter's; waits then have nothing left to do), fill or mma."""
        if isinstance(op, pto.WaitOp | pto.WaitAllOp):
            return
        operands = [self.gresolve(v, block, g) for v in op.operands]
        if tile_loops.emit(op, operands, block):  # a simple tile instruction: a loop nest
            return
        block.add_op(op.clone(value_mapper=dict(zip(op.operands, operands))))

    def _loop(self, item: Loop, block: Block, g: _Grid) -> None:
        op = item.op
        args = op.body.block.args

        def at_iv(v: SSAValue, at: Block, iv: SSAValue) -> SSAValue:
            self.scopes.append({args[0]: iv})
            found = self.gresolve(v, at, g)
            self.scopes.pop()
            return found

        def body_at(at: Block, iv: SSAValue) -> None:
            self.scopes.append({args[0]: iv})
            self._emit(item.body, at, g)
            self.scopes.pop()

        if pair_fusion.emit(item, self.shape, self.plan.uniform, at_iv, body_at, block,
                            g.block_dims):  # a sorting network's short steps fused
            return
        uniform = [i for i in range(len(op.iter_args))
                   if i not in item.lane and not _token(op.iter_args[i])]
        if item.lane:
            self._phase(Phase(item.guards, [], [(op.iter_args[i], args[i + 1])
                                                for i in item.lane]), block, g)
        lb, ub, step = (self.gresolve(x, block, g) for x in (op.lb, op.ub, op.step))
        inits = [self.gresolve(op.iter_args[i], block, g) for i in uniform]
        body = Block(arg_types=[args[0].type, *[args[i + 1].type for i in uniform]])
        self.scopes.append({args[0]: body.args[0]})
        for k, i in enumerate(uniform):
            self.scopes[-1][args[i + 1]] = body.args[k + 1]
        y = op.body.block.last_op
        copies = [(y.operands[i], args[i + 1]) for i in item.lane]
        last = item.body[-1] if item.body else None
        if copies and isinstance(last, Phase) and last.guards == item.guards:
            # the next iteration's lane values are written at the end of the body's last
            # phase (each lane its own slots, read in a phase's prologue): no phase of their own
            item.body[-1] = Phase(last.guards, last.ops, [*last.copies, *copies])
            copies = []
        self.last_lanes = None
        self._emit(item.body, body, g)
        if copies:
            self._phase(Phase(item.guards, [], copies), body, g)
        body.add_op(scf.YieldOp(*[self.gresolve(y.operands[i], body, g) for i in uniform]))
        self.scopes.pop()
        if not uniform and len(item.body) == 1 and not copies and self.last_lanes is not None \
                and self.last_lanes[1] is item.body[0]:
            lb = fast_prefix.emit(self, *self.last_lanes, args[0], lb, ub, step, block, g)
        new = scf.ForOp(lb, ub, step, inits, Region(body))
        block.add_op(new)
        for k, i in enumerate(uniform):
            self.scopes[-1][op.results[i]] = new.results[k]

    def _if(self, item: If, block: Block, g: _Grid) -> None:
        op = item.op
        uniform = [i for i in range(len(op.results))
                   if i not in item.lane and not _token(op.results[i])]
        cond = self.gresolve(op.cond, block, g)
        regions = []
        for region, items in ((op.true_region, item.then), (op.false_region, item.other)):
            inner = Block()
            self.scopes.append({})
            self._emit(items, inner, g)
            if region.blocks:
                y = region.blocks[0].last_op
                if item.lane:
                    self._phase(Phase(item.guards, [], [(y.operands[i], op.results[i])
                                                        for i in item.lane]), inner, g)
                inner.add_op(scf.YieldOp(*[self.gresolve(y.operands[i], inner, g)
                                           for i in uniform]))
            else:
                inner.add_op(scf.YieldOp())
            self.scopes.pop()
            regions.append(Region(inner))
        new = scf.IfOp(cond, [op.results[i].type for i in uniform], regions[0], regions[1])
        block.add_op(new)
        for k, i in enumerate(uniform):
            self.scopes[-1][op.results[i]] = new.results[k]


def _copy_words(block: Block, arena: SSAValue, words: int, start: int, end: int) -> None:
    """Arena words `[start, end)` from the poisoned template (`words` words further on)."""
    loop_body = Block(arg_types=[i32])
    w = loop_body.args[0]
    wide = _add(loop_body, arith.ExtSIOp(w, i64))
    src_index = _add(loop_body, arith.AddiOp(wide, _c(loop_body, words, i64)))
    src = _add(loop_body, llvm.GEPOp.from_mixed_indices(arena, [src_index], i64))
    value = _add(loop_body, llvm.LoadOp(src, i64))
    dst = _add(loop_body, llvm.GEPOp.from_mixed_indices(arena, [wide], i64))
    loop_body.add_op(llvm.StoreOp(value, dst))
    loop_body.add_op(scf.YieldOp())
    block.add_op(scf.ForOp(_c(block, start), _c(block, end), _c(block, 1), [],
                           Region(loop_body)))


def _lane_loop(block: Block, callee: str, args: list[SSAValue], g: _Grid) -> None:
    """Run lane function `callee + ".lane"` for every lane of the block (x fastest), unless an
    error is recorded at `err` (then it stops)."""
    c0, c1 = _c(block, 0), _c(block, 1)
    bx, by, bz = g.block_dims
    lanes = _add(block, arith.MuliOp(_add(block, arith.MuliOp(bx, by)), bz))
    status = _add(block, arith.TruncIOp(_add(block, llvm.LoadOp(g.err, i64)), i32))
    ib = Block(arg_types=[i32] * 5)
    l, _, _, _, s = ib.args
    more = _add(ib, arith.CmpiOp(l, lanes, "slt"))
    ok = _add(ib, arith.CmpiOp(s, c0, "eq"))
    ib.add_op(scf.ConditionOp(_add(ib, arith.AndIOp(more, ok)), *ib.args))
    ia = Block(arg_types=[i32] * 5)
    l2, tx, ty, tz, _ = ia.args
    call = func.CallOp(callee + LANE_SUFFIX, [*args, *g.block_ids, tx, ty, tz, *g.grid_dims,
                                              *g.block_dims, g.err], [i32])
    ia.add_op(call)
    nl = _add(ia, arith.AddiOp(l2, c1))
    nx = _add(ia, arith.AddiOp(tx, c1))
    wrap_x = _add(ia, arith.CmpiOp(nx, bx, "eq"))
    ny = _add(ia, arith.SelectOp(wrap_x, _add(ia, arith.AddiOp(ty, c1)), ty))
    wrap_y = _add(ia, arith.AndIOp(wrap_x, _add(ia, arith.CmpiOp(ny, by, "eq"))))
    nz = _add(ia, arith.SelectOp(wrap_y, _add(ia, arith.AddiOp(tz, c1)), tz))
    ia.add_op(scf.YieldOp(nl, _add(ia, arith.SelectOp(wrap_x, c0, nx)),
                          _add(ia, arith.SelectOp(wrap_y, c0, ny)), nz, call.results[0]))
    block.add_op(scf.WhileOp([c0, c0, c0, c0, status], [i32] * 5, Region(ib), Region(ia)))


def split(kernel: func.FuncOp) -> tuple[list[func.FuncOp], func.FuncOp, int]:
    """(phase functions, grid function, spill slots) of a kernel that `plan` accepts (its
    `pto.alloc_local` ops get their buffer numbers, `L1_INDEX_ATTR`, for error records)."""
    for i, op in enumerate(allocs(kernel)):
        op.attributes[L1_INDEX_ATTR] = IntegerAttr(i, i64)
    while_codegen.number_loops(kernel)  # (watchdog sites, kept by the phases' clones)
    emitter = _Emitter(plan(kernel), kernel.sym_name.data)
    shape = kernel.attributes.get(BLOCK_ATTR)  # the compiled block shape (fast_blocks.py)
    if isinstance(shape, ArrayAttr):
        dims = tuple(int(v.value.data) for v in shape.data)  # type: ignore[attr-defined]
        emitter.shape = (dims + (1, 1, 1))[:3]  # type: ignore[assignment]
    phases, grid = emitter.grid()
    tile_loops.hoist_scratch(grid)  # (the tile reductions' scratch: once per launch)
    return phases, grid, len(emitter.slots)


def spill_slots(kernel: func.FuncOp) -> int:
    """Spill slots per lane the kernel's phase functions use (0 without phases)."""
    if not needs_phases(kernel):
        return 0
    return split(kernel.clone())[2]


def _x_guard(cond: SSAValue, taken: bool, em: "_Emitter") -> tuple[str, SSAValue] | None:
    """(predicate, u) when guard `cond == taken` reads `local_id(0) <predicate> u` with `u`
    uniform across the block, else None."""
    op = cond.owner
    if not isinstance(op, arith.CmpiOp) or op.lhs.type != i32:
        return None

    def is_x(v: SSAValue) -> bool:
        o = v.owner
        return isinstance(o, Operation) and launch_id(o) == "local_id" and \
            o.properties["dim"].value.data == 0  # type: ignore[union-attr]

    found = x_guard(cond, taken, is_x, em.plan.uniform)
    if found is not None:
        return found
    scaled = op.lhs.owner
    if taken and op.predicate.value.data == 2 and isinstance(scaled, arith.MuliOp) and \
            em.plan.uniform(op.rhs):  # k * local_id(0) < u (CUDA's interleaved trees)
        a, b = scaled.operands
        if is_x(b) and em.plan.uniform(a):
            return "scaled", (a, op.rhs)  # type: ignore[return-value]
        if is_x(a) and em.plan.uniform(b):
            return "scaled", (b, op.rhs)  # type: ignore[return-value]
    return None


def _x_bounds(em: "_Emitter", guards: Guards, block: Block,
              g: "_Grid") -> tuple[SSAValue, SSAValue]:
    """[lo, hi): the lanes along x a phase's guards can admit (`tid < s`, `tid == 0`, ...:
    comparisons of `local_id(0)` with a uniform value); lanes outside skip the whole phase
    (its prologue only loads and recomputes), so its lane loops leave them out. Only for the
    fast lane loops: the checked ones run every lane, as before."""
    lo, hi = _c(block, 0), g.block_dims[0]
    one = _c(block, 1)

    def sel(c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return _add(block, arith.SelectOp(c, a, b))

    def cmp(a: SSAValue, b: SSAValue, pred: str) -> SSAValue:
        return _add(block, arith.CmpiOp(a, b, pred))

    for cond, taken in guards:
        found = _x_guard(cond, taken, em)
        if found is None:
            continue
        pred, v = found
        if pred == "scaled":  # x * k < u: x < ceil(u / k) when k, u > 0 and x * k cannot wrap
            k, bound = (_add(block, arith.ExtSIOp(em.gresolve(w, block, g), i64))
                        for w in v)  # type: ignore[union-attr]
            zero64, one64 = _c(block, 0, i64), _c(block, 1, i64)
            last = _add(block, arith.ExtSIOp(_add(block, arith.SubiOp(g.block_dims[0], one)),
                                             i64))
            fits = _add(block, arith.CmpiOp(_add(block, arith.MuliOp(k, last)),
                                            _c(block, 2 ** 31 - 1, i64), "sle"))
            usable = _add(block, arith.AndIOp(_add(block, arith.AndIOp(
                _add(block, arith.CmpiOp(k, zero64, "sgt")),
                _add(block, arith.CmpiOp(bound, zero64, "sgt")))), fits))
            positive = _add(block, arith.SelectOp(usable, k, one64))  # (never 0: an LLVM
            ceil = _add(block, llvm.SDivOp(_add(block, arith.SubiOp(    # division, unchecked)
                _add(block, arith.AddiOp(bound, positive)), one64)), positive))
            limit = _add(block, arith.TruncIOp(_add(block, arith.MinSIOp(
                ceil, _add(block, arith.ExtSIOp(hi, i64)))), i32))
            hi = sel(usable, limit, hi)
            continue
        lo, hi = clip_x(block, lo, hi, pred, em.gresolve(v, block, g))
    hi = sel(cmp(hi, lo, "slt"), lo, hi)  # empty: hi = lo
    return lo, hi


def _lane_bounds(em: "_Emitter", guards: Guards, block: Block,
                 g: "_Grid") -> tuple[SSAValue, SSAValue] | None:
    """[llo, lhi): the lanes in their warp (`lane_id`) a phase's guards can admit (`lane < s`,
    `lane == 0`), when some guard compares `lane_id` with a uniform value; else None. Only in
    a 1-D block, where the linear lane id is x (warp w is x in [32 w, 32 w + 32)); in others
    the whole warp [0, 32). docs/native.md#fast-phases."""
    lo, hi = _c(block, 0), _c(block, pto.WARP_SIZE)
    found = False

    def is_lane(v: SSAValue) -> bool:
        o = v.owner
        return isinstance(o, Operation) and launch_id(o) == "lane_id"

    for cond, taken in guards:
        guard = x_guard(cond, taken, is_lane, em.plan.uniform)
        if guard is not None:
            found = True
            lo, hi = clip_x(block, lo, hi, guard[0], em.gresolve(guard[1], block, g))
    if not found:
        return None
    one = _c(block, 1)
    flat = _add(block, arith.AndIOp(_add(block, arith.CmpiOp(g.block_dims[1], one, "eq")),
                                    _add(block, arith.CmpiOp(g.block_dims[2], one, "eq"))))
    lo = _add(block, arith.SelectOp(flat, lo, _c(block, 0)))
    hi = _add(block, arith.SelectOp(flat, hi, _c(block, pto.WARP_SIZE)))
    return lo, hi


def _fast_lane_loops(block: Block, callee: str, args: list[SSAValue], g: "_Grid",
                     lo_hi: tuple[SSAValue, SSAValue],
                     lanes: tuple[SSAValue, SSAValue] | None = None) -> None:
    """The lanes `tz, ty, tx` (x innermost over [lo, hi), the interpreter's lane order) of
    fast lane function `callee + ".fast.lane"`, stopping at an error it records. A loop with
    a known trip count whose status LLVM folds to 0 once the lane function is inlined (its
    accesses unchecked): LLVM vectorises it (docs/native.md#phases)."""
    lo, hi = lo_hi
    bx, by, bz = g.block_dims
    c0 = _c(block, 0)
    status = _add(block, arith.TruncIOp(_add(block, llvm.LoadOp(g.err, i64)), i32))
    run = Block()

    loop = warp_lanes.status_loop

    def zbody(zb: Block, tz: SSAValue) -> SSAValue:
        def ybody(yb: Block, ty: SSAValue) -> SSAValue:
            def xbody(xb: Block, tx: SSAValue) -> SSAValue:
                return _add(xb, func.CallOp(callee + FAST_SUFFIX + LANE_SUFFIX,
                                            [*args, *g.block_ids, tx, ty, tz, *g.grid_dims,
                                             *g.block_dims, g.err], [i32]))
            if lanes is None:
                return loop(yb, lo, hi, xbody)

            def wbody(wb: Block, w: SSAValue) -> SSAValue:  # x in warp w, lanes [llo, lhi)
                base = _add(wb, arith.MuliOp(w, _c(wb, pto.WARP_SIZE)))
                start = _add(wb, arith.MaxSIOp(lo, _add(wb, arith.AddiOp(base, lanes[0]))))
                end = _add(wb, arith.MinSIOp(hi, _add(wb, arith.AddiOp(base, lanes[1]))))
                return loop(wb, start, end, xbody)
            size = _c(yb, pto.WARP_SIZE)
            first = _add(yb, arith.DivSIOp(lo, size))
            last = _add(yb, arith.DivSIOp(_add(yb, arith.AddiOp(hi, _c(yb, pto.WARP_SIZE - 1))),
                                          size))
            return loop(yb, first, last, wbody)
        return loop(zb, c0, by, ybody)

    loop(run, c0, bz, zbody)
    run.add_op(scf.YieldOp())
    block.add_op(scf.IfOp(_add(block, arith.CmpiOp(status, c0, "eq")), [], Region(run), None))
