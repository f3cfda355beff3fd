"""`pto.printf` in compiled code: a callback per lane into Python's `%` formatting.

The interpreter prints one line per active lane, `[block (x, y, z) lane (x, y, z)] text`,
formatted with Python's `%` of the lane's values converted to Python numbers
(pypto/backend/interpreter/tiles.py `printf`), for all lanes of its vector before the next op.
Compiled lanes run one after another, so the lines come out in the interpreter's order when the
kernel has one `pto.printf`, outside loops: each lane prints at most once, in linear lane order,
blocks in order, whatever the interpreter's vector (grid, batch, block or warp). That is what the
support check accepts (support.py); a kernel with more, or one in a loop, runs on the
interpreter.

The lane function calls `pypto_native_printf(err, site, block x/y/z, lane x/y/z, n, v0..v7)`
with each value as 64 bits (integers sign-extended, bools 0/1, floats widened exactly to
float64: the interpreter's `float()` of a float16 / bfloat16 / float32 is the same number); the
callback formats the line with the site's format and writes it to `sys.stdout`. A format that
cannot print a lane's values (`%d` of inf) is the interpreter's `KernelError`, kept on the
kernel (collectives.py's error path); the lines of the lanes before it are already printed
(the interpreter prints none of that op's lines then).
"""

from __future__ import annotations

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


def site_of(op: pto.PrintfOp, location: str) -> PrintSite:
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


def add_order_keys(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose printfs in loops also pass, as extra values, the trip of each
    enclosing loop (`iv - lb`, or `lb - iv` for a negative step), and carry their place in
    kernel order (`PATH_ATTR`): the lines of one block, buffered, then sort into the
    interpreter's order — lockstep, op by op: (loop, trip, ..., printf, lane) — whatever
    the lanes printing (`single_block`). Unchanged when a printf sits in a `while` (no trip
    count), in a `for` with a run-time step, or has no room for the keys (MAX_VALUES)."""
    ops = printf_ops(kernel)
    if not ops or not in_loop(kernel):
        return kernel
    from pypto.analysis.ir_utils import constant_int

    for op in ops:
        loops = _enclosing_loops(op)
        if any(not isinstance(loop, scf.ForOp) or not constant_int(loop.step)
               for loop in loops) or len(op.operands) + len(loops) > MAX_VALUES:
            return kernel
    kernel = kernel.clone()
    order = {op: i for i, op in enumerate(kernel.walk())}
    for op in printf_ops(kernel):
        assert isinstance(op, pto.PrintfOp)
        loops = _enclosing_loops(op)
        keys: list[SSAValue] = []
        for loop in loops:
            assert isinstance(loop, scf.ForOp)
            iv = loop.body.block.args[0]
            negative = (constant_int(loop.step) or 0) < 0
            trip = arith.SubiOp(loop.lb, iv) if negative else arith.SubiOp(iv, loop.lb)
            op.parent_block().insert_op_before(trip, op)
            keys.append(trip.result)
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
    status = before(op, llvm.CallOp(SYMBOL, err, site_c, *coords, count, *values,
                                    return_type=i32))
    zero32 = before(op, lowering._const(0, i32))
    ok = before(op, llvm.ICmpOp(status, zero32, IntegerAttr(0, i64)))  # eq
    lowering._fail_unless(op, ok, COLLECTIVE_CODE, site, None, -1)  # (to_llvm.COLLECTIVE)
    lowering.calls_printf = True
    op.detach()
    op.erase()


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
        else:  # one block prints: the interpreter's order is op by op, lanes in order
            kernel.printf_lines.append((_sort_key(where, site, raw, count), lz, ly, lx, line))
    except Exception as exc:  # noqa: BLE001 - never let an exception cross the C frame
        kernel.collective_error = KernelError(f"internal error in pto.printf of the native "
                                              f"backend: {exc!r}", kernel=kernel.name)
        kernel.err[0] = COLLECTIVE_CODE
        return COLLECTIVE_CODE
    return 0


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
    return [op for op in kernel.walk() if isinstance(op, pto.PrintfOp)]


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


def single_block(kernel: Operation) -> tuple[str | None, frozenset[int]]:
    """For a kernel with several printfs outside loops: (why its lines could come out in
    another order than the interpreter's, None if they cannot; the dimensions a launch must
    have one block in). When one block prints every line, the interpreter's order is op by
    op (program order: no loop around them), lanes in linear order within each — whatever
    its vector, which holds whole blocks — and compiled code prints it by buffering the lines
    of the launch and sorting them by (printf, lane): every printf under `if`s pinning the
    same `block_id(d) == c` (any lanes), or a launch of one block in the other dimensions."""
    ops = printf_ops(kernel)
    if any(KEYS_ATTR not in op.attributes for op in ops if _enclosing_loops(op)):
        return "a printf in a while loop or a loop of run-time step", frozenset()
    blocks = {frozenset(f for f in _pins_of(op) if f[0] == "block_id") for op in ops}
    if len(blocks) != 1:
        return "printfs pinned to different blocks", frozenset()
    pinned = {dim for _, dim, _ in next(iter(blocks))}
    return None, frozenset(range(3)) - pinned


def plan(kernel: Operation) -> tuple[str | None, frozenset[int], bool]:
    """(why the kernel's printfs are refused, None if compiled; the dimensions a launch must
    not extend; whether only blocks (True: one block prints, its lines buffered and sorted)
    or blocks and lanes (False: one lane prints, or at most one printf outside loops))."""
    ops = printf_ops(kernel)
    if len(ops) <= 1 and not in_loop(kernel):
        return None, frozenset(), False
    refused, free = single_lane(kernel)
    if refused is None:
        return None, free, False
    block_refused, block_free = single_block(kernel)
    if block_refused is None:
        return None, block_free, True
    return refused, frozenset(), False


def launch_refusal(free: frozenset[int], buffered: bool, grid: tuple[int, int, int],
                   block: tuple[int, int, int], name: str) -> str | None:
    """Why this launch could print in another order than the interpreter (None: it cannot):
    the printing lane (block, if `buffered`) is pinned in the other dimensions only (`plan`)."""
    wide = sorted(d for d in free if grid[d] * (1 if buffered else block[d]) != 1)
    if not wide:
        return None
    axes = ", ".join("xyz"[d] for d in wide)
    who = "block" if buffered else "lane"
    return (f"the native backend prints the lines of kernel '{name}' in the interpreter's order "
            f"only when one {who} prints them all; its printfs pin the {who} in the launch's "
            f"other dimensions, not in {axes}, where this launch has several "
            f"{'blocks' if buffered else 'blocks or lanes'}; run it on the interpreter "
            f"(backend='interpreter' or 'auto')")


def flush(kernel: Any) -> None:
    """Write the buffered lines of a launch (`single_block`) in the interpreter's order."""
    lines = kernel.printf_lines
    if lines:
        lines.sort(key=lambda entry: entry[:4])
        sys.stdout.write("".join(entry[4] for entry in lines))
        lines.clear()


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
