"""The interpreter's in-flight copy check, compiled: run-time hooks where the proof gives up.

The interpreter performs an async copy when it is issued and keeps its regions *in flight*
until the `pto.wait` of its token (or `pto.wait_all`): a lane reading an L1 region a load still
writes, writing one any copy still uses, or reading HBM a store still writes is a `RaceError`
naming both instructions (pypto/backend/interpreter/tiles.py `hazard_in_flight`;
docs/isa.md#ptoasync_load). tokens.py proves that check cannot fire, and compiled code then
skips it. When the proof fails (a data-dependent index into a buffer being loaded, slots the
proof cannot tell apart), `instrument` compiles the check itself, at the places the proof could
not clear and nowhere else (correct, proven kernels are unchanged: no cost):

- after every async copy, lane 0 of the block (a `pto.printf` hook under `if` all local ids
  are 0: the printf callback, printf.py, calls `hook` here) checks the copy's regions against
  the copies in flight, as the interpreter's `check_region`, then records it: kind, site, its
  L1 bytes and HBM elements;
- after every `pto.wait` and `pto.wait_all`, lane 0 completes its copy (all of them);
- before every lane load (and L1 store) that may touch a copy in flight, the lane passes the
  element it accesses: checked as the interpreter's `check_read` / `check_write` (HBM writes
  are not checked by the interpreter either).

A hook runs in the phase after its block-level instruction (phases.py: copies and waits cut
the block's code) and lane 0 runs a phase first, so a copy is recorded after every lane ran the
code before it and before any lane runs the code after it: the interpreter's order. Tokens keep
no run-time value: every `pto.wait` must name an async copy's own result (not a token carried
by a loop or chosen by an `if`), which then denotes the latest copy of that op — the hook
completes that one. A hazard raises the interpreter's `RaceError` (its message, the access's
location), and the launch is replayed on the interpreter for its order of detection
(replay.py). The table is per block, reset when the block changes and at each launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32, i64
from xdsl.ir import Operation, SSAValue

from pypto import dtypes
from pypto.backend.interpreter.copies import Region
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import memory_accesses, offset_base
from pypto.errors import RaceError

HOOK_ATTR = "pto.native_inflight"
"""On a `pto.printf` that is a hook: "copy N" (N: the async copy op's number in walk order),
"tile_store", "wait", "wait_all", "read" or "write" (a lane access)."""
BUFFER_ATTR = "pto.native_inflight_buffer"
"""On an access or copy hook: "l1 K" (the K-th `pto.alloc_local`) or "hbm P" (parameter P),
then, for a copy, the other operand's."""
_FORMAT = "%.0s"  # (prints nothing: the hook still verifies as a printf)

COUNT_SLOT = 12
"""err[12]: how many hulls follow (HULLS + 1: too many, every guarded hook calls back)."""
HULLS = 4
"""Hulls published for the compiled guard: err[13 + 4 h ...] = kind (1 an L1 load's bytes, 2 an
L1 store's bytes, 3 an HBM store's elements), parameter (3) and [lo, hi)."""
SLOTS = 1 + 4 * HULLS
"""Error-record slots after the first 12 (jit.ERR_SLOTS)."""


class Unchecked(Exception):
    """The run-time check cannot be compiled for this kernel (the proof's refusal stands)."""


def instrument(kernel: func.FuncOp) -> func.FuncOp:
    """`kernel` with the hooks when tokens.py cannot prove that no in-flight hazard fires
    (and can say where one might), else `kernel` itself."""
    from pypto.backend.native.tokens import (ASYNC, CHECKED_ATTR, TokenRefused, lane_limit,
                                             possible_hazards)

    if not any(isinstance(op, ASYNC) for op in kernel.walk()):
        return kernel
    try:
        lane_limit(kernel)
        return kernel
    except TokenRefused:
        pass
    clone = kernel.clone()
    try:
        hazards = possible_hazards(clone)
    except TokenRefused:  # (the walk itself failed: every access is checked)
        hazards = {op: [] for op in clone.walk()
                   if memory_accesses(op) and not isinstance(op, ASYNC)}
    try:
        _hook(clone, hazards)
    except (TokenRefused, Unchecked, KeyError):  # (KeyError: a token no rule numbers)
        return kernel
    clone.attributes[CHECKED_ATTR] = StringAttr("run time")
    return clone


def _root(ptr: SSAValue, allocs: list[Operation], params: list[SSAValue]
          ) -> tuple[str, list[SSAValue]]:
    """("l1 K" | "hbm P", the offsets added to it) of an address."""
    offsets: list[SSAValue] = []
    v = ptr
    while True:
        if v in params:
            return f"hbm {params.index(v)}", offsets[::-1]
        if isinstance(v.owner, pto.AllocLocalOp):
            t = v.owner.result.type
            isz = np.dtype(dtypes.np_dtype_of(t.element_type)).itemsize
            return f"l1 {allocs.index(v.owner)} {int(v.owner.l1_offset or 0)} {isz}", \
                offsets[::-1]
        owner = v.owner
        if not isinstance(owner, Operation):
            raise Unchecked("an address not derived from a parameter or an L1 buffer")
        base = offset_base(owner)
        if base is None or not isinstance(owner, pto.AddPtrOp):
            raise Unchecked("an address not derived from a parameter or an L1 buffer")
        offsets.append(owner.offset)
        v = base


def _sum(offsets: list[SSAValue], before: Operation) -> SSAValue:
    """The element offset (i64) of an address: its `addptr` offsets summed, before `before`."""
    block = before.parent_block()
    assert block is not None
    zero = arith.ConstantOp(IntegerAttr(0, i64))
    block.insert_op_before(zero, before)
    total = zero.result
    for off in offsets:
        if off.type != i64:
            wide = arith.ExtSIOp(off, i64)
            block.insert_op_before(wide, before)
            off = wide.result
        add = arith.AddiOp(total, off)
        block.insert_op_before(add, before)
        total = add.result
    return total


def _printf(kind: str, values: list[SSAValue], where: Operation, buffers: str = ""
            ) -> pto.PrintfOp:
    hook = pto.PrintfOp(_FORMAT * len(values), values)
    hook.attributes[HOOK_ATTR] = StringAttr(kind)
    if buffers:
        hook.attributes[BUFFER_ATTR] = StringAttr(buffers)
    hook.location = where.location
    return hook


def _lane0_after(op: Operation, hook_of: Any) -> None:
    """Insert, after block-level `op`, `if local ids are all 0: <hook_of(block)>`."""
    block = op.parent_block()
    assert block is not None
    anchor = op.next_op
    assert anchor is not None  # (a terminator follows every op)
    conds: list[SSAValue] = []
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    block.insert_op_before(zero, anchor)
    for d in range(3):
        lid = pto.GetLocalIdOp(d)
        cmp = arith.CmpiOp(lid.results[0], zero.result, "eq")
        block.insert_ops_before([lid, cmp], anchor)
        conds.append(cmp.result)
    both = arith.AndIOp(conds[0], conds[1])
    cond = arith.AndIOp(both.result, conds[2])
    block.insert_ops_before([both, cond], anchor)
    then = scf.IfOp(cond.result, [], [scf.YieldOp()])
    body = then.true_region.blocks[0]
    hook_of(body, body.last_op)
    block.insert_op_before(then, anchor)


def _has_copy(op: Operation) -> bool:
    from pypto.backend.native.tokens import ASYNC

    return any(isinstance(o, ASYNC) for o in op.walk())


def _is_token(v: SSAValue) -> bool:
    return isinstance(v.type, pto.TokenType)


def _thread_keys(kernel: func.FuncOp) -> dict[SSAValue, SSAValue]:
    """Give every token a run-time value: the block's copies are numbered in issue order
    (the interpreter's token numbers, tiles.py `copy`) by an i32 counter threaded through the
    structured code (an iter arg of each loop, a result of each `if`, that issues copies),
    and each token value gets its copy's number beside it (a loop carrying a token carries
    its number too; an `if` choosing one yields its number). Returns token -> number."""
    keys: dict[SSAValue, SSAValue] = {}
    entry = kernel.body.block
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    entry.insert_op_before(zero, entry.first_op)
    _thread(entry, zero.result, keys)
    return keys


def _thread(block: Any, count: SSAValue, keys: dict[SSAValue, SSAValue]) -> SSAValue:
    """Number the copies of `block` from `count` on; the count after it."""
    from pypto.backend.native.tokens import ASYNC

    one = None
    for op in list(block.ops):
        if isinstance(op, ASYNC):
            if one is None:
                one = arith.ConstantOp(IntegerAttr(1, i32))
                block.insert_op_before(one, op)
            keys[op.results[0]] = count
            bump = arith.AddiOp(count, one.result)
            block.insert_op_after(bump, op)
            count = bump.result
        elif isinstance(op, scf.ForOp) and (_has_copy(op) or
                                            any(_is_token(a) for a in op.iter_args)):
            count = _thread_for(op, count, keys)
        elif isinstance(op, scf.IfOp) and (_has_copy(op) or
                                           any(_is_token(r) for r in op.results)):
            count = _thread_if(op, count, keys)
        elif op.regions and (_has_copy(op) or any(_is_token(r) for r in op.results) or
                             any(_is_token(a) for r in op.regions for b in r.blocks
                                 for a in b.args)):
            raise Unchecked(f"a token or a copy in '{op.name}'")
    return count


def _thread_for(loop: scf.ForOp, count: SSAValue, keys: dict[SSAValue, SSAValue]
                ) -> SSAValue:
    tokens = [i for i, a in enumerate(loop.iter_args) if _is_token(a)]
    inits = [count] + [keys[loop.iter_args[i]] for i in tokens]
    body = loop.detach_region(loop.body)
    b = body.blocks[0]
    n = len(b.args)
    inner = [b.insert_arg(i32, n + k) for k in range(len(inits))]
    for k, i in enumerate(tokens):
        keys[b.args[i + 1]] = inner[k + 1]
    end = _thread(b, inner[0], keys)
    y = b.last_op
    assert isinstance(y, scf.YieldOp)
    y.operands = [*y.operands, end, *(keys[y.operands[i]] for i in tokens)]
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, *inits], body)
    return _replace(loop, new, tokens, keys)


