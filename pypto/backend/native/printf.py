"""`pto.printf` in compiled code: a callback per lane into Python's `%` formatting.

The interpreter prints one line per active lane, `[block (x, y, z) lane (x, y, z)] text`,
formatted with Python's `%` of the lane's values converted to Python numbers
(pypto/backend/interpreter/tiles.py `printf`), for all lanes of its vector before the next op.
Compiled lanes run one after another, so the lines come out in the interpreter's order when the
kernel has one `pto.printf`, outside loops: each lane prints at most once, in linear lane order,
blocks in order, whatever the interpreter's vector (grid, batch, block or warp). Any other
kernel's lines are buffered with order keys (`add_order_keys`: each enclosing loop's place and
trip, the printf's place) and written at the end of the launch sorted into the interpreter's
order: its lane vectors in turn (`Executable.lane_vectors`), op by op within one, lanes in
linear order (`flush`; docs/native.md#what-is-compiled-the-support-check).

The lane function calls `pypto_native_printf(err, site, block x/y/z, lane x/y/z, n, v0..v7)`
with each value as 64 bits (integers sign-extended, bools 0/1, floats widened exactly to
float64: the interpreter's `float()` of a float16 / bfloat16 / float32 is the same number); the
callback formats the line with the site's format and writes it to `sys.stdout`. A format that
cannot print a lane's values (`%d` of inf) is the interpreter's `KernelError`, kept on the
kernel (collectives.py's error path); the lines of the lanes before it are already printed
(the interpreter prints none of that op's lines then).
"""

from __future__ import annotations

import bisect
import ctypes
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import (ArrayAttr, IntegerAttr, IntegerType, ModuleOp, StringAttr,
                                   f64, i32, i64)
from xdsl.ir import Operation, Region, SSAValue

from pypto.backend.native.collectives import _KERNELS, COLLECTIVE_CODE
from pypto.dialects import pto
from pypto.errors import KernelError

if TYPE_CHECKING:
    from pypto.backend.native.to_llvm import _FunctionLowering

SYMBOL = "pypto_native_printf"
MAX_VALUES = 8
CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
                                 *[ctypes.c_int64] * 7, *[ctypes.c_int64] * MAX_VALUES)


KEYS_ATTR = "pto.native_printf_keys"
"""On a printf `add_order_keys` rewrote: how many of its last values are loop trips (keys)."""
PATH_ATTR = "pto.native_printf_path"
"""On such a printf: the kernel-order numbers of its enclosing loops and of itself."""
_KEY_CONVERSION = "%.0s"  # (prints nothing: the rewritten op still verifies)


@dataclass(frozen=True)
class PrintSite:
    fmt: str
    kinds: tuple[str, ...]  # per value: "i" integer, "b" bool, "f" float
    location: str
    keys: int = 0
    path: tuple[int, ...] = ()
    hook: Any = None  # an in-flight check's hook (inflight.HookSite), not a line


def site_of(op: pto.PrintfOp, location: str) -> PrintSite:
    from pypto.backend.native.inflight import site_of as hook_of

    hook = hook_of(op)
    if hook is not None:
        return PrintSite("", (), location, hook=hook)
    keys_attr = op.attributes.get(KEYS_ATTR)
    keys = keys_attr.value.data if isinstance(keys_attr, IntegerAttr) else 0
    values = list(op.values)[:len(op.values) - keys]
    kinds = tuple("b" if isinstance(v.type, IntegerType) and v.type.width.data == 1 else
                  "i" if isinstance(v.type, IntegerType) else "f" for v in values)
    fmt = op.format.data
    if keys:
        fmt = fmt[:len(fmt) - len(_KEY_CONVERSION) * keys]
    path_attr = op.attributes.get(PATH_ATTR)
    path = tuple(a.value.data for a in path_attr.data) if isinstance(path_attr, ArrayAttr) \
        else ()
    return PrintSite(fmt, kinds, location, keys, path)


def _enclosing_loops(op: Operation) -> list[Operation]:
    """The loops around `op`, outermost first."""
    loops: list[Operation] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp | scf.WhileOp):
            loops.insert(0, parent)
        parent = parent.parent_op()
    return loops


