"""`pto.reduce(v, op="sum"|"prod"|"max"|"min"|"and"|"or"|"xor", scope="warp"|"block")` and
`pto.reduce_arg(v, "max"|"min", scope)`, lowered to ordinary `pto` ops (docs/language.md#collectives).

A reduction is what an author would write by hand, generated as Python source and lowered by
the same frontend (so the barrier passes, the race detector, the cost model and the debugger see
plain loads, stores and barriers, located at the `pto.reduce` call):

- one L1 scratch buffer per (scope, op, dtype) used by the kernel, one slot per lane (rounded up
  to whole warps, or to a power of two for the block), allocated and filled with the op's
  *identity* at the kernel's entry (`-0.0` for a float sum, so `x + identity == x` bit for bit,
  `0` for an int sum, `1` for prod, `-inf` / `+inf` or the int extremes for max / min, `-1` for
  and, `0` for or / xor);
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

`reduce_arg` runs the same tree on (value, index) pairs, with a second int32 scratch buffer of
indices (`NO_INDEX` in the slots of missing and inactive lanes): each step keeps the pair that
wins under a total order (better value, then lower index; NaN beats numbers), so its result is
`np.argmax` / `np.argmin` of the participating lanes whatever the tree's shape.
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

OPS = ("sum", "prod", "max", "min", "and", "or", "xor")
INT_ONLY_OPS = ("and", "or", "xor")
ARG_OPS = ("max", "min")
SCOPES = ("warp", "block")
MAX_BLOCK_LANES = 1024
NO_INDEX = 2**31 - 1
"""The index slot of a lane that does not take part in `pto.reduce_arg` (larger than every lane
index, so it loses every tie: an inactive or missing lane never wins)."""


def identity(op: str, dtype: np.dtype) -> int | float:
    """The neutral element of `op` in `dtype` (what a missing lane contributes)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return {"sum": 0, "prod": 1, "max": int(info.min), "min": int(info.max),
                "and": -1, "or": 0, "xor": 0}[op]
    return {"sum": -0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[op]


def _combine(op: str, a: str, b: str) -> str:
    return {"sum": f"{a} + {b}", "prod": f"{a} * {b}", "max": f"max({a}, {b})",
            "min": f"min({a}, {b})", "and": f"{a} & {b}", "or": f"{a} | {b}",
            "xor": f"{a} ^ {b}"}[op]


def _wins(op: str, floating: bool, b: str, kb: str, a: str, ka: str) -> str:
    """Whether (value `b`, index `kb`) beats (`a`, `ka`) in `reduce_arg`: a strictly better
    value, or an equal one at a lower index; a NaN beats every number (as `np.argmax` and
    `np.argmin` return the first NaN). A total order, so any tree picks the same winner."""
    better = f"{b} > {a}" if op == "max" else f"{b} < {a}"
    if not floating:
        return f"({better}) or ({b} == {a} and {kb} < {ka})"
    return (f"({better}) or ({b} != {b} and {a} == {a}) or "
            f"(({b} == {a} or ({b} != {b} and {a} != {a})) and {kb} < {ka})")


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


def _tid(warp_size: int, one_d: bool) -> str:
    # the linear local id (a 1-D block's local id: the interpreter's fast paths know it)
    return "_pto.get_local_id()" if one_d else \
        f"_pto.get_warp_id() * {warp_size} + _pto.get_lane_id()"


def block_source(op: str, slots: int, warp_size: int, one_d: bool) -> list[str]:
    lines = [f"_tid = {_tid(warp_size, one_d)}",
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


def warp_arg_source(op: str, floating: bool, warp_size: int) -> list[str]:
    """`reduce_arg` in a warp: values and lane indices side by side, the same tree, each step
    keeping the winner of its pair (`_wins`)."""
    lines = ["_lane = _pto.get_lane_id()",
             "_w = _pto.get_warp_id() * " + str(warp_size),
             "_slot = _buf + (_w + _lane)",
             "_islot = _ibuf + (_w + _lane)",
             "_pto.store(_slot, _v)",
             "_pto.store(_islot, _lane)"]
    lines += [f"_t{j} = _pto.load(_buf + (_w + {j}))" for j in range(warp_size)]
    lines += [f"_k{j} = _pto.load(_ibuf + (_w + {j}))" for j in range(warp_size)]
    s = warp_size // 2
    while s:
        for j in range(s):
            c = _wins(op, floating, f"_t{j + s}", f"_k{j + s}", f"_t{j}", f"_k{j}")
            lines += [f"_c = {c}",
                      f"_t{j} = _pto.select(_c, _t{j + s}, _t{j})",
                      f"_k{j} = _pto.select(_c, _k{j + s}, _k{j})"]
        s //= 2
    lines += ["_pto.store(_slot, _ident)", "_pto.store(_islot, _noindex)", "_r = _t0",
              "_ri = _k0"]
    return lines


def block_arg_source(op: str, floating: bool, slots: int, warp_size: int,
                     one_d: bool) -> list[str]:
    """`reduce_arg` in a block: the halving tree of `block_source` on (value, index) pairs."""
    lines = [f"_tid = {_tid(warp_size, one_d)}",
             "_slot = _buf + _tid",
             "_islot = _ibuf + _tid",
             "_pto.store(_slot, _v)",
             "_pto.store(_islot, _tid)",
             "_pto.barrier_block()"]
    s = slots // 2
    while s:
        c = _wins(op, floating, f"_b{s}", f"_kb{s}", f"_a{s}", f"_ka{s}")
        lines += [f"if _tid < {s}:",
                  f"    _a{s} = _pto.load(_slot)",
                  f"    _b{s} = _pto.load(_slot + {s})",
                  f"    _ka{s} = _pto.load(_islot)",
                  f"    _kb{s} = _pto.load(_islot + {s})",
                  f"    _c{s} = {c}",
                  f"    _pto.store(_slot, _pto.select(_c{s}, _b{s}, _a{s}))",
                  f"    _pto.store(_islot, _pto.select(_c{s}, _kb{s}, _ka{s}))",
                  "_pto.barrier_block()"]
        s //= 2
    lines += ["_r = _pto.load(_buf)", "_ri = _pto.load(_ibuf)", "_pto.barrier_block()"]
    return lines


def _located(lines: list[str], node: ast.AST) -> list[ast.stmt]:
    tree = parse_python("\n".join(lines))
    for sub in ast.walk(tree):
        if hasattr(sub, "lineno"):
            sub.lineno = sub.end_lineno = node.lineno  # type: ignore[attr-defined]
            sub.col_offset = sub.end_col_offset = node.col_offset  # type: ignore[attr-defined]
    return tree.body


class CollectiveLowering:
    """`call_reduce` and `call_reduce_arg`: a mixin of `KernelLowering` (see the module
    docstring)."""

    def call_reduce(self: Any, node: ast.Call) -> SSAValue:
        value, op, scope = self.call_args(node, ["v", "op", "scope"], 1,
                                          {"op": "sum", "scope": "warp"})
        self.node = node
        if op not in OPS:
            raise self.error(f"pto.reduce's op must be one of {', '.join(map(repr, OPS))}, "
                             f"got {op!r}", node)
        value = self.reduce_operand("pto.reduce", value, scope, node)
        if op in INT_ONLY_OPS and not _is_int(value.type):
            raise self.error(f"pto.reduce's op {op!r} is bitwise: it takes an int32 or int64 "
                             f"value, got {_describe_value(value)}; reduce an integer (for "
                             f"example pto.cast(v, pto.int32)) or use 'sum', 'prod', 'max' or "
                             f"'min'", node)
        dt = dtypes.from_mlir(value.type)
        np_dt = dtypes.np_dtype_of(value.type)
        slots, warp, one_d = self.reduce_slots(scope)
        lines = warp_source(op, warp) if scope == "warp" else \
            block_source(op, slots, warp, one_d)
        buf = self.reduce_scratch(scope, op, dt, slots, identity(op, np_dt), node)
        env = {"_pto": kernel_builtins, "_buf": buf, "_v": value, "_ident": identity(op, np_dt),
               "max": py_builtins.max, "min": py_builtins.min}
        (result,) = self.lower_collective(lines, env, ["_r"], node)
        return result

    def call_reduce_arg(self: Any, node: ast.Call) -> tuple[SSAValue, SSAValue]:
        value, op, scope = self.call_args(node, ["v", "op", "scope"], 2, {"scope": "warp"})
        self.node = node
        if op not in ARG_OPS:
            raise self.error(f"pto.reduce_arg's op must be 'max' or 'min', got {op!r}", node)
        value = self.reduce_operand("pto.reduce_arg", value, scope, node)
        dt = dtypes.from_mlir(value.type)
        np_dt = dtypes.np_dtype_of(value.type)
        floating = _is_float(value.type)
        slots, warp, one_d = self.reduce_slots(scope)
        lines = warp_arg_source(op, floating, warp) if scope == "warp" else \
            block_arg_source(op, floating, slots, warp, one_d)
        buf = self.reduce_scratch(scope, f"arg{op}", dt, slots, identity(op, np_dt), node)
        ibuf = self.reduce_scratch(scope, f"arg{op}_index", dtypes.int32, slots, NO_INDEX, node)
        env = {"_pto": kernel_builtins, "_buf": buf, "_ibuf": ibuf, "_v": value,
               "_ident": identity(op, np_dt), "_noindex": NO_INDEX}
        result, index = self.lower_collective(lines, env, ["_r", "_ri"], node)
        return result, index

    def reduce_operand(self: Any, what: str, value: Any, scope: Any, node: ast.Call
                       ) -> SSAValue:
        """The checked value of a reduction (a Python number becomes a constant)."""
        if scope not in SCOPES:
            raise self.error(f"{what}'s scope must be 'warp' or 'block', got {scope!r}", node)
        value = self.materialize(value) if isinstance(value, int | float) and \
            not isinstance(value, bool) else value
        if not isinstance(value, SSAValue) or not (_is_float(value.type) or
                                                   (_is_int(value.type) and
                                                    value.type.width.data in (32, 64))):
            raise self.error(f"{what} reduces a number (float16, bfloat16, float32, int32, "
                             f"int64), got {_describe_value(value)}", node)
        return value

    def reduce_slots(self: Any, scope: str) -> tuple[int, int, bool]:
        """(slots of the scratch buffer, warp size, whether the block is 1-D)."""
        warp = pto.WARP_SIZE
        lanes = self.block_lanes() if hasattr(self, "block_lanes") else MAX_BLOCK_LANES
        if scope == "warp":
            return -(-lanes // warp) * warp, warp, False
        slots = 1
        while slots < lanes:
            slots *= 2
        dims = getattr(self, "block_dims", None)
        return slots, warp, dims is not None and tuple(dims[1:]) == (1, 1)

    def lower_collective(self: Any, lines: list[str], env: dict[str, Any], results: list[str],
                         node: ast.Call) -> list[SSAValue]:
        """Lower the generated source, located at `node`; the values of `results`."""
        saved_env, saved_node, saved_stmt = self.env, self.node, self.statement
        self.env = env
        try:
            self.lower_body(_located(lines, node))
            values = [self.env[name] for name in results]
        finally:
            self.env, self.node, self.statement = saved_env, saved_node, saved_stmt
        for v in values:
            v.name_hint = None
        return values

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