def _thread_if(op: scf.IfOp, count: SSAValue, keys: dict[SSAValue, SSAValue]) -> SSAValue:
    tokens = [i for i, r in enumerate(op.results) if _is_token(r)]
    regions = []
    for region in list(op.regions):
        detached = op.detach_region(region)
        if not detached.blocks:
            from xdsl.ir import Block

            detached.add_block(Block([scf.YieldOp()]))
        b = detached.blocks[0]
        end = _thread(b, count, keys)
        y = b.last_op
        assert isinstance(y, scf.YieldOp)
        y.operands = [*y.operands, end, *(keys[y.operands[i]] for i in tokens)]
        regions.append(detached)
    if len(regions) == 1:
        from xdsl.ir import Block, Region

        regions.append(Region(Block([scf.YieldOp(count)])))
    types = [*(r.type for r in op.results), i32, *(i32 for _ in tokens)]
    new = scf.IfOp(op.cond, types, regions[0], regions[1])
    return _replace(op, new, tokens, keys)


def _replace(old: Operation, new: Operation, tokens: list[int],
             keys: dict[SSAValue, SSAValue]) -> SSAValue:
    """`new` (old's results, then the count, then the tokens' numbers) in place of `old`."""
    for k, v in old.attributes.items():
        new.attributes[k] = v
    new.location = old.location
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    n = len(old.results)
    for i, r in enumerate(old.results):
        r.replace_all_uses_with(new.results[i])
    for k, i in enumerate(tokens):
        keys[new.results[i]] = new.results[n + 1 + k]
    old.detach()
    old.erase()
    return new.results[n]


