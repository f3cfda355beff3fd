"""Block classes from the launch alone: profile cost O(distinct blocks), not O(blocks).

The cost model simulates one block per distinct event stream. Tracing every block to find the
classes costs a traced run of the whole grid; when the kernel lets us prove which blocks behave
alike without running them, one block per class is traced and the launch itself runs untraced.

What a block's event stream (pypto.backend.interpreter.instruments.Trace) depends on: which
instructions run with how many active lanes (the conditions of `scf.if`, the bounds of
`scf.for`) and the L1 offsets of block-uniform tile pointers; the async-copy tokens waited for
follow from which copies ran. Call these the *roots*. The proof (pypto.analysis.uniformity.values_depending_on):

1. no root and no memory address depends on loaded data (a data-dependent branch, trip count,
   L1 offset or gather makes blocks differ in ways only running them shows: every block is
   then traced, as before);
2. the roots that depend on the block id are evaluated here, for every block at once, over
   the block's lanes (NumPy, (blocks x lanes) arrays) from the ids and the integer arguments of
   the launch; blocks whose root values are all equal have equal event streams (the other roots
   are the same in every block).

A root that cannot be evaluated this way (a float, a loop counter, a value carried through a
loop or a region) makes the plan give up: every block is traced. The plan also gives up for
kernels that print (the traced side run would print again), run warp by warp, or have fewer
than half as many classes as blocks to gain nothing from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, IndexType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from pypto.analysis.cache import cached
from pypto.analysis.lane_values import _binary, _compare, _wrap
from pypto.analysis.uniformity import values_depending_on, walk
from pypto.backend.cost_model.facts import tensor_of
from pypto.dialects import pto
from pypto.dialects.traits import (
    AddressType,
    declares_buffer,
    forwards_yield,
    is_block_collective,
    launch_id,
    memory_accesses,
    offset_base,
    writes_output,
)

_STRUCTURE = (scf.IfOp, scf.ForOp, scf.YieldOp, func.FuncOp, func.ReturnOp)
"""Foreign region ops the plan covers (besides pto's structure: `ForwardsYield`)."""
_CASTS = (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.IndexCastOp)
_WRAPPING = frozenset({"arith.trunci", "arith.index_cast"})
"""Ops whose result may leave the range of its type (binary ops compute in their own type)."""
_ALIGNMENT = 4096
"""Bytes modulo which an access pattern's start counts: any power-of-two memory geometry up to
4 KiB (sectors, L1 banks x bank width) sees the same pattern in blocks whose starts agree. The
cost model passes its target's own period for global addresses (`global_alignment`: the
sector size, or L1 banks x bank width when larger; what the access statistics of access.py
read from a global address repeats with it), so that blocks one sector period apart share a
class; L1 addresses keep this one (the trace records block-uniform L1 offsets as they are)."""
_CHUNK_LANES = 1 << 22
"""Lanes evaluated at once: (blocks x lanes) int64 arrays stay below 32 MiB per root."""


class _Unknown(Exception):
    """A root this evaluator cannot compute from the ids and arguments."""


def roots_of(kernel: func.FuncOp) -> tuple[list[SSAValue], list[SSAValue]] | None:
    """(roots, addresses) of `kernel` (see the module docstring), or None when it has a
    construct the plan does not cover. The roots include the addresses of lane accesses: what
    a trace may record of them (sectors touched, banks, lanes on one address) depends on their
    pattern over the lanes and their alignment, which `_class_labels` keys on."""
    roots: list[SSAValue] = []
    addresses: list[SSAValue] = []
    for op in walk(kernel.body.block.ops):
        if op.regions and not (isinstance(op, _STRUCTURE) or forwards_yield(op)):
            return None  # scf.while and anything new: not covered
        if writes_output(op):
            return None
        if isinstance(op, scf.IfOp):
            roots.append(op.cond)
        elif isinstance(op, scf.ForOp):
            roots.extend((op.lb, op.ub, op.step))
        elif offset_base(op) is not None and isinstance(t := op.results[0].type, AddressType) \
                and t.space == "local":
            roots.append(op.operands[1])
        for access in memory_accesses(op):
            address = op.operands[access.operand]
            addresses.append(address)
            if not is_block_collective(op):
                roots.append(address)
    return roots, addresses


def tensors_to_copy(kernel: func.FuncOp) -> frozenset[int] | None:
    """Parameters whose tensors a second execution of a block would see changed: written and
    also read (in place), or updated by atomics. The traced side run of the representatives
    gets copies of those; others it may write again with the values the launch writes. None:
    a write whose tensor cannot be told (copy every tensor)."""
    return cached(kernel, "block_classes.tensors_to_copy", lambda: _tensors_to_copy(kernel))


def _tensors_to_copy(kernel: func.FuncOp) -> frozenset[int] | None:
    read: set[int] = set()
    written: set[int] = set()
    for op in walk(kernel.body.block.ops):
        for access in memory_accesses(op):
            if access.space != "global":
                continue
            tensor = tensor_of(op.operands[access.operand])
            if tensor is None:
                if access.kind == "write":
                    return None
                continue
            (written if access.kind == "write" else read).add(tensor)
            if {a.kind for a in memory_accesses(op) if a.operand == access.operand} == \
                    {"read", "write"}:  # an atomic update: reads and writes in place
                read.add(tensor)
                written.add(tensor)
    return frozenset(read & written)


def plan_block_classes(executable: Any, grid: tuple[int, int, int],
                       block: tuple[int, int, int], args: Sequence[Any],
                       global_alignment: int = _ALIGNMENT
                       ) -> list[tuple[int, list[int]]] | None:
    """[(representative block, member blocks)] in order of first block, or None when the
    classes cannot be proven (trace every block instead). `global_alignment`: bytes modulo
    which the start of a global access pattern counts (see `_ALIGNMENT`)."""
    found = _planned(executable, grid, block, args, global_alignment)
    return None if found is None else found[0]


def lane_shifts(executable: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                args: Sequence[Any], global_alignment: int = _ALIGNMENT
                ) -> dict[SSAValue, np.ndarray]:
    """Per block-dependent global lane address of the plan, the element offset lane 0 of
    each block points at (footprint.py shifts the traced representative's interval by it);
    an address not listed points alike in every block. {} without a plan."""
    found = _planned(executable, grid, block, args, global_alignment)
    return {} if found is None else found[1]


def _planned(executable: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
             args: Sequence[Any], global_alignment: int
             ) -> tuple[list[tuple[int, list[int]]], dict[SSAValue, np.ndarray]] | None:
    n_blocks = grid[0] * grid[1] * grid[2]
    if n_blocks < 2 or executable.schedule is not None:
        return None
    kernel = executable.func
    ints = tuple(int(a) if isinstance(a, bool | int | np.integer) else None for a in args)
    return cached(kernel, ("block_classes.plan", grid, block, ints, global_alignment),
                  lambda: _plan(kernel, grid, block, args, global_alignment))


def _proof(kernel: func.FuncOp) -> list[SSAValue] | None:
    """The roots that differ between blocks (to evaluate per block), or None when the kernel
    is not covered or its control flow or addresses depend on loaded data."""
    found = roots_of(kernel)
    if found is None:
        return None
    roots, addresses = found
    data = values_depending_on(kernel, "data")
    if any(v in data for v in roots) or any(v in data for v in addresses):
        return None
    by_block = values_depending_on(kernel, "block")
    return list(dict.fromkeys(v for v in roots if v in by_block))


def _plan(kernel: func.FuncOp, grid: tuple[int, int, int], block: tuple[int, int, int],
          args: Sequence[Any], global_alignment: int = _ALIGNMENT
          ) -> tuple[list[tuple[int, list[int]]], dict[SSAValue, np.ndarray]] | None:
    n_blocks = grid[0] * grid[1] * grid[2]
    varying = cached(kernel, "block_classes.proof", lambda: _proof(kernel))
    if varying is None:
        return None
    if not varying:
        return [(0, list(range(n_blocks)))], {}
    shifts: dict[SSAValue, np.ndarray] = {}
    try:
        labels = _class_labels(kernel, varying, grid, block, args, global_alignment, shifts)
    except _Unknown:
        return None
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    if len(first) * 2 > n_blocks:
        return None  # nothing to gain over tracing every block
    order = np.argsort(first)
    members = [np.flatnonzero(inverse == k).tolist() for k in order]
    return [(int(first[k]), blocks) for k, blocks in zip(order, members)], shifts


def _class_labels(kernel: func.FuncOp, roots: list[SSAValue], grid: tuple[int, int, int],
                  block: tuple[int, int, int], args: Sequence[Any],
                  global_alignment: int = _ALIGNMENT,
                  shifts: dict[SSAValue, np.ndarray] | None = None) -> np.ndarray:
    """A label per block: equal labels iff every root has equal values over the lanes.
    `shifts`, when given, gets per global address root the element offset of each block's
    lane 0 (`lane_shifts`)."""
    n_blocks = grid[0] * grid[1] * grid[2]
    lanes = block[0] * block[1] * block[2]
    per_chunk = max(1, _CHUNK_LANES // lanes)
    keys: dict[bytes, int] = {}
    labels = np.empty(n_blocks, dtype=np.int64)
    addresses = [r for r in roots if isinstance(r.type, pto.PtrType)
                 and r.type.space == "global"] if shifts is not None else []
    for r in addresses:
        shifts[r] = np.empty(n_blocks, dtype=np.int64)  # type: ignore[index]
    for first in range(0, n_blocks, per_chunk):
        ids = np.arange(first, min(n_blocks, first + per_chunk), dtype=np.int64)
        ev = _Evaluator(kernel, grid, block, ids, args, global_alignment)
        for r in addresses:
            offset = np.asarray(ev.offset(r))
            lane0 = offset[:, 0] if offset.ndim == 2 else offset.reshape(-1)[:1]
            shifts[r][ids] = np.broadcast_to(lane0, ids.shape)  # type: ignore[index]
        columns = [np.broadcast_to(c, (len(ids), lanes)) for r in roots for c in ev.key(r)]
        rows = columns[0] if len(columns) == 1 else np.concatenate(
            [np.asarray(c, dtype=np.int64) for c in columns], axis=1)
        rows = np.ascontiguousarray(rows)
        # blocks equal to their predecessor (the common run of interior blocks) first, then a
        # dict over the distinct rows' bytes
        same = np.zeros(len(ids), dtype=bool)
        same[1:] = (rows[1:] == rows[:-1]).all(axis=1)
        label = -1
        for j in range(len(ids)):
            if not same[j]:
                label = keys.setdefault(rows[j].tobytes(), len(keys))
            labels[ids[j]] = label
    return labels


class _Evaluator:
    """Integer values of a kernel over (blocks x lanes), from ids, constants and arguments."""

    def __init__(self, kernel: func.FuncOp, grid: tuple[int, int, int],
                 block: tuple[int, int, int], block_ids: np.ndarray, args: Sequence[Any],
                 global_alignment: int = _ALIGNMENT):
        self.kernel = kernel
        self.global_alignment = global_alignment
        self.grid = grid
        self.block = block
        self.args = args
        self.memo: dict[SSAValue, np.ndarray] = {}
        linear_block = block_ids.reshape(-1, 1)
        gx, gy, _ = grid
        self.block_id = (linear_block % gx, (linear_block // gx) % gy, linear_block // (gx * gy))
        lane = np.arange(block[0] * block[1] * block[2], dtype=np.int64).reshape(1, -1)
        bx, by, _ = block
        self.local_id = (lane % bx, (lane // bx) % by, lane // (bx * by))
        self.lane = lane

    def key(self, v: SSAValue) -> list[np.ndarray]:
        """What of root `v` decides a block's events: its values, or for an address the
        element offsets relative to lane 0 and lane 0's byte alignment (modulo
        `_ALIGNMENT`, or `global_alignment` for a global address), so that blocks reading
        shifted copies of one pattern share a class."""
        if not isinstance(v.type, pto.PtrType | pto.L1BufferType):
            return [self.value(v)]
        offset = self.offset(v)
        if offset.ndim < 2 or offset.shape[1] == 1:
            first = offset
        else:
            first = offset[:, :1]
        elem = _elem_bytes(v)
        glob = isinstance(v.type, pto.PtrType) and v.type.space == "global"
        return [offset - first, (first * elem) % (self.global_alignment if glob else _ALIGNMENT)]

    def offset(self, ptr: SSAValue) -> np.ndarray:
        """Elements from the base (a parameter or an L1 buffer) to `ptr`, per block and lane."""
        total: np.ndarray = np.asarray(0, dtype=np.int64)
        for _ in range(64):
            owner = ptr.owner
            base = offset_base(owner) if isinstance(owner, Operation) else None
            if base is not None:
                total = total + self.value(owner.operands[1])
                ptr = base
                continue
            if (isinstance(owner, Operation) and declares_buffer(owner)) or (
                    isinstance(ptr, BlockArgument) and ptr.block.parent_op() is self.kernel):
                return total
            break
        raise _Unknown(ptr)

    def value(self, v: SSAValue) -> np.ndarray:
        found = self.memo.get(v)
        if found is None:
            found = self.memo[v] = self._compute(v)
        return found

    def _compute(self, v: SSAValue) -> np.ndarray:
        t = v.type
        width = t.width.data if isinstance(t, IntegerType) else 64 if isinstance(t, IndexType) \
            else None
        if width is None:
            raise _Unknown(v)
        if isinstance(v, BlockArgument):
            if v.block.parent_op() is self.kernel:
                arg = self.args[v.index]
                if isinstance(arg, bool | int | np.integer):
                    return _wrap(np.asarray(int(arg), dtype=np.int64), width)
            raise _Unknown(v)  # a loop counter or carried value
        assert isinstance(v, OpResult)
        out = np.asarray(self._op(v.op, width))
        if width == 1:
            return out.astype(np.bool_)  # conditions: 1 byte a lane in the class keys
        return _wrap(out, width) if v.op.name in _WRAPPING else out

    def _id(self, ident: str, d: int, warp: int) -> np.ndarray:
        """Launch id `ident` along dimension `d`, per block and lane."""
        if ident == "local_id":
            return self.local_id[d]
        if ident == "block_id":
            return self.block_id[d]
        if ident == "global_id":
            return self.block_id[d] * self.block[d] + self.local_id[d]
        if ident == "block_dim":
            return np.asarray(self.block[d], dtype=np.int64)
        if ident == "grid_dim":
            return np.asarray(self.grid[d], dtype=np.int64)
        return self.lane // warp if ident == "warp_id" else self.lane % warp  # lane_id

    def _op(self, op: Operation, width: int) -> np.ndarray:
        warp = pto.WARP_SIZE
        ident = launch_id(op)
        if ident is not None:
            return self._id(ident, getattr(op, "dim_index", 0), warp)
        match op:
            case arith.ConstantOp() if isinstance(op.value, IntegerAttr):
                return np.asarray(int(op.value.value.data), dtype=np.int64)
            case arith.CmpiOp():
                a, b = (self.value(o) for o in op.operands)
                in_width = _width_of(op.operands[0])
                out = _compare(op.predicate.value.data, a, b, in_width)
                if out is None:
                    raise _Unknown(op)
                return out
            case arith.SelectOp():
                c, a, b = (self.value(o) for o in op.operands)
                return np.where(c != 0, a, b)
            case arith.ExtUIOp():
                a = self.value(op.operands[0])
                in_width = _width_of(op.operands[0])
                return a & ((1 << in_width) - 1) if in_width < 64 else a
        if isinstance(op, arith.ExtSIOp) and _width_of(op.operands[0]) == 1:
            return np.where(self.value(op.operands[0]), -1, 0)  # i1 true is -1 signed
        if isinstance(op, _CASTS):
            return self.value(op.operands[0])
        if len(op.operands) == 2 and len(op.results) == 1:
            a, b = (self.value(o) for o in op.operands)
            out = _binary(op, a, b, _width_of(op.operands[0]))
            if out is not None:
                return out
        raise _Unknown(op)


def _elem_bytes(ptr: SSAValue) -> int:
    from pypto import dtypes

    try:
        return int(dtypes.np_dtype_of(pto.element_type_of(ptr.type)).itemsize)
    except Exception:  # noqa: BLE001 - an opaque element type
        return 4


def _width_of(v: SSAValue) -> int:
    t = v.type
    return t.width.data if isinstance(t, IntegerType) else 64
