"""`pto.reduce(v, op="sum"|"max"|"min", scope="warp"|"block")`, lowered to ordinary `pto` ops.

A reduction is what an author would write by hand, generated as Python source and lowered by
the same frontend (so the barrier passes, the race detector, the cost model and the debugger see
plain loads, stores and barriers, located at the `pto.reduce` call):

- one L1 scratch buffer per (scope, op, dtype) used by the kernel, one slot per lane (rounded up
  to whole warps, or to a power of two for the block), allocated and filled with the op's
  *identity* at the kernel's entry (`-0.0` for a float sum, so `x + identity == x` bit for bit,
  `0` for an int sum, `-inf` / `+inf` or the int extremes for max / min);
- **warp scope** (legal under lane-dependent control flow): each active lane stores its value in
  its slot, then every active lane reads its warp's 32 slots and combines them with the fixed
  tree below, and puts the identity back in its slot. The lanes of a warp run in lockstep, so
  no barrier is needed (nor allowed: `pto.barrier()` wants all 32 lanes, and some may be
  inactive). Inactive lanes never write their slot, which holds the identity: they do not
  contribute;
- **block scope** (uniform control flow only, like `barrier_block`): each lane stores its value,
  `pto.barrier_block()`, then the classic halving tree in L1: for `s = P/2, ..., 1`, lanes
  `tid < s` do `slot[tid] = slot[tid] op slot[tid + s]`, `pto.barrier_block()`; every lane reads
  slot 0, `pto.barrier_block()` (so a following reduction may overwrite it).

The tree (both scopes): with `P` slots (32 for a warp; the block's lane count rounded up to a
power of two), `x[i] = x[i] op x[i + s]` for `s = P/2, P/4, ..., 1` and `i < s`; the result is
`x[0]`. Slots of missing or inactive lanes hold the identity. Each `op` rounds once in the value's
dtype, so the result is exact and reproducible (tests compute the same tree with NumPy).
"""

from __future__ import annotations

import ast
import builtins as py_builtins
from typing import Any

import numpy as np
from xdsl.ir import Block, SSAValue

from pypto import dtypes
from pypto.dialects import pto
from pypto.frontend import builtins as kernel_builtins
from pypto.frontend.common import _describe_value, _is_float, _is_int
from pypto.frontend.python_ast import parse_python

OPS = ("sum", "max", "min")
SCOPES = ("warp", "block")
MAX_BLOCK_LANES = 1024