def _hook(kernel: func.FuncOp, hazards: dict[Operation, list[Operation]]) -> None:
    from pypto.backend.native.tokens import ASYNC

    allocs = [op for op in kernel.walk() if isinstance(op, pto.AllocLocalOp)]
    params = list(kernel.body.block.args)
    copies = [op for op in kernel.walk() if isinstance(op, ASYNC)]
    for op, _ in hazards.items():
        if isinstance(op, (*ASYNC, pto.TileStoreOp)):
            continue  # (every copy checks its own regions at issue; a tile_store's: below)
        if not isinstance(op, pto.LoadOp | pto.StoreOp):
            raise Unchecked(f"'{op.name}' may touch a copy in flight")
    keys = _thread_keys(kernel)
    stores = [op for op in hazards if isinstance(op, pto.TileStoreOp)]
    for n, copy in [*enumerate(copies), *((-1, op) for op in stores)]:
        assert isinstance(copy, pto.BulkCopyOp)
        dst, dst_off = _root(copy.dst, allocs, params)
        src, src_off = _root(copy.src, allocs, params)

        def hook_copy(body: Any, end: Operation, copy: Any = copy, n: int = n,
                      dst_off: list[SSAValue] = dst_off, src_off: list[SSAValue] = src_off,
                      names: str = f"{dst},{src}") -> None:
            values = [_sum(dst_off, end), _sum(src_off, end)]
            values += list(copy.operands[2:6])  # nbytes, rows, src_stride, dst_stride
            if n >= 0:
                values.append(keys[copy.results[0]])  # (its number)
            body.insert_op_before(_printf(f"copy {n}" if n >= 0 else "tile_store", values,
                                          copy, names), end)

        _lane0_after(copy, hook_copy)
    for op in [o for o in kernel.walk() if isinstance(o, pto.WaitOp | pto.WaitAllOp)]:
        kind = "wait" if isinstance(op, pto.WaitOp) else "wait_all"
        values = [keys[op.token]] if isinstance(op, pto.WaitOp) else []
        _lane0_after(op, lambda body, end, kind=kind, op=op, values=values:
                     body.insert_op_before(_printf(kind, values, op), end))
    for op in hazards:
        if isinstance(op, ASYNC):
            continue
        for access in memory_accesses(op):
            if access.kind == "write" and access.space != "local":
                continue  # (the interpreter checks no lane write of HBM)
            name, offsets = _root(op.operands[access.operand], allocs, params)
            total = _sum(offsets, op)
            op.parent_block().insert_op_before(_printf(access.kind, [total], op, name), op)


