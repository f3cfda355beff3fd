"""The debugger's instruction descriptions: the trace line of an executed instruction (what it
read and wrote, where, on which lanes), as `view.Executed` records that view.py renders.

A mixin of `Session` (session.py), which provides `_focus_lanes`, `_buffer_label` and the op
table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect

from pypto.backend.interpreter.instruments import OpInfo
from pypto.debug.instructions import kind_of
from pypto.debug.view import Access, Executed, Lanes, value_name
from pypto.dialects import pto
from pypto.dialects.traits import atomic_update


class Describer:
    """Mixin of `Session`: describing executed instructions."""

    def _describe(self, info: OpInfo, ctx: Any, mask: Any, value: Any,
                  locals_: dict[str, Any]) -> Executed:
        lanes = Lanes(self._focus_lanes(ctx, mask))
        rec = Executed(info.id, kind_of(info), lanes, info.line, info.location)
        op = info.op
        positions = lanes.ids - ctx.local_base
        lane_access = _lane_access(op) if not info.collective else None
        if lane_access is not None:
            address, kinds = lane_access
            acc = self._access(address, locals_, ctx, positions)
            if acc is not None:
                return self._memory_record(rec, op, kinds, acc, ctx, positions, locals_)
        operands = ", ".join(value_name(v) for v in op.operands)
        result = ""
        if op.results:
            names = [value_name(r) for r in op.results]
            result = " -> " + ", ".join(names)
            summary = "" if op.name == "arith.constant" else _summary(value, positions)
            if summary:
                result += f" = {summary}"
        rec.text = f"{operands}{result}".strip()
        return rec

    def _access(self, ptr: SSAValue, locals_: dict[str, Any], ctx: Any,
                positions: np.ndarray) -> Access | None:
        gen_name = self.table.names.get(ptr)
        buf = locals_.get(f"{gen_name}_b") if gen_name else None
        off = self.table.read(locals_, ptr, ctx)
        if buf is None or off is None:
            return None
        idx = np.broadcast_to(np.asarray(off, dtype=np.int64), (ctx.count,))[positions]
        isz = buf.data.itemsize
        if buf.space == "local":
            return Access("L1", idx + buf.offset // isz, isz)
        return Access(self._buffer_label(buf), idx, isz)

    def _slot(self, op: Any, locals_: dict[str, Any], ctx: Any,
              positions: np.ndarray) -> Access | None:
        slot = getattr(op, "slot", None)
        if slot is None:
            return None
        gen_name = self.table.names.get(slot)
        buf = locals_.get(f"{gen_name}_b") if gen_name else None
        if buf is None:
            return None
        lane_ids = positions + ctx.local_base
        isz = buf.data.itemsize
        return Access("L1", lane_ids + buf.offset // isz, isz)

    def _memory_record(self, rec: Executed, op: Any, kinds: set[str], acc: Access, ctx: Any,
                       positions: np.ndarray, locals_: dict[str, Any]) -> Executed:
        """A lane memory instruction: reads go `address -> value` (or its L1 slot), writes
        `value (or its slot) -> address`, read-modify-writes `address += value`."""
        slot = self._slot(op, locals_, ctx, positions)
        rec.nbytes = acc.itemsize
        values = [v for v in op.operands if not isinstance(v.type, pto.PtrType | pto.L1BufferType)]
        if kinds == {"read"}:
            rec.src = acc
            if slot is not None:
                rec.dst = [slot]
            elif op.results:
                rec.expr = value_name(op.results[0])
        elif kinds == {"write"}:
            if slot is not None and len(values) == 1:
                rec.src = slot  # the value leaves from its staging slot
            elif len(values) == 3:  # a multiply-add with its store fused
                a, b, c = (value_name(v) for v in values)
                rec.expr = f"{a} * {b} + {c}"
            else:
                rec.expr = ", ".join(value_name(v) for v in values)
            rec.dst = ([slot] if slot is not None and len(values) != 1 else []) + [acc]
        else:  # read-modify-write: an atomic (`+= v`, `max= v`, `cas(c, v)`, ...)
            rec.src = acc
            update = atomic_update(op)
            shown = ", ".join(value_name(v) for v in values)
            sign = update.update if update is not None else "+="
            rec.update = f"cas({shown})" if sign == "cas" else f"{sign} {shown}"
            if op.results:
                rec.expr = value_name(op.results[0])
        return rec


def _lane_access(op: Any) -> tuple[SSAValue, set[str]] | None:
    """(address operand, {"read", "write"}) of a lane memory instruction, from the op facts
    (`memory_accesses`); ops that declare none but name their address `ptr` / `dst` (as npu
    lane ops) are read from those names."""
    from pypto.dialects.traits import memory_accesses

    accesses = [a for a in memory_accesses(op)
                if a.operand < len(op.operands) and
                isinstance(op.operands[a.operand].type, pto.PtrType)]
    if accesses:
        return op.operands[accesses[0].operand], {a.kind for a in accesses}
    if not (op.has_trait(MemoryReadEffect) or op.has_trait(MemoryWriteEffect)):
        return None
    for name, kind in (("ptr", "read" if op.results else "write"), ("dst", "write")):
        value = getattr(op, name, None)
        if isinstance(value, SSAValue) and isinstance(value.type, pto.PtrType):
            return value, {kind}
    return None


def _summary(value: Any, positions: np.ndarray) -> str:
    """A short text for an op's result on the active lanes: one value when uniform."""
    if value is None or positions.size == 0:
        return ""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _short(arr[()])
    if arr.ndim != 1 or arr.size <= int(positions.max()):
        return ""
    vals = arr[positions]
    if np.all(vals == vals[0]):
        return _short(vals[0])
    shown = ", ".join(_short(v) for v in vals[:4])
    return f"[{shown}{', ...' if vals.size > 4 else ''}]"


def _short(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    return ""