def identity(op: str, dtype: np.dtype) -> int | float:
    """The neutral element of `op` in `dtype` (what a missing lane contributes)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return {"sum": 0, "max": int(info.min), "min": int(info.max)}[op]
    return {"sum": -0.0, "max": -np.inf, "min": np.inf}[op]


def _combine(op: str, a: str, b: str) -> str:
    return {"sum": f"{a} + {b}", "max": f"max({a}, {b})", "min": f"min({a}, {b})"}[op]


def warp_source(op: str, warp_size: int) -> list[str]:
    lines = ["_w = _pto.get_warp_id() * " + str(warp_size),
             "_slot = _buf + (_w + _pto.get_lane_id())",
             "_pto.store(_slot, _v)"]
    lines += [f"_t{j} = _pto.load(_buf + (_w + {j}))" for j in range(warp_size)]
    s = warp_size // 2
    while s:
        lines += [f"_t{j} = {_combine(op, f'_t{j}', f'_t{j + s}')}" for j in range(s)]
        s //= 2
    lines += ["_pto.store(_slot, _ident)", "_r = _t0"]
    return lines


def block_source(op: str, slots: int, warp_size: int, one_d: bool) -> list[str]:
    # the linear local id (a 1-D block's local id: the interpreter's fast paths know it)
    tid = "_pto.get_local_id()" if one_d else \
        f"_pto.get_warp_id() * {warp_size} + _pto.get_lane_id()"
    lines = [f"_tid = {tid}",
             "_slot = _buf + _tid",
             "_pto.store(_slot, _v)",
             "_pto.barrier_block()"]
    s = slots // 2
    while s:
        lines += [f"if _tid < {s}:",
                  f"    _pto.store(_slot, {_combine(op, '_pto.load(_slot)', f'_pto.load(_slot + {s})')})",
                  "_pto.barrier_block()"]
        s //= 2
    lines += ["_r = _pto.load(_buf)", "_pto.barrier_block()"]
    return lines


def _located(lines: list[str], node: ast.AST) -> list[ast.stmt]:
    tree = parse_python("\n".join(lines))
    for sub in ast.walk(tree):
        if hasattr(sub, "lineno"):
            sub.lineno = sub.end_lineno = node.lineno  # type: ignore[attr-defined]
            sub.col_offset = sub.end_col_offset = node.col_offset  # type: ignore[attr-defined]
    return tree.body


class CollectiveLowering:
    """`call_reduce`: a mixin of `KernelLowering` (see the module docstring)."""

    def call_reduce(self: Any, node: ast.Call) -> SSAValue:
        value, op, scope = self.call_args(node, ["v", "op", "scope"], 1,
                                          {"op": "sum", "scope": "warp"})
        self.node = node
        if op not in OPS:
            raise self.error(f"pto.reduce's op must be one of {', '.join(map(repr, OPS))}, "
                             f"got {op!r}", node)
        if scope not in SCOPES:
            raise self.error(f"pto.reduce's scope must be 'warp' or 'block', got {scope!r}",
                             node)
        value = self.materialize(value) if isinstance(value, int | float) and \
            not isinstance(value, bool) else value
        if not isinstance(value, SSAValue) or not (_is_float(value.type) or
                                                   (_is_int(value.type) and
                                                    value.type.width.data in (32, 64))):
            raise self.error(f"pto.reduce reduces a number (float16, bfloat16, float32, int32, "
                             f"int64), got {_describe_value(value)}", node)
        dt = dtypes.from_mlir(value.type)
        np_dt = dtypes.np_dtype_of(value.type)
        warp = pto.WARP_SIZE
        lanes = self.block_lanes() if hasattr(self, "block_lanes") else MAX_BLOCK_LANES
        if scope == "warp":
            slots = -(-lanes // warp) * warp
            lines = warp_source(op, warp)
        else:
            slots = 1
            while slots < lanes:
                slots *= 2
            dims = getattr(self, "block_dims", None)
            lines = block_source(op, slots, warp, dims is not None and tuple(dims[1:]) == (1, 1))
        buf = self.reduce_scratch(scope, op, dt, slots, identity(op, np_dt), node)
        env = {"_pto": kernel_builtins, "_buf": buf, "_v": value, "_ident": identity(op, np_dt),
               "max": py_builtins.max, "min": py_builtins.min}
        saved_env, saved_node, saved_stmt = self.env, self.node, self.statement
        self.env = env
        try:
            self.lower_body(_located(lines, node))
            result = self.env["_r"]
        finally:
            self.env, self.node, self.statement = saved_env, saved_node, saved_stmt
        result.name_hint = None
        return result

    def reduce_scratch(self: Any, scope: str, op: str, dt: Any, slots: int, ident: Any,
                       node: ast.AST) -> SSAValue:
        """The L1 buffer of one (scope, op, dtype), allocated and filled with the identity in
        the kernel's prologue (moved to the entry of the kernel when lowering ends)."""
        buffers = self.__dict__.setdefault("reduce_buffers", {})
        key = (scope, op, dt)
        known = buffers.get(key)
        if known is not None:
            return known
        prologue = self.__dict__.setdefault("prologue", Block())
        saved = self.block, self.env, self.node, self.statement
        self.block = prologue
        self.env = {"_pto": kernel_builtins, "_dt": dt, "_ident": ident}
        try:
            self.lower_body(_located([f"_buf = _pto.alloc_local({slots}, dtype=_dt)",
                                      f"_pto.fill(_buf, _ident, {slots})"], node))
            buf = self.env["_buf"]
        finally:
            self.block, self.env, self.node, self.statement = saved
        buf.name_hint = f"reduce_{scope}_{op}"
        buffers[key] = buf
        return buf