# run time: the printf callback's hooks ------------------------------------------------------


@dataclass
class _Copy:
    kind: str                 # async_load | async_store
    text: str                 # "pto.async_load at file:line:col"
    number: int               # the copy op's number
    l1: list[Region]          # block-local L1 bytes
    hbm: Any                  # the bound HBM buffer
    hbm_regions: list[Region]  # its elements
    seq: int = 0              # its number (the token's run-time value)
    param: int = -1           # the HBM parameter


@dataclass(frozen=True)
class HookSite:
    kind: str         # copy | tile_store | wait | wait_all | read | write
    number: int       # the copy's number (copy, wait)
    buffers: tuple[str, ...]
    location: str


def site_of(op: pto.PrintfOp) -> HookSite | None:
    """The hook a printf is (None: a real printf)."""
    attr = op.attributes.get(HOOK_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    kind, _, number = attr.data.partition(" ")
    buffers = _buffers(op)
    return HookSite(kind, int(number) if number else -1, buffers, op_location(op))


def _buffers(op: Operation) -> tuple[str, ...]:
    names = op.attributes.get(BUFFER_ATTR)
    return tuple(names.data.split(",")) if isinstance(names, StringAttr) else ()


def guard(op: pto.PrintfOp) -> tuple[str, int, int, int] | None:
    """For a lane-access hook: (its kind "read" / "write", space 1 L1 / 3 HBM, the L1 byte
    offset or the parameter, the element size); None for the others (they always call)."""
    attr = op.attributes.get(HOOK_ATTR)
    if not isinstance(attr, StringAttr) or attr.data not in ("read", "write"):
        return None
    name = _buffers(op)[0].split()
    if name[0] == "l1":
        return attr.data, 1, int(name[2]), int(name[3])
    return attr.data, 3, int(name[1]), 1


def _publish(kernel: Any, table: list[_Copy]) -> None:
    """The hulls of the copies in flight, for the compiled guard of the access hooks: a lane
    calls back only when its byte (element) falls in one (printf.lower_printf)."""
    hulls: list[tuple[int, int, int, int]] = []
    for c in table:
        l1 = (1 if c.kind == "async_load" else 2, 0, min(r.lo for r in c.l1),
              max(r.hi for r in c.l1))
        hulls.append(l1)
        if c.kind == "async_store":  # (every parameter bound to its tensor: the
            for p, b in enumerate(kernel.bound):  # interpreter compares the buffers)
                if b is c.hbm:
                    hulls.append((3, p, min(r.lo for r in c.hbm_regions),
                                  max(r.hi for r in c.hbm_regions)))
    record = kernel.err
    record[COUNT_SLOT] = len(hulls) if len(hulls) <= HULLS else HULLS + 1
    record[COUNT_SLOT + 1:COUNT_SLOT + 1 + 4 * HULLS] = 0
    for h, hull in enumerate(hulls[:HULLS]):
        record[COUNT_SLOT + 1 + 4 * h:COUNT_SLOT + 5 + 4 * h] = hull


def _table(kernel: Any, block: tuple[int, int, int]) -> list[_Copy]:
    """The block's copies in flight, in issue order; fresh when the block changes or a launch
    starts (`NativeKernel.run` clears the state)."""
    state = kernel.__dict__.get("inflight_state")
    if state is None or state[0] != block:
        state = kernel.__dict__["inflight_state"] = (block, [])
        _publish(kernel, state[1])
    return state[1]


def _buffer(kernel: Any, name: str) -> tuple[str, Any, int, np.dtype]:
    """(space, L1 buffer or bound HBM buffer, L1 byte offset, dtype) of "l1 K" / "hbm P"."""
    space, _, index = name.partition(" ")
    if space == "l1":
        buf = kernel.l1[int(index.split()[0])]
        return "L1", buf, buf.offset, buf.dtype
    bound = kernel.bound[int(index)]
    return "HBM", bound, 0, bound.data.dtype


def _hazard(kernel: Any, space: str, name: str, copy: _Copy, access: str,
            location: str) -> RaceError:
    return RaceError(
        f"hazard: {access} of {space} buffer '{name}' while the {copy.text} that "
        f"{'writes' if copy.kind == 'async_load' else 'reads'} it is still in flight; call "
        f"pto.wait(token) or pto.wait_all() before this {access}", kernel=kernel.name,
        location=location)


def _check_region(kernel: Any, table: list[_Copy], name: str, region: Region, access: str,
                  location: str) -> RaceError | None:
    """The interpreter's `check_region` of a copy's operand (tiles.py)."""
    if region.rows == 0 or region.row_len == 0:
        return None
    space, buf, offset, dtype = _buffer(kernel, name)
    if space == "L1":
        isz = dtype.itemsize
        span = Region(offset + region.base * isz, region.rows, region.row_len * isz,
                      region.stride * isz)
        for copy in table:
            if (access == "write" or copy.kind == "async_load") and \
                    any(r.overlaps(span) for r in copy.l1):
                return _hazard(kernel, space, buf.name, copy, access, location)
        return None
    for copy in table:
        if copy.kind == "async_store" and copy.hbm is buf and \
                any(r.overlaps(region) for r in copy.hbm_regions):
            return _hazard(kernel, space, buf.name, copy, access, location)
    return None


def hook(kernel: Any, site: HookSite, copy_sites: dict[int, str],
         block: tuple[int, int, int], raw: tuple[int, ...]) -> RaceError | None:
    """Run one hook (see the module doc); the interpreter's error, if one fires."""
    table = _table(kernel, block)
    if site.kind == "wait_all":
        table.clear()
        _publish(kernel, table)
    elif site.kind == "wait":  # (its copy, if still in flight: the interpreter's pop)
        table[:] = [c for c in table if c.seq != int(raw[0])]
        _publish(kernel, table)
    elif site.kind in ("copy", "tile_store"):
        found = _copy(kernel, site, copy_sites, table, raw)
        _publish(kernel, table)
        return found
    else:
        space, buf, offset, dtype = _buffer(kernel, site.buffers[0])
        index = int(raw[0])
        if space == "L1":
            byte = offset + index * dtype.itemsize
            for copy in table:
                if (site.kind == "write" or copy.kind == "async_load") and \
                        any(bool(r.hits(byte)) for r in copy.l1):
                    return _hazard(kernel, space, buf.name, copy, site.kind, site.location)
        elif site.kind == "read":
            for copy in table:
                if copy.kind == "async_store" and copy.hbm is buf and \
                        any(bool(r.hits(index)) for r in copy.hbm_regions):
                    return _hazard(kernel, space, buf.name, copy, "read", site.location)
    return None


def _copy(kernel: Any, site: HookSite, copy_sites: dict[int, str], table: list[_Copy],
          raw: tuple[int, ...]) -> RaceError | None:
    dst_off, src_off, nbytes, rows, src_stride, dst_stride = (int(v) for v in raw[:6])
    dst, src = site.buffers
    kind = copy_sites[site.number] if site.kind == "copy" else "tile_store"
    _, _, _, dtype = _buffer(kernel, dst)
    row_len = nbytes // (rows * dtype.itemsize)
    src_region = Region(src_off, rows, row_len, src_stride)
    dst_region = Region(dst_off, rows, row_len, dst_stride)
    text = f"pto.{kind} at {site.location}"
    found = _check_region(kernel, table, src, src_region, "read", site.location) or \
        _check_region(kernel, table, dst, dst_region, "write", site.location)
    if found is not None or kind == "tile_store":  # (complete when it retires)
        return found
    l1_name, hbm_name = (dst, src) if kind == "async_load" else (src, dst)
    l1_region = dst_region if kind == "async_load" else src_region
    hbm_region = src_region if kind == "async_load" else dst_region
    _, _, offset, l1_dtype = _buffer(kernel, l1_name)
    isz = l1_dtype.itemsize
    span = Region(offset + l1_region.base * isz, l1_region.rows, l1_region.row_len * isz,
                  l1_region.stride * isz)
    table.append(_Copy(kind, text, site.number, [span], _buffer(kernel, hbm_name)[1],
                       [hbm_region], int(raw[6]), int(hbm_name.split()[1])))
    return None


def copy_kinds(kernel: func.FuncOp) -> dict[int, str]:
    """The kind of each async copy by its number (the hooks' numbering)."""
    from pypto.backend.native.tokens import ASYNC

    return {n: op.name.removeprefix("pto.")
            for n, op in enumerate(o for o in kernel.walk() if isinstance(o, ASYNC))}

