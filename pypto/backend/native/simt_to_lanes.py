"""`pto-simt-to-lanes`: a kernel becomes a lane function and a grid function that loops over it.

The SIMT model compiled as POCL and CuPBoP compile CUDA/OpenCL for CPUs: a block runs as a loop
over its lanes. The kernel `@k` becomes

- `@k.lane(params..., block x/y/z, lane x/y/z, grid x/y/z, block dims x/y/z: i32, err: !llvm.ptr)
  -> i32`: the kernel's body run by one lane, the launch ids (`pto.get_global_id`, ...) computed
  from its coordinates; it returns 0, or (after `convert-pto-to-llvm`) the code of the error it
  recorded at `err`;
- `@k(params..., grid x/y/z, block dims x/y/z, first block, end block: i32, err) -> i32`: the
  grid function: a loop over blocks `[first, end)` and, inside, over the lanes of a block (x
  fastest, the interpreter's linear lane order), calling the lane function and stopping at the
  first non-zero status, which it returns.

Divergent `if` / `for` / `while` and early `return` need nothing: each lane runs its own control
flow. A kernel with L1 or barriers is split into phases first (phases.py): one lane function
`@k.pN.lane` per phase and a grid function running the block-level code (uniform loops, block
instructions) with a lane loop per phase. Only kernels `pypto.backend.native.support` accepts
are lowered: the pass reports the reason otherwise. docs/native.md#the-pipeline,
docs/native.md#phases.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, llvm, scf
from xdsl.dialects.builtin import (ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr,
                                   ModuleOp, StringAttr, UnitAttr, i32, i64)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from pypto.backend.native.fast_blocks import BLOCK_ATTR, fast_variants
from pypto.backend.native.row_copies import split_offsets
from pypto.backend.native import lane_jam
from pypto.backend.native.full_phases import add_full_phase, calls_by_callee
from pypto.backend.native.idioms import rewrite_idioms
from pypto.backend.native.loop_steps import lower_steps
from pypto.backend.native.phase_codegen import split
from pypto.backend.native.phases import LANE_SUFFIX, needs_phases
from pypto.backend.native.while_codegen import WATCHDOG_ATTR
from pypto.backend.native.support import unsupported_op, unsupported_reason
from pypto.diagnostics import attach_op
from pypto.dialects import pto
from pypto.dialects.traits import launch_id
from pypto.backend.native.quick_ops import append as _add, i32_constant as _c

MAX_TRIPS = 10_000_000
"""The interpreter's loop watchdog (pypto.backend.interpreter.codegen_loops.MAX_TRIPS, not
imported: the interpreter sits beside this backend, not below it; a test checks they agree)."""

LANE_ATTR = "pto.native_lane"
GRID_ATTR = "pto.native_grid"
SLOTS_ATTR = "pto.native_spill_slots"
"""On a phase-split kernel's grid function: the spill slots per lane its phases use (the split's
count, read by the JIT: docs/native.md#compile-time; splitting the kernel again to count them
cost a tenth of a phase-split kernel's first compile)."""
ID_ARGS = 12
"""block x/y/z, lane x/y/z, grid dims x/y/z, block dims x/y/z (i32), after the parameters."""


def _lane_function(kernel: func.FuncOp) -> None:
    """Turn `kernel` into its lane function, in place."""
    block = kernel.body.block
    n = len(block.args)
    ids = [block.insert_arg(i32, n + i) for i in range(ID_ARGS)]
    block.insert_arg(llvm.LLVMPointerType(), n + ID_ARGS)
    bid, lid, gdim, bdim = ids[0:3], ids[3:6], ids[6:9], ids[9:12]
    for op in list(kernel.walk()):
        name = launch_id(op)
        if name is None:
            if isinstance(op, func.ReturnOp):
                zero = arith.ConstantOp(IntegerAttr(0, i32))
                op.parent_block().insert_op_before(zero, op)
                op.parent_block().insert_op_before(func.ReturnOp(zero), op)
                op.detach()
                op.erase()
            continue
        if name in ("warp_id", "lane_id"):  # linear lane id // or % pto.WARP_SIZE
            inner = arith.AddiOp(lid[1], arith.MuliOp(bdim[1], lid[2]))
            outer = arith.MuliOp(bdim[0], inner)
            linear = arith.AddiOp(lid[0], outer)
            size = arith.ConstantOp(IntegerAttr(pto.WARP_SIZE, i32))
            split = (arith.DivUIOp if name == "warp_id" else arith.RemUIOp)(linear, size)
            new_ops: list[Operation] = [inner.operands[1].owner, inner, outer, linear, size, split]
            op.parent_block().insert_ops_before(new_ops, op)
            op.results[0].replace_all_uses_with(split.results[0])
            op.detach()
            op.erase()
            continue
        d = op.properties["dim"].value.data
        if name == "global_id":
            mul = arith.MuliOp(bid[d], bdim[d])
            new: list[Operation] = [mul, arith.AddiOp(mul, lid[d])]
        else:
            source = {"local_id": lid, "block_id": bid, "grid_dim": gdim, "block_dim": bdim}[name]
            new = []
            op.results[0].replace_all_uses_with(source[d])
        if new:
            op.parent_block().insert_ops_before(new, op)
            op.results[0].replace_all_uses_with(new[-1].results[0])
        op.detach()
        op.erase()
    for site, loop in enumerate(watchdog_loops(kernel)):
        number = loop.attributes.get(WATCHDOG_ATTR)  # (a phase function's loop: the
        _add_watchdog(loop, number.value.data if isinstance(number, IntegerAttr)  # kernel's
                      else site)                                                 # number)
    inputs = [a.type for a in block.args]
    kernel.function_type = FunctionType.from_lists(inputs, [i32])
    if kernel.arg_attrs is not None:
        kernel.arg_attrs = ArrayAttr([*kernel.arg_attrs.data,
                                      *[DictionaryAttr({})] * (len(inputs) - n)])
    name = kernel.sym_name.data
    kernel.sym_name = StringAttr(name + LANE_SUFFIX)
    del kernel.attributes["pto.kernel"]
    kernel.attributes[LANE_ATTR] = UnitAttr()
    kernel.sym_visibility = StringAttr("private")