def _counted(loop: Operation) -> bool:
    """Does a loop give its printfs a trip from its counter (`iv - lb`, a `for` of constant
    step) rather than from a trip counter `_count_trips` adds (a `while`, a run-time step)?"""
    from pypto.analysis.ir_utils import constant_int

    return isinstance(loop, scf.ForOp) and bool(constant_int(loop.step))


def _count_trips(loop: Operation) -> Operation:
    """`loop` rewritten to carry a trip counter (i32 from 0, +1 per trip) as its last iter
    arg: in a `while`, the `before` block's (the condition's trip) and the `after` block's
    (the body's trip) — trip k of the interpreter's lockstep loop is every active lane's k-th
    (lanes that left stay masked off). The new op replaces `loop`."""
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    loop.parent_block().insert_op_before(zero, loop)
    one = arith.ConstantOp(IntegerAttr(1, i32))
    if isinstance(loop, scf.WhileOp):
        before_region, after_region = loop.before_region, loop.after_region
        before = loop.detach_region(before_region)
        after = loop.detach_region(after_region)
        b_arg = before.blocks[0].insert_arg(i32, len(before.blocks[0].args))
        a_arg = after.blocks[0].insert_arg(i32, len(after.blocks[0].args))
        cond = before.blocks[0].last_op
        assert isinstance(cond, scf.ConditionOp)
        cond.operands = [*cond.operands, b_arg]
        y = after.blocks[0].last_op
        assert isinstance(y, scf.YieldOp)
        bump = arith.AddiOp(a_arg, one.result)
        after.blocks[0].insert_op_before(one, y)
        after.blocks[0].insert_op_before(bump, y)
        y.operands = [*y.operands, bump.result]
        new: Operation = scf.WhileOp([*loop.operands, zero.result],
                                     [*(r.type for r in loop.results), i32], before, after)
    else:
        assert isinstance(loop, scf.ForOp)
        body = loop.detach_region(loop.body)
        arg = body.blocks[0].insert_arg(i32, len(body.blocks[0].args))
        y = body.blocks[0].last_op
        assert isinstance(y, scf.YieldOp)
        bump = arith.AddiOp(arg, one.result)
        body.blocks[0].insert_op_before(one, y)
        body.blocks[0].insert_op_before(bump, y)
        y.operands = [*y.operands, bump.result]
        new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, zero.result], body)
    for k, v in loop.attributes.items():
        new.attributes[k] = v
    loop.parent_block().insert_op_before(new, loop)
    for old, fresh in zip(loop.results, new.results):
        old.replace_all_uses_with(fresh)
    loop.detach()
    loop.erase()
    return new


def _trip(loop: Operation, op: Operation) -> tuple[list[Operation], SSAValue]:
    """(ops to insert before `op`, the trip of `loop` that `op` runs in)."""
    from pypto.analysis.ir_utils import constant_int

    if _counted(loop):
        assert isinstance(loop, scf.ForOp)
        iv = loop.body.block.args[0]
        negative = (constant_int(loop.step) or 0) < 0
        trip = arith.SubiOp(loop.lb, iv) if negative else arith.SubiOp(iv, loop.lb)
        return [trip], trip.result
    block = loop.body.block if isinstance(loop, scf.ForOp) else next(
        r.blocks[0] for r in loop.regions if _within(op, r))
    return [], block.args[-1]


def _within(op: Operation, region: Region) -> bool:
    parent = op.parent_region()
    while parent is not None:
        if parent is region:
            return True
        owner = parent.parent_op()
        parent = owner.parent_region() if owner is not None else None
    return False


