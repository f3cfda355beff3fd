"""Row order: a launch's lanes walked in the arrays' memory order instead of block by block.

The grid function runs blocks one after another and, in each, the lanes `tz, ty, tx` (x
innermost: the interpreter's order, docs/native.md#fast-blocks). With small blocks of several
rows (add3d's 8 x 4 x 2 lanes over a `(d, h, w)` volume) a block touches 8 short runs of 8
floats in each of its 3 tensors: 24 streams advancing 32 bytes per block, against NumPy's one
pass per array. When the order between lanes cannot show, the whole launch may instead run
as one loop nest over the global coordinates, x innermost across the blocks of a row:

    for bz < grid z: for tz < block z: for by < grid y: for ty < block y:
        for bx < grid x: for tx < block x: full lane (bx, by, bz, tx, ty, tz)

so each row of every tensor is one contiguous stream (`(k * h + j) * w + i` with
`i = bx * 8 + tx`: consecutive addresses over `bx` and `tx`). Every lane still runs its own
ops in program order; only lanes of different blocks interleave. That order cannot show when

- the launch's checks passed (launch_checks.py: every access in range, every guard at its
  expected value, in every block) and the launch block is the compiled one, so the grid
  function would run every block's full lanes anyway;
- the full lane function cannot fail (`reorderable`: no error path at all — every access
  proven, no division, checked cast, power, call, watchdog loop — and no atomic, L1 buffer or
  printf, whose order or per-block state could show);
- no two lanes of the launch touch one element of a written tensor (one of them writing):
  lane_independence.py's proof (`LaunchCheck`) for every written tensor, run at launch on the
  launch's shape and scalar arguments (row_decision.py, memoised), its verdict passed to the
  grid function in the error record's slot `ORDER_SLOT`;
- the launch covers the whole grid (`first == 0`, `end` = the number of blocks).

Else the block order runs, as before. The results are the same bits: each element is written
by one lane, whose value depends only on elements no other lane writes.
docs/native.md#row-order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, cf, func, llvm, math
from xdsl.dialects.builtin import IntegerAttr, i32, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from pypto.analysis.ir_utils import constant_int
from pypto.backend.native import inflight
from pypto.dialects import pto
from pypto.backend.native.quick_ops import append as _add, keep_loop_marker

ORDER_SLOT = 12 + inflight.SLOTS
"""The error record's slot (jit.ERR_SLOTS) holding 1 when this launch may run in row order
(the lane-independence proof passed), written before each launch of a kernel with a row-order
path."""

_FAILING = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp, arith.CeilDivSIOp,
            arith.CeilDivUIOp, arith.FloorDivSIOp, arith.FPToSIOp, arith.FPToUIOp,
            math.IPowIOp)
"""Arithmetic the lowering checks (a zero divisor, a cast out of range, a negative exponent)."""


def _constant_zero(v: SSAValue) -> bool:
    return constant_int(v) == 0


def reorderable(full: func.FuncOp, unchecked: str) -> bool:
    """Can full lane function `full` (cf form, before lowering) neither fail nor show the
    order between lanes other than through HBM elements, and does row order walk its memory
    contiguously? Its ops are arithmetic that cannot fail, branches, launch ids, pointer
    offsets and loads and stores of HBM tensors proven in range (`unchecked`:
    fast_blocks.UNCHECKED_ATTR), it returns 0 only, and every access's offset steps by 1 or
    0 elements per lane along x (`x_stride`: a row of lanes reads and writes consecutive
    elements; transpose's `dst[c * h + r]` steps by `h`, and its blocks' tiles are the better
    order there)."""
    x = full.body.blocks[0].args[len(full.body.blocks[0].args) - 13 + 3]  # (simt_to_lanes.py:
    for op in full.body.walk():                                  # params, block ids, lane ids)
        if isinstance(op, _FAILING):
            return False
        if isinstance(op, func.ReturnOp):
            if not all(_constant_zero(v) for v in op.operands):
                return False
            continue
        if isinstance(op, pto.LoadOp | pto.StoreOp):
            if unchecked not in op.attributes or not _hbm(op.ptr) or \
                    x_stride(op.ptr, x) not in (0, 1):
                return False
            continue
        if isinstance(op, cf.BranchOp | cf.ConditionalBranchOp | pto.AddPtrOp):
            continue
        name = op.name
        if name.startswith(("arith.", "math.")) or name.startswith("pto.get_"):
            continue
        return False
    return True


def x_contiguous(full: func.FuncOp) -> bool:
    """Does every load and store of full lane function `full` (cf form, before lowering) step
    by 0 or 1 element per lane along x (`x_stride`)? Then a row of lanes is a vector loop
    (fast_blocks.KEEP_X_LOOPS)."""
    x = full.body.blocks[0].args[len(full.body.blocks[0].args) - 13 + 3]
    return all(x_stride(op.ptr, x) in (0, 1) for op in full.body.walk()
               if isinstance(op, pto.LoadOp | pto.StoreOp))


def x_stride(v: SSAValue, x: SSAValue) -> int | None:
    """How many elements pointer or integer `v` changes by when the lane's x coordinate `x`
    grows by one, when that is a constant (an affine form in `x` with a constant
    coefficient: `p + (k * h + j) * w + bx * 8 + x` gives 1); None otherwise."""
    if v is x:
        return 1
    owner = v.owner
    if isinstance(v, BlockArgument) or not _depends(v, x):
        return 0 if _depends(v, x) is False else None
    if isinstance(owner, pto.AddPtrOp):
        a, b = x_stride(owner.ptr, x), x_stride(owner.offset, x)
        return None if a is None or b is None else a + b
    if isinstance(owner, arith.ExtSIOp):
        return x_stride(owner.operands[0], x)
    if isinstance(owner, arith.AddiOp | arith.SubiOp):
        a, b = (x_stride(o, x) for o in owner.operands)
        if a is None or b is None:
            return None
        return a + b if isinstance(owner, arith.AddiOp) else a - b
    if isinstance(owner, arith.MuliOp):
        for s, c in ((owner.operands[0], owner.operands[1]),
                     (owner.operands[1], owner.operands[0])):
            constant = constant_int(c)
            step = x_stride(s, x)
            if constant is not None and step is not None and not _depends(c, x):
                return step * constant
    return None


def _depends(v: SSAValue, x: SSAValue) -> bool | None:
    """Does `v` depend on `x` (None: a block argument other than the entry's: a loop's value,
    not followed)?"""
    stack, seen = [v], set()
    while stack:
        w = stack.pop()
        if w is x:
            return True
        if id(w) in seen:
            continue
        seen.add(id(w))
        if isinstance(w, BlockArgument):
            if w.block.parent is not None and w.block is not w.block.parent.blocks[0]:
                return None
            continue
        stack.extend(w.owner.operands)
    return False


def _hbm(ptr: SSAValue) -> bool:
    """Is `ptr` an offset of a tensor parameter (not of an L1 buffer)?"""
    while isinstance(ptr.owner, pto.AddPtrOp):
        ptr = ptr.owner.ptr
    return isinstance(ptr, BlockArgument)


def _c(block: Block, value: int, t=i32) -> SSAValue:
    return _add(block, arith.ConstantOp(IntegerAttr(value, t)))


def allowed(block: Block, err: SSAValue, first: SSAValue, end: SSAValue,
            gdims: Sequence[SSAValue]) -> SSAValue:
    """At the end of `block`: the i1 "this launch may run in row order" — the record's
    `ORDER_SLOT` is 1 and the launch runs the whole grid `[0, gx * gy * gz)`."""
    where = _add(block, llvm.GEPOp.from_mixed_indices(err, [ORDER_SLOT], i64))
    flag = _add(block, llvm.LoadOp(where, i64))
    ok = _add(block, arith.CmpiOp(flag, _c(block, 1, i64), "eq"))
    ok = _add(block, arith.AndIOp(ok, _add(block, arith.CmpiOp(first, _c(block, 0), "eq"))))
    total = _add(block, arith.MuliOp(_add(block, arith.MuliOp(gdims[0], gdims[1])), gdims[2]))
    return _add(block, arith.AndIOp(ok, _add(block, arith.CmpiOp(end, total, "eq"))))


def row_loops(region: Region, before: Block, lane: str, params: Sequence[SSAValue],
              gdims: Sequence[SSAValue], shape: tuple[int, int, int], err: SSAValue,
              done: Block, keep_x: bool = False) -> Block:
    """The loop nest `bz, tz, by, ty, bx, tx` (module docstring) calling lane function `lane`
    with the block shape `shape` as constants, its blocks inserted after `before`; returns its
    entry block (branch to it with no arguments). A lane's non-zero status ends the grid
    function (`done` with it); the end of the nest branches to `done` with 0. `keep_x`: the
    `tx` loop is kept a loop (fast_blocks.KEEP_X_LOOPS)."""
    last = [before]

    def new_block(arg_types: Sequence = ()) -> Block:
        blk = Block(arg_types=arg_types)
        region.insert_block_after(blk, last[0])
        last[0] = blk
        return blk

    start = new_block()
    sizes = [_c(start, v) for v in shape]
    gx, gy, gz = gdims
    bounds = [gz, sizes[2], gy, sizes[1], gx, sizes[0]]
    ivs: list[SSAValue] = []

    def level(k: int, pre: Block, after: Block, after_args: Sequence[SSAValue]) -> None:
        head, body, latch = new_block([i32]), new_block(), new_block()
        pre.add_op(cf.BranchOp(head, _c(pre, 0)))
        iv = head.args[0]
        head.add_op(cf.ConditionalBranchOp(_add(head, arith.CmpiOp(iv, bounds[k], "slt")),
                                           body, [], after, list(after_args)))
        ivs.append(iv)
        if k + 1 < len(bounds):
            level(k + 1, body, latch, ())
        else:
            bz, tz, by, ty, bx, tx = ivs
            if keep_x:
                body.add_op(keep_loop_marker())
            st = _add(body, func.CallOp(lane, [*params, bx, by, bz, tx, ty, tz, *gdims, *sizes,
                                               err], [i32]))
            body.add_op(cf.ConditionalBranchOp(_add(body, arith.CmpiOp(st, _c(body, 0), "eq")),
                                               latch, [], done, [st]))
        ivs.pop()
        latch.add_op(cf.BranchOp(head, _add(latch, arith.AddiOp(iv, _c(latch, 1)))))

    level(0, start, done, [_c(start, 0)])
    return start