def _add_watchdog(loop: scf.WhileOp, site: int) -> None:
    """Give `loop` a trip counter and a `cf.assert` that it stays below the interpreter's
    MAX_TRIPS (its loop watchdog; `convert-pto-to-llvm` turns a failed assert into the error
    record of site `site`)."""
    before, after = loop.before_region.blocks[0], loop.after_region.blocks[-1]
    trips = before.insert_arg(i64, len(before.args))
    condition = loop.before_region.blocks[-1].last_op
    limit = arith.ConstantOp(IntegerAttr(MAX_TRIPS, i64))
    below = arith.CmpiOp(trips, limit, "ult")
    check = cf.AssertOp(below, f"pto-watchdog:{site}")
    condition.parent_block().insert_ops_before([limit, below, check], condition)
    new_condition = scf.ConditionOp(condition.condition, *condition.args, trips)
    condition.parent_block().insert_op_before(new_condition, condition)
    condition.detach()
    condition.erase()
    carried = loop.after_region.blocks[0].insert_arg(i64, len(loop.after_region.blocks[0].args))
    yield_op = after.last_op
    one = arith.ConstantOp(IntegerAttr(1, i64))
    step = arith.AddiOp(carried, one)
    after.insert_ops_before([one, step], yield_op)
    after.insert_op_before(scf.YieldOp(*yield_op.operands, step), yield_op)
    yield_op.detach()
    yield_op.erase()
    zero = arith.ConstantOp(IntegerAttr(0, i64))
    new_before, new_after = Region(), Region()
    loop.before_region.move_blocks(new_before)
    loop.after_region.move_blocks(new_after)
    new = scf.WhileOp([*loop.arguments, zero], [*[r.type for r in loop.results], i64],
                      new_before, new_after)
    loop.parent_block().insert_ops_before([zero, new], loop)
    for old, result in zip(loop.results, new.results):
        old.replace_all_uses_with(result)
    loop.detach()
    loop.erase()


def watchdog_loops(kernel: func.FuncOp) -> list[scf.WhileOp]:
    """The kernel's `scf.while` loops in walk order: site `i` of the watchdog is loop `i`."""
    return [op for op in kernel.walk() if isinstance(op, scf.WhileOp)]