def add_order_keys(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose printfs in loops also pass, as extra values, the trip of each
    enclosing loop (`iv - lb`, or `lb - iv` for a negative step; a trip counter the loop
    carries for a `while` or a run-time step, `_count_trips`), and carry their place in
    kernel order (`PATH_ATTR`): the lines of a launch, buffered, then sort into the
    interpreter's order — lockstep, op by op over each of its lane vectors: (vector, loop,
    trip, ..., printf, lane) — whatever the lanes printing (`flush`). Unchanged when a printf
    has no room for the keys (MAX_VALUES)."""
    ops = printf_ops(kernel)
    if not ops or not in_loop(kernel):
        return kernel
    for op in ops:
        if len(op.operands) + len(_enclosing_loops(op)) > MAX_VALUES:
            return kernel
    kernel = kernel.clone()
    looped = {loop for op in printf_ops(kernel) for loop in _enclosing_loops(op)
              if not _counted(loop)}
    for loop in [o for o in kernel.walk() if o in looped][::-1]:  # (inner first)
        _count_trips(loop)
    order = {op: i for i, op in enumerate(kernel.walk())}
    for op in printf_ops(kernel):
        assert isinstance(op, pto.PrintfOp)
        loops = _enclosing_loops(op)
        keys: list[SSAValue] = []
        for loop in loops:
            before, trip = _trip(loop, op)
            for b in before:
                op.parent_block().insert_op_before(b, op)
            keys.append(trip)
        op.operands = [*op.operands, *keys]
        op.properties["format"] = StringAttr(op.format.data + _KEY_CONVERSION * len(keys))
        op.attributes[KEYS_ATTR] = IntegerAttr(len(keys), i64)
        op.attributes[PATH_ATTR] = ArrayAttr([IntegerAttr(order[o], i64)
                                              for o in (*loops, op)])
    return kernel


def _sort_key(where: PrintSite, site: int, raw: tuple[int, ...], count: int) -> tuple[int, ...]:
    """A line's place in the interpreter's order among one block's lines (then by lane)."""
    if not where.path:
        return (site,)
    trips = raw[count - where.keys:count]
    key: list[int] = []
    for place, trip in zip(where.path, trips):
        key += [place, trip]
    return (*key, where.path[-1])


def signature() -> llvm.LLVMFunctionType:
    return llvm.LLVMFunctionType([llvm.LLVMPointerType(), i64, *[i64] * 7,
                                  *[i64] * MAX_VALUES], i32)


def lower_printf(lowering: _FunctionLowering, op: pto.PrintfOp) -> None:
    """A call of the callback; a non-zero status ends the lane (the kernel keeps the error)."""
    before = lowering._before
    site = lowering._site(op)
    err = lowering.fn.body.blocks[0].args[-1]
    coords = [before(op, llvm.SExtOp(c, i64)) for c in (lowering.ids or ())]
    if len(coords) != 6:
        raise ValueError("convert-pto-to-llvm: pto.printf outside a lane function")
    values: list[SSAValue] = []
    for v in op.values:
        t = v.type
        if isinstance(t, IntegerType):
            values.append(v if t == i64 else before(op, (llvm.ZExtOp if t.width.data == 1
                                                         else llvm.SExtOp)(v, i64)))
        else:
            wide = v if t == f64 else before(op, llvm.FPExtOp(v, f64))
            values.append(before(op, llvm.BitcastOp(wide, i64)))
    zero = before(op, lowering._const(0, i64))
    values += [zero] * (MAX_VALUES - len(values))
    count = before(op, lowering._const(len(op.values), i64))
    site_c = before(op, lowering._const(site, i64))
    from pypto.backend.native.inflight import guard

    guarded = guard(op)
    hit = _guard_hit(lowering, op, guarded, values[0], err) if guarded is not None else None
    status = before(op, llvm.CallOp(SYMBOL, err, site_c, *coords, count, *values,
                                    return_type=i32))
    zero32 = before(op, lowering._const(0, i32))
    ok = before(op, llvm.ICmpOp(status, zero32, IntegerAttr(0, i64)))  # eq
    lowering._fail_unless(op, ok, COLLECTIVE_CODE, site, None, -1)  # (to_llvm.COLLECTIVE)
    lowering.calls_printf = True
    if hit is not None:  # an access hook: call back only when the guard hits
        call = status.owner
        block = call.parent_block()
        rest = op.parent_block()
        calling = block.split_before(call)
        block.add_op(llvm.CondBrOp(hit, calling, [], rest, []))
    op.detach()
    op.erase()


def _guard_hit(lowering: _FunctionLowering, op: Operation, guarded: tuple[str, int, int, int],
               index: SSAValue, err: SSAValue) -> SSAValue:
    """The compiled guard of an in-flight access hook (inflight.py): does the lane's L1 byte
    (HBM element) fall in a published hull of a copy in flight that the interpreter would
    check it against — or are there more copies than hulls? (i1)"""
    from pypto.backend.native.inflight import COUNT_SLOT, HULLS

    before = lowering._before
    kind, space, where, size = guarded

    def slot(i: int) -> SSAValue:
        address = before(op, llvm.GEPOp.from_mixed_indices(err, [i], i64))
        return before(op, llvm.LoadOp(address, i64))

    def const(v: int) -> SSAValue:
        return before(op, lowering._const(v, i64))

    def cmp(a: SSAValue, b: SSAValue, pred: int) -> SSAValue:
        return before(op, llvm.ICmpOp(a, b, IntegerAttr(pred, i64)))

    x = index
    if space == 1:  # L1: the byte, as the interpreter's check (its first byte)
        scaled = before(op, llvm.MulOp(index, const(size)))
        x = before(op, llvm.AddOp(scaled, const(where)))
    hit = cmp(slot(COUNT_SLOT), const(HULLS), 8)  # ugt: more copies than hulls
    for h in range(HULLS):
        base = COUNT_SLOT + 1 + 4 * h
        k, param, lo, hi = (slot(base + i) for i in range(4))
        inside = before(op, llvm.AndOp(cmp(lo, x, 3), cmp(x, hi, 2)))  # sle, slt
        if space == 3:  # HBM read: a store in flight to this parameter
            kind_ok = before(op, llvm.AndOp(cmp(k, const(3), 0), cmp(param, const(where), 0)))
        elif kind == "read":  # L1 read: a load in flight
            kind_ok = cmp(k, const(1), 0)
        else:  # L1 write: any copy in flight
            kind_ok = before(op, llvm.OrOp(cmp(k, const(1), 0), cmp(k, const(2), 0)))
        hit = before(op, llvm.OrOp(hit, before(op, llvm.AndOp(kind_ok, inside))))
    return hit


def declare(module: ModuleOp) -> None:
    if not any(isinstance(o, llvm.FuncOp) and o.sym_name.data == SYMBOL for o in module.ops):
        module.body.block.insert_op_before(llvm.FuncOp(
            SYMBOL, signature(), linkage=llvm.LinkageAttr("external"), body=Region()),
            module.body.block.first_op)


def _callback(err: int, site: int, bx: int, by: int, bz: int, lx: int, ly: int, lz: int,
              count: int, *raw: int) -> int:
    kernel = _KERNELS.get(err)
    if kernel is None:
        return COLLECTIVE_CODE
    try:
        where: PrintSite = kernel.printf_sites[site]
        if where.hook is not None:  # the in-flight check (inflight.py)
            return _hook(kernel, where, (bx, by, bz), raw)
        row = tuple(_value(kind, bits) for kind, bits in zip(where.kinds,
                                                             raw[:count - where.keys]))
        fmt = where.fmt
        try:
            text = (fmt[:-1] if fmt.endswith("\n") else fmt) % row  # C's final newline
        except (TypeError, ValueError, OverflowError) as exc:
            kernel.collective_error = KernelError(
                f"pto.printf format {fmt!r} cannot print {row}: {exc}", kernel=kernel.name,
                location=where.location)
            kernel.err[0] = COLLECTIVE_CODE
            return COLLECTIVE_CODE
        line = f"[block {(bx, by, bz)} lane {(lx, ly, lz)}] {text}\n"
        if kernel.printf_lines is None:
            sys.stdout.write(line)
        else:  # several lanes print: the interpreter's order is op by op, lanes in order
            kernel.printf_lines.append((_sort_key(where, site, raw, count), (bx, by, bz),
                                        (lx, ly, lz), line))
    except Exception as exc:  # noqa: BLE001 - never let an exception cross the C frame
        kernel.collective_error = KernelError(f"internal error in pto.printf of the native "
                                              f"backend: {exc!r}", kernel=kernel.name)
        kernel.err[0] = COLLECTIVE_CODE
        return COLLECTIVE_CODE
    return 0


def _hook(kernel: Any, where: PrintSite, block: tuple[int, int, int],
          raw: tuple[int, ...]) -> int:
    from pypto.backend.native.inflight import hook

    if kernel.err[0]:
        return int(kernel.err[0])
    error = hook(kernel, where.hook, kernel.inflight_copies, block, raw)
    if error is None:
        return 0
    kernel.collective_error = error
    kernel.err[0] = COLLECTIVE_CODE
    return COLLECTIVE_CODE