def _grid_function(name: str, params: list, ) -> func.FuncOp:
    """The loop over blocks and lanes that calls `name + LANE_SUFFIX` (see the module doc)."""
    inputs = [*params, *[i32] * 8, *[llvm.LLVMPointerType()] * 3]  # (arena, spill: unused)
    entry = Block(arg_types=inputs)
    args = entry.args
    p = args[:len(params)]
    gx, gy, gz, bx, by, bz, first, end = args[len(params):len(params) + 8]
    err = args[-1]
    c0, c1 = _c(entry, 0), _c(entry, 1)

    # outer loop: linear block b in [first, end) while status == 0
    before = Block(arg_types=[i32, i32])
    b, st = before.args
    more = _add(before, arith.CmpiOp(b, end, "slt"))
    ok = _add(before, arith.CmpiOp(st, c0, "eq"))
    go = _add(before, arith.AndIOp(more, ok))
    before.add_op(scf.ConditionOp(go, b, st))

    body = Block(arg_types=[i32, i32])
    b1, _ = body.args
    cbx = _add(body, arith.RemUIOp(b1, gx))
    rest = _add(body, arith.DivUIOp(b1, gx))
    cby = _add(body, arith.RemUIOp(rest, gy))
    cbz = _add(body, arith.DivUIOp(rest, gy))
    lanes = _add(body, arith.MuliOp(_add(body, arith.MuliOp(bx, by)), bz))

    # inner loop: linear lane l with its coordinates (x fastest) carried, while status == 0
    ib = Block(arg_types=[i32] * 5)
    l, _, _, _, s = ib.args
    imore = _add(ib, arith.CmpiOp(l, lanes, "slt"))
    iok = _add(ib, arith.CmpiOp(s, c0, "eq"))
    ib.add_op(scf.ConditionOp(_add(ib, arith.AndIOp(imore, iok)), *ib.args))

    ia = Block(arg_types=[i32] * 5)
    l2, tx, ty, tz, _ = ia.args
    call = func.CallOp(name + LANE_SUFFIX,
                       [*p, cbx, cby, cbz, tx, ty, tz, gx, gy, gz, bx, by, bz, err], [i32])
    ia.add_op(call)
    nl = _add(ia, arith.AddiOp(l2, c1))
    nx = _add(ia, arith.AddiOp(tx, c1))
    wrap_x = _add(ia, arith.CmpiOp(nx, bx, "eq"))
    ny1 = _add(ia, arith.AddiOp(ty, c1))
    ny = _add(ia, arith.SelectOp(wrap_x, ny1, ty))
    wrap_y = _add(ia, arith.AndIOp(wrap_x, _add(ia, arith.CmpiOp(ny, by, "eq"))))
    nz = _add(ia, arith.SelectOp(wrap_y, _add(ia, arith.AddiOp(tz, c1)), tz))
    ia.add_op(scf.YieldOp(nl, _add(ia, arith.SelectOp(wrap_x, c0, nx)),
                          _add(ia, arith.SelectOp(wrap_y, c0, ny)), nz, call.results[0]))
    inner = scf.WhileOp([c0, c0, c0, c0, c0], [i32] * 5, Region(ib), Region(ia))
    body.add_op(inner)
    body.add_op(scf.YieldOp(_add(body, arith.AddiOp(b1, c1)), inner.results[4]))
    outer = scf.WhileOp([first, c0], [i32, i32], Region(before), Region(body))
    entry.add_op(outer)
    entry.add_op(func.ReturnOp(outer.results[1]))
    grid = func.FuncOp(name, (inputs, [i32]), Region(entry))
    grid.attributes[GRID_ATTR] = UnitAttr()
    return grid


@dataclass(frozen=True)
class SimtToLanesPass(ModulePass):
    """Lower each kernel to a lane function and a grid function looping over blocks and lanes."""

    name = "pto-simt-to-lanes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = [k for k in op.ops if isinstance(k, func.FuncOp) and "pto.kernel" in k.attributes]
        for kernel in kernels:
            lower_steps(kernel, in_place=True)  # (NativeKernel did it; pypto-opt may not have)
            reason = unsupported_reason(kernel)
            if reason is not None:
                raise attach_op(DiagnosticException(
                    f"kernel '{kernel.sym_name.data}' is not compiled by the native backend: "
                    f"{reason}; run it on the interpreter (backend='interpreter')"),
                    unsupported_op(kernel) or kernel)
            if needs_phases(kernel):
                phases, grid, slots = split(kernel)
                grid.attributes[GRID_ATTR] = UnitAttr()
                grid.attributes[SLOTS_ATTR] = IntegerAttr(slots, i64)
                functions: list[Operation] = []
                markers, calls = lane_jam.markers(grid), calls_by_callee(grid)  # (one walk each)
                for fn in phases:
                    name = fn.sym_name.data
                    _lane_function(fn)
                    rewrite_idioms(fn)
                    num_params = len(fn.body.block.args) - ID_ARGS - 1
                    rng, fast, _ = fast_variants(fn, name, num_params)  # docs/native.md#phases
                    lane_jam.resolve(grid, name, fast, markers)  # docs/native.md#jammed-rows
                    functions += [fn, fast, rng,  # (guards: docs/native.md#full-blocks)
                                  *add_full_phase(grid, fn, fast, name, num_params, calls)]
                    split_offsets(fast)  # (after: the full variants pair fast's ops with fn's)
                op.body.block.insert_ops_after([*functions, grid], kernel)
                kernel.detach()
                kernel.erase()
                continue
            name = kernel.sym_name.data
            params = [a.type for a in kernel.body.block.args]
            _lane_function(kernel)
            rewrite_idioms(kernel)
            grid = _grid_function(name, params)
            if BLOCK_ATTR in kernel.attributes:  # the compiled block shape (fast_blocks.py)
                grid.attributes[BLOCK_ATTR] = kernel.attributes[BLOCK_ATTR]
            op.body.block.insert_op_after(grid, kernel)