def _value(kind: str, bits: int) -> Any:
    if kind == "f":
        return float(np.int64(bits).view(np.float64))
    if kind == "b":
        return bool(bits)
    return int(bits)


CALLBACK = CALLBACK_TYPE(_callback)
"""The C function `pypto_native_printf` resolves to (kept alive here)."""


def address() -> int:
    return ctypes.cast(CALLBACK, ctypes.c_void_p).value or 0


def printf_ops(kernel: Operation) -> list[Operation]:
    """The kernel's printfs (not inflight.py's hooks, which print nothing)."""
    from pypto.backend.native.inflight import HOOK_ATTR

    return [op for op in kernel.walk() if isinstance(op, pto.PrintfOp) and
            HOOK_ATTR not in op.attributes]


# several printfs, or one in a loop: all on one lane -----------------------------------------

Pin = tuple[str, int, int]  # (launch id: "local_id" | "block_id" | "global_id", dim, value)


def _pins(cond: SSAValue) -> set[Pin]:
    """The facts `cond` implies of the form `id(dim) == constant` (through `and`)."""
    from pypto.analysis.ir_utils import constant_int
    from pypto.dialects.traits import launch_id

    owner = cond.owner
    if isinstance(owner, arith.AndIOp):
        return _pins(owner.lhs) | _pins(owner.rhs)
    if isinstance(owner, arith.CmpiOp) and owner.predicate.value.data == 0:  # eq
        for a, b in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            c = constant_int(b)
            ident = launch_id(a.owner) if isinstance(a.owner, Operation) else None
            if c is not None and ident in ("local_id", "block_id", "global_id"):
                return {(ident, a.owner.dim_index, c)}  # type: ignore[attr-defined]
    return set()


def _pins_of(op: Operation) -> frozenset[Pin]:
    """What the `scf.if`s around `op` (their then-branches) pin of the lane running it."""
    found: set[Pin] = set()
    child, parent = op, op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.IfOp) and child.parent_region() is parent.true_region:
            found |= _pins(parent.cond)
        child, parent = parent, parent.parent_op()
    return frozenset(found)


def single_lane(kernel: Operation) -> tuple[str | None, frozenset[int]]:
    """For a kernel with several printfs or one in a loop: (why its lines could come out in
    another order than the interpreter's, None if they cannot; the dimensions a launch must
    not extend (grid and block 1 there)).

    The interpreter prints op by op over a lane vector whose extent (the grid, a batch of
    blocks, a block) is its own choice (docs/interpreter.md#execution-modes), lanes in order;
    compiled lanes run one after another. The two orders agree whatever the vector when one
    lane prints every line: each printf under `if` conditions that pin, with `==` on
    constants, the same lane — `local_id(d)` and `block_id(d)`, or `get_global_id(d)` — in
    every dimension the launch extends (CUDA's `if (threadIdx.x == 0 && blockIdx.x == 0)`)."""
    ops = printf_ops(kernel)
    pins = {_pins_of(op) for op in ops}
    if len(pins) != 1:
        return (f"{_location(ops[0])}: a kernel with several pto.printf or one in a loop, not "
                f"all under `if`s pinning a single lane, or a single block for printfs outside "
                f"loops (the interpreter prints op by op over its lane vector: the native "
                f"backend prints in its order only when one lane, or one block, prints every "
                f"line)"), frozenset()
    facts = next(iter(pins))
    pinned = {d for d in range(3)
              if any(k == "global_id" and dim == d for k, dim, _ in facts)
              or ({"local_id", "block_id"} <= {k for k, dim, _ in facts if dim == d})}
    if not pinned:
        return (f"{_location(ops[0])}: a kernel with several pto.printf or one in a loop whose "
                f"`if` conditions do not pin a single lane (`local_id(0) == c and "
                f"block_id(0) == c`, or `get_global_id(0) == c`), or a single block for "
                f"printfs outside loops: the native backend prints in the interpreter's order "
                f"only when one lane, or one block, prints every line"), frozenset()
    return None, frozenset(range(3)) - pinned


def plan(kernel: Operation) -> tuple[str | None, frozenset[int], bool]:
    """(why the kernel's printfs are refused, None if compiled; the dimensions a launch must
    not extend; whether the launch's lines are buffered and sorted into the interpreter's
    order (True: `flush`) or printed as the lanes run (False)).

    One printf outside loops prints as the lanes run: each lane prints at most once, in
    linear lane order, blocks in order — the interpreter's order whatever its vectors. Any
    other kernel buffers its lines with their order keys (`add_order_keys`); when a printf
    has no room for them, it prints as the lanes run if one lane prints every line
    (`single_lane`), else it is refused."""
    ops = printf_ops(kernel)
    if len(ops) <= 1 and not in_loop(kernel):
        return None, frozenset(), False
    looped = [op for op in ops if _enclosing_loops(op)]
    if not looped or all(KEYS_ATTR in op.attributes for op in looped) or \
            add_order_keys(kernel) is not kernel:  # (NativeKernel compiles the keyed kernel)
        return None, frozenset(), True
    refused, free = single_lane(kernel)
    if refused is None:
        return None, free, False
    return (f"{_location(looped[0])}: a pto.printf in loops with more than {MAX_VALUES} "
            f"values and enclosing loops together, printed by several lanes (the native "
            f"backend passes each loop's trip to order the lines as the interpreter prints "
            f"them)"), frozenset(), False


def launch_refusal(free: frozenset[int], buffered: bool, grid: tuple[int, int, int],
                   block: tuple[int, int, int], name: str, interpreter: Any = None
                   ) -> str | None:
    """Why this launch could print in another order than the interpreter (None: it cannot):
    the printing lane is pinned in the other dimensions only (`plan`); buffered lines need
    the interpreter's lane vectors (`interpreter`: its Executable), which warp mode (a
    `schedule`) does not have."""
    if buffered:
        if interpreter is None or interpreter.mode == "warp":
            return (f"the native backend orders the printf lines of kernel '{name}' by the "
                    f"interpreter's lane vectors, which a warp schedule does not have; run "
                    f"it on the interpreter (backend='interpreter' or 'auto')")
        return None
    wide = sorted(d for d in free if grid[d] * block[d] != 1)
    if not wide:
        return None
    axes = ", ".join("xyz"[d] for d in wide)
    return (f"the native backend prints the lines of kernel '{name}' in the interpreter's order "
            f"only when one lane prints them all; its printfs pin the lane in the launch's "
            f"other dimensions, not in {axes}, where this launch has several blocks or lanes; "
            f"run it on the interpreter (backend='interpreter' or 'auto')")


def flush(kernel: Any) -> None:
    """Write the buffered lines of a launch in the interpreter's order: its lane vectors
    (`Executable.lane_vectors`: the grid, chunks of blocks or single blocks, its choice) one
    after another; within one, op by op in lockstep — the lines' keys (`_sort_key`: kernel
    order, each enclosing loop's trip) — and lanes in linear order (block-major)."""
    lines = kernel.printf_lines
    if not lines:
        return
    grid, block, bound = kernel.printf_launch
    vectors = kernel.interpreter.lane_vectors(grid, block, bound) or [(0, 0)]
    firsts = [first for first, _ in vectors]
    lanes = block[0] * block[1] * block[2]

    def linear(entry: tuple[Any, ...]) -> int:
        (bx, by, bz), (lx, ly, lz) = entry[1], entry[2]
        return ((bz * grid[1] + by) * grid[0] + bx) * lanes + (lz * block[1] + ly) * block[0] + lx

    keyed = []
    for entry in lines:
        lane = linear(entry)
        keyed.append((bisect.bisect_right(firsts, lane) - 1, entry[0], lane, entry[3]))
    keyed.sort(key=lambda e: e[:3])
    lines.clear()
    sys.stdout.write("".join(e[3] for e in keyed))


def _location(op: Operation) -> str:
    from pypto.diagnostics import op_location

    return op_location(op, unknown="here")


def in_loop(kernel: Operation) -> bool:
    """Is one of the kernel's printfs inside a loop?"""
    def looped(op: Operation) -> bool:
        parent = op.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, scf.ForOp | scf.WhileOp):
                return True
            parent = parent.parent_op()
        return False
    return any(looped(op) for op in printf_ops(kernel))
