"""Lowering of structured control flow: `if` (scf.if with merged values), `for` (scf.for with
loop-carried values), SIMT loops (`while`, `for` with a run-time step or a `break`: scf.while
with a per-lane condition; `break` / `continue` through `early_return.rewrite_loop_exits`; a
`for` with lane-dependent bounds is rewritten later by `simt_loops.py`), and
`with pto.pipeline()` / `with pl.stage()` (pto.pipeline / pto.stage regions that yield the
values later code uses).

A mixin of `KernelLowering` (lowering.py): it relies on the lowering's `env`, `block`, `emit`,
`expr`, `lower_body` and typing helpers. Python scoping is kept: a variable assigned in a
branch, loop body or stage is visible afterwards when it is defined on every path.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.ir import Attribute, Block, Region, SSAValue

from pypto.dialects import pto
from pypto.errors import CompileError
from pypto.frontend.builtins import BUILTINS
from pypto.frontend.common import NeedsConstexpr, _describe_value, _is_int, _type_name
from pypto.frontend.early_return import rewrite_loop_exits


_MISSING = object()


@dataclass
class _Undefined:
    """Marks a variable assigned on only some paths (e.g. in one branch of an `if`)."""

    line: int
    kind: str = "if"


def _assigned_names(stmts: Sequence[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _loop_exit(stmts: Sequence[ast.stmt]) -> ast.stmt | None:
    """The first `break` / `continue` of this loop body (not of a loop nested in it)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Break | ast.Continue):
            return stmt
        if isinstance(stmt, ast.For | ast.While | ast.FunctionDef):
            continue
        for field in ("body", "orelse", "handlers", "finalbody"):
            found = _loop_exit(getattr(stmt, field, []) or [])
            if found is not None:
                return found
    return None


def _hidden(kind: str, stmt: ast.stmt) -> str:
    """A synthetic variable of the loop at `stmt` (a name no Python code can spell)."""
    return f"{kind}.{stmt.lineno}.{stmt.col_offset}"


class PipelineHandle:
    """The compile-time object bound by `with pto.pipeline() as pl:`."""

    def __init__(self, op_block: Block):
        self.block = op_block
        self.stages: list[tuple[str, list[str]]] = []
        self.closed = False  # its `with` block has ended: no more stages
        self.depth = 0  # region depth of the pipeline's body: stages sit directly in it


class StructuredLowering:
    """`stmt_If`, `stmt_For`, `stmt_With` and their helpers (see the module docstring)."""

    def stmt_If(self, stmt: ast.If) -> None:
        cond = self.expr(stmt.test)
        self.node = stmt
        if not isinstance(cond, SSAValue):
            # Compile-time condition (module constant, literal): lower one branch only.
            self.lower_body(stmt.body if self.truth(cond, stmt.test) else stmt.orelse)
            return
        cond = self.to_bool(cond, stmt.test)
        before = dict(self.env)
        outer = self.block

        self.region_depth += 1
        then_block = Block()
        self.block = then_block
        self.env = dict(before)
        self.lower_body(stmt.body)
        then_env = self.env

        else_block = Block()
        self.block = else_block
        self.env = dict(before)
        self.lower_body(stmt.orelse)
        else_env = self.env
        self.region_depth -= 1

        self.block = outer
        self.env = before
        merged: list[tuple[str, Any, Any]] = []
        for name in sorted(set(then_env) | set(else_env)):
            tv = then_env.get(name, _Undefined(stmt.lineno))
            ev = else_env.get(name, _Undefined(stmt.lineno))
            if tv is before.get(name) and ev is before.get(name):
                continue
            if isinstance(tv, _Undefined) or isinstance(ev, _Undefined):
                self.env[name] = _Undefined(stmt.lineno)
                continue
            if not isinstance(tv, SSAValue) and not isinstance(ev, SSAValue) and tv == ev:
                self.env[name] = tv
                continue
            if (not isinstance(tv, SSAValue | int | float | bool)
                    or not isinstance(ev, SSAValue | int | float | bool)):
                raise self.error(f"variable '{name}' holds a compile-time object in one branch "
                                 f"and a different value in the other", stmt)
            merged.append((name, tv, ev))

        then_vals, else_vals, types = [], [], []
        for name, tv, ev in merged:
            ty = self._merge_type(name, tv, ev, stmt)
            types.append(ty)
        self.block = then_block
        self.node = stmt.body[-1]
        for (name, tv, _), ty in zip(merged, types):
            then_vals.append(self.coerce(tv, ty))
        self.emit(scf.YieldOp(*then_vals))
        self.block = else_block
        self.node = stmt.orelse[-1] if stmt.orelse else stmt
        for (name, _, ev), ty in zip(merged, types):
            else_vals.append(self.coerce(ev, ty))
        self.emit(scf.YieldOp(*else_vals))
        self.block = outer
        self.node = stmt
        if not types and len(else_block.ops) == 1:
            else_region = Region()  # no else branch and nothing to yield: print as MLIR does
        else:
            else_region = Region(else_block)
        if_op = scf.IfOp(cond, types, Region(then_block), else_region)
        self.emit(if_op)
        for (name, _, _), result in zip(merged, if_op.results):
            result.name_hint = name if "." not in name else None  # not synthetic variables
            self.env[name] = result

    # ---------------------------------------------------------------------------------------
    # loops
    # ---------------------------------------------------------------------------------------

    def stmt_For(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise self.error("'for ... else' is not supported in kernels", stmt)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and self._is_range(it.func)):
            self._lower_static_for(stmt)
            return
        if not isinstance(stmt.target, ast.Name):
            raise self.error("the loop variable must be a plain name", stmt.target)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error("range() takes 1 to 3 positional arguments", it)
        bounds = [self.expr(a) for a in it.args]
        self.node = stmt
        if len(bounds) == 1:
            start, stop, step = 0, bounds[0], 1
        elif len(bounds) == 2:
            (start, stop), step = bounds, 1
        else:
            start, stop, step = bounds
        for b, n in ((start, "start"), (stop, "stop"), (step, "step")):
            if isinstance(b, SSAValue) and not _is_int(b.type) or \
                    not isinstance(b, SSAValue) and (isinstance(b, bool) or
                                                     not isinstance(b, int)):
                raise self.error(f"the {n} of range() must be an integer"
                                 + (f", got {_describe_value(b)}" if n == "step" else ""), it)
        if not isinstance(step, SSAValue) and step == 0:
            raise self.error("the step of range() is zero: the loop would never end; use a "
                             "non-zero step", it.args[2])
        body, has_break = rewrite_loop_exits(stmt.body, _hidden("break", stmt))
        if not isinstance(start, SSAValue) and not isinstance(stop, SSAValue) and \
                not isinstance(step, SSAValue) and len(range(start, stop, step)) == 0:
            return
        if isinstance(step, SSAValue) or has_break:
            self._lower_range_while(stmt, body, start, stop, step, has_break)
            return
        # Uniform bounds stay an scf.for; one whose start or stop differs between lanes is
        # turned into a masked scf.while after lowering (simt_loops.py).
        self._lower_for(stmt, start, stop, step, body)

    def _lower_static_for(self, stmt: ast.For) -> None:
        """`for x in (16, 8, 4)`, `for k in pto.static_range(4)`: the body is lowered once per
        value, with the loop variable bound to that compile-time value (docs/language.md#static-
        loops). Nothing of the loop is left in the IR: every pass sees straight-line code."""
        it = stmt.iter
        values = self.expr(it)
        self.node = stmt
        if isinstance(values, SSAValue) or not isinstance(values, tuple | range):
            raise self.error(f"kernels loop with 'for x in range(...)' (a loop in the IR), or "
                             f"over compile-time values: a tuple 'for x in (16, 8, 4)' or "
                             f"'for k in pto.static_range(a, b, s)' (unrolled); "
                             f"'{ast.unparse(it)}' is neither", it)
        exit_stmt = _loop_exit(stmt.body)
        if exit_stmt is not None:
            word = "break" if isinstance(exit_stmt, ast.Break) else "continue"
            raise self.error(f"'{word}' in a static (unrolled) loop is not supported: the loop "
                             f"is unrolled at compile time; guard the rest of the body with an "
                             f"'if', or loop with range()", exit_stmt)
        from pypto.frontend.builtins import STATIC_LOOP_LIMIT

        if len(values) > STATIC_LOOP_LIMIT:
            raise self.error(f"this static loop would unroll {len(values)} copies of its body "
                             f"(at most {STATIC_LOOP_LIMIT}); loop with range() instead", it)
        self.loop_depth += 1
        try:
            for value in values:
                self.node = stmt
                self.assign(stmt.target, value)
                self.lower_body(stmt.body)
        finally:
            self.loop_depth -= 1

    def _is_range(self, func_node: ast.expr) -> bool:
        try:
            value = self.expr(func_node)
        except CompileError:
            return False
        return value is py_builtins.range

    def _lower_for(self, stmt: ast.For, start: Any, stop: Any, step: int,
                   body_stmts: list[ast.stmt]) -> None:
        # Bounds: a common integer type (i32 unless a bound is i64).
        types = [b.type for b in (start, stop) if isinstance(b, SSAValue)]
        ity: Attribute = IntegerType(64) if any(t.width.data == 64 for t in types) \
            else IntegerType(32)
        if step > 0:
            lb = self.coerce_int(start, ity)
            ub = self.coerce_int(stop, ity)
            st = self.constant(step, ity)
            iv_map = None
        else:
            # for x in range(a, b, -s): k = 0 .. ceil((a - b) / s), x = a - k * s
            a = self.coerce_int(start, ity)
            b = self.coerce_int(stop, ity)
            diff = self.emit(arith.SubiOp(a, b)).results[0]
            span = self.emit(arith.AddiOp(diff, self.constant(-step - 1, ity))).results[0]
            count = self.emit(arith.FloorDivSIOp(span, self.constant(-step, ity))).results[0]
            ub = self.emit(arith.MaxSIOp(count, self.constant(0, ity))).results[0]
            lb = self.constant(0, ity)
            st = self.constant(1, ity)
            iv_map = a
        carried = self._loop_carried(stmt, body_stmts)
        before = dict(self.env)
        outer = self.block
        init_types: dict[str, Attribute] = {}
        for name in carried:
            v = before[name]
            init_types[name] = v.type if isinstance(v, SSAValue) else self.literal_type(v)
        init_types.update(self._weak_carried_types(stmt, carried, init_types, before, ity,
                                                   iv_map, step, body_stmts))
        for _attempt in range(4):
            body, yielded, results_env = self._lower_loop_body(
                stmt, carried, init_types, before, ity, iv_map, step, body_stmts)
            changed = False
            for name, value in zip(carried, yielded):
                if isinstance(value, SSAValue) and value.type != init_types[name] and \
                        not isinstance(before[name], SSAValue):
                    init_types[name] = value.type  # a literal initial value: adopt the type
                    changed = True
            if not changed:
                break
        self.block = outer
        self.env = before
        self.node = stmt
        inits = [self.coerce(before[name], init_types[name]) for name in carried]
        for name, value in zip(carried, yielded):
            if not isinstance(value, SSAValue) or value.type != init_types[name]:
                got = _describe_value(value)
                raise self.error(f"variable '{name}' is {_type_name(init_types[name])} before the "
                                 f"loop but {got} after an iteration; give it one type "
                                 f"(pto.cast) before the loop", stmt)
        for_op = scf.ForOp(lb, ub, st, inits, body)
        self.emit(for_op)
        self.env = dict(before)
        for name, result in zip(carried, for_op.results):
            result.name_hint = name
            self.env[name] = result
        for name, value in results_env.items():
            if name not in carried and name not in before:
                self.env[name] = _Undefined(stmt.lineno, "for")

    def _weak_carried_types(self, stmt: ast.For, carried: list[str],
                            init_types: dict[str, Attribute], before: dict[str, Any],
                            ity: Attribute, iv_map: Any, step: int,
                            body_stmts: list[ast.stmt]) -> dict[str, Attribute]:
        """Types of loop-carried variables initialised with a Python literal, weakly typed.

        `acc = 0.0` before `for ...: acc = acc + h` (h float16) must carry a float16, exactly as
        the same two statements without the loop give float16 (NumPy 2 / JAX weak typing; JAX's
        loops promote weakly typed initial carries the same way). The literal alone says
        nothing, so one iteration is lowered as a throwaway probe in which those variables are
        still the literals; a variable the body turns into a typed value takes that type.
        When the probe fails, the defaults stay (the real lowering reports any error)."""
        weak = frozenset(n for n in carried if not isinstance(before[n], SSAValue))
        if not weak:
            return {}
        try:
            _, probe, _ = self._lower_loop_body(stmt, carried, init_types, before, ity, iv_map,
                                                step, body_stmts, literal_names=weak)
        except (CompileError, NeedsConstexpr):
            return {}
        finally:
            self.env = before
        return {name: value.type for name, value in zip(carried, probe)
                if name in weak and isinstance(value, SSAValue)}

    def _loop_carried(self, stmt: ast.For, body_stmts: list[ast.stmt]) -> list[str]:
        assigned = sorted(_assigned_names(body_stmts) | {stmt.target.id})
        carried = []
        for name in assigned:
            if name == stmt.target.id:
                continue
            value = self.env.get(name)
            if isinstance(value, SSAValue | bool | int | float) and \
                    not isinstance(value, _Undefined):
                carried.append(name)
        return carried

    def _lower_loop_body(self, stmt: ast.For, carried: list[str],
                         init_types: dict[str, Attribute], before: dict[str, Any],
                         ity: Attribute, iv_map: Any, step: int, body_stmts: list[ast.stmt],
                         literal_names: frozenset[str] = frozenset()
                         ) -> tuple[Block, list[Any], dict[str, Any]]:
        """Lower one iteration; carried names in `literal_names` keep their literal value (a
        probe for their weak type, see `_weak_carried_types`), the others are block args."""
        body = Block(arg_types=[ity] + [init_types[n] for n in carried])
        iv = body.args[0]
        iv.name_hint = stmt.target.id
        self.block = body
        self.env = dict(before)
        for name, arg in zip(carried, body.args[1:]):
            arg.name_hint = name
            self.env[name] = before[name] if name in literal_names else arg
        self.node = stmt
        if iv_map is not None:
            scaled = self.emit(arith.MuliOp(iv, self.constant(-step, ity))).results[0]
            iv_value: Any = self.emit(arith.SubiOp(iv_map, scaled)).results[0]
        else:
            iv_value = iv
        self.env[stmt.target.id] = iv_value
        self.loop_depth += 1
        self.region_depth += 1
        try:
            self.lower_body(body_stmts)
        finally:
            self.loop_depth -= 1
            self.region_depth -= 1
        yielded = [self.env.get(name) for name in carried]
        self.node = stmt.body[-1]
        values = []
        for name, value in zip(carried, yielded):
            if isinstance(value, _Undefined) or value is None:
                raise self.error(f"variable '{name}' may be undefined at the end of the loop "
                                 f"body", stmt)
            if not isinstance(value, SSAValue):
                value = self.coerce(value, init_types[name])
            values.append(value)
        if all(isinstance(v, SSAValue) and v.type == init_types[n]
               for v, n in zip(values, carried)):
            self.emit(scf.YieldOp(*values))
        return body, values, self.env

    def coerce_int(self, value: Any, t: Attribute) -> SSAValue:
        if isinstance(value, SSAValue):
            if value.type == t:
                return value
            if _is_int(value.type) and value.type.width.data < t.width.data:
                return self.emit(arith.ExtSIOp(value, t)).results[0]
            raise self.error(f"loop bounds must be integers, got {_type_name(value.type)}")
        return self.constant(value, t)

    def stmt_Break(self, stmt: ast.Break) -> None:
        raise self.error("'break' outside a loop of this kernel body: a loop's own 'break' may "
                         "sit under 'if's in it, not inside a pipeline stage", stmt)

    def stmt_Continue(self, stmt: ast.Continue) -> None:
        raise self.error("'continue' outside a loop of this kernel body: a loop's own "
                         "'continue' may sit under 'if's in it, not inside a pipeline stage", stmt)

    # ---------------------------------------------------------------------------------------
    # SIMT loops: scf.while with a per-lane condition
    # ---------------------------------------------------------------------------------------

    def stmt_While(self, stmt: ast.While) -> None:
        if stmt.orelse:
            raise self.error("'while ... else' is not supported in kernels", stmt)
        body, has_break = rewrite_loop_exits(stmt.body, _hidden("break", stmt))
        flag = _hidden("break", stmt) if has_break else None
        test = stmt.test
        if flag is not None:
            # lanes that broke out do not evaluate the condition again (it may load)
            cond_name = _hidden("cond", stmt)
            guard = ast.copy_location(ast.If(
                test=ast.copy_location(ast.UnaryOp(ast.Not(), ast.copy_location(
                    ast.Name(id=flag, ctx=ast.Load()), test)), test),
                body=[ast.copy_location(ast.Assign(
                    targets=[ast.copy_location(ast.Name(id=cond_name, ctx=ast.Store()), test)],
                    value=test), test)],
                orelse=[ast.copy_location(ast.Assign(
                    targets=[ast.copy_location(ast.Name(id=cond_name, ctx=ast.Store()), test)],
                    value=ast.copy_location(ast.Constant(False), test)), test)]), test)

            def condition() -> Any:
                self.lower_body([guard])
                return self.env[cond_name]
        else:
            def condition() -> Any:
                return self.expr(test)
        # a condition known at compile time: `while False` never runs, `while True` needs a break
        probe_env = dict(self.env)
        if not any(isinstance(n, ast.Name) and n.id in _assigned_names(body)
                   for n in ast.walk(test)):
            try:
                known = self._constant_condition(test)
            finally:
                self.env = probe_env
            if known is False:
                return
            if known is True and not has_break:
                raise self.error("this 'while' condition is always true and the loop has no "
                                 "'break': it would never end", test)
        hidden = {flag: False} if flag is not None else {}
        self._lower_simt_loop(stmt, body, hidden, condition)

    def _constant_condition(self, test: ast.expr) -> bool | None:
        """The truth of a loop condition that is a compile-time value, else None."""
        saved_block = self.block
        scratch = self.block = Block()  # anything emitted while looking is thrown away
        try:
            value = self.expr(test)
        except (CompileError, NeedsConstexpr):
            return None
        finally:
            self.block = saved_block
            scratch.drop_all_references()
        if isinstance(value, bool | int | float):
            return bool(value)
        return None

    def _lower_range_while(self, stmt: ast.For, body: list[ast.stmt], start: Any, stop: Any,
                           step: Any, has_break: bool) -> None:
        """`for x in range(start, stop, step)` as a SIMT loop: a run-time (uniform) step, or a
        `break`. The counter is carried; each lane leaves when its own bound is reached."""
        types = [b.type for b in (start, stop, step) if isinstance(b, SSAValue)]
        ity: Attribute = IntegerType(64) if any(t.width.data == 64 for t in types) \
            else IntegerType(32)
        counter = _hidden("iv", stmt)
        flag = _hidden("break", stmt) if has_break else None
        self.node = stmt
        lo = self.coerce_int(start, ity)
        hi = self.coerce_int(stop, ity)
        upward: Any = None
        if isinstance(step, SSAValue):
            self.node = stmt.iter.args[2] if isinstance(stmt.iter, ast.Call) else stmt
            st: Any = self.emit(pto.LoopStepOp(self.coerce_int(step, ity))).results[0]
            st.name_hint = "step"
            self.node = stmt
            upward = self.emit(arith.CmpiOp(st, self.constant(0, ity), "sgt")).results[0]
        else:
            st = step

        def condition() -> Any:
            i = self.env[counter]
            if upward is not None:  # the sign of a run-time step picks the comparison
                c = self.emit(arith.SelectOp(
                    upward, self.emit(arith.CmpiOp(i, hi, "slt")).results[0],
                    self.emit(arith.CmpiOp(i, hi, "sgt")).results[0])).results[0]
            else:
                c = self.emit(arith.CmpiOp(i, hi, "slt" if st > 0 else "sgt")).results[0]
            if flag is not None:
                going = self.emit(arith.XOrIOp(self.to_bool(self.env[flag], stmt),
                                               self.constant(True, i1))).results[0]
                c = self.emit(arith.AndIOp(c, going)).results[0]
            return c

        def enter() -> None:
            value = self.env[counter]
            if isinstance(value, SSAValue) and value.name_hint is None:
                value.name_hint = stmt.target.id
            self.env[stmt.target.id] = value

        def advance() -> None:
            self.node = stmt
            step_value = st if isinstance(st, SSAValue) else self.constant(st, ity)
            self.env[counter] = self.emit(arith.AddiOp(self.env[counter],
                                                       step_value)).results[0]

        hidden: dict[str, Any] = {counter: lo}
        if flag is not None:
            hidden[flag] = False
        self._lower_simt_loop(stmt, body, hidden, condition, enter, advance,
                              defined_inside={stmt.target.id})

    def _lower_simt_loop(self, stmt: ast.For | ast.While, body: list[ast.stmt],
                         hidden: dict[str, Any], condition: Any, enter: Any = None,
                         advance: Any = None, defined_inside: set[str] = frozenset()) -> None:
        """Lower a loop to `scf.while`: the before region evaluates the per-lane condition,
        `scf.condition` lets the lanes where it fails leave (their carried values become the
        loop's results for them) and the after region runs the body on the others. The loop
        ends when no lane is left. `hidden` are synthetic carried variables (counter, break
        flag) with their initial values."""
        before = dict(self.env)
        before.update(hidden)
        assigned = _assigned_names(body) | set(hidden)
        carried = [n for n in sorted(assigned)
                   if n not in defined_inside and isinstance(before.get(n), SSAValue | bool | int |
                                                            float)
                   and not isinstance(before.get(n), _Undefined)]
        init_types: dict[str, Attribute] = {}
        for name in carried:
            v = before[name]
            init_types[name] = v.type if isinstance(v, SSAValue) else self.literal_type(v)
        outer = self.block
        weak = frozenset(n for n in carried if not isinstance(before[n], SSAValue))
        if weak:  # as _weak_carried_types: a probe iteration with the literals still literal
            try:
                cb, bb, probe, _ = self._lower_while_regions(
                    stmt, body, carried, init_types, before, condition, enter, advance, weak)
                cb.drop_all_references()
                bb.drop_all_references()
                for name, value in zip(carried, probe):
                    if name in weak and isinstance(value, SSAValue):
                        init_types[name] = value.type
            except (CompileError, NeedsConstexpr):
                pass
            finally:
                self.block, self.env = outer, dict(before)
        for _attempt in range(4):
            regions = self._lower_while_regions(stmt, body, carried, init_types, before,
                                                condition, enter, advance)
            before_block, after_block, yielded, body_env = regions
            changed = False
            for name, value in zip(carried, yielded):
                if isinstance(value, SSAValue) and value.type != init_types[name] and \
                        not isinstance(before[name], SSAValue):
                    init_types[name] = value.type
                    changed = True
            if not changed:
                break
            before_block.drop_all_references()
            after_block.drop_all_references()
        self.block = outer
        self.env = dict(before)
        self.node = stmt
        for name, value in zip(carried, yielded):
            if not isinstance(value, SSAValue) or value.type != init_types[name]:
                got = _describe_value(value)
                raise self.error(f"variable '{name}' is {_type_name(init_types[name])} before the "
                                 f"loop but {got} after an iteration; give it one type "
                                 f"(pto.cast) before the loop", stmt)
        inits = [self.coerce(before[name], init_types[name]) for name in carried]
        loop = scf.WhileOp(inits, [init_types[n] for n in carried], Region(before_block),
                           Region(after_block))
        self.emit(loop)
        self.env = {k: v for k, v in before.items() if k not in hidden}
        for name, result in zip(carried, loop.results):
            if name in hidden:
                continue
            result.name_hint = name
            self.env[name] = result
        for name in body_env:
            if name not in carried and name not in self.env and name not in hidden:
                self.env[name] = _Undefined(stmt.lineno, "for")
        for name in defined_inside:
            self.env[name] = _Undefined(stmt.lineno, "for")

    def _lower_while_regions(self, stmt: ast.stmt, body: list[ast.stmt], carried: list[str],
                             init_types: dict[str, Attribute], before: dict[str, Any],
                             condition: Any, enter: Any, advance: Any,
                             literal_names: frozenset[str] = frozenset()
                             ) -> tuple[Block, Block, list[Any], dict[str, Any]]:
        arg_types = [init_types[n] for n in carried]
        cond_block = Block(arg_types=arg_types)
        self.block = cond_block
        self.env = dict(before)
        for name, arg in zip(carried, cond_block.args):
            arg.name_hint = None if "." in name else name
            self.env[name] = before[name] if name in literal_names else arg
        self.node = stmt
        self.loop_depth += 1
        self.region_depth += 1
        try:
            cond = condition()
            self.node = getattr(stmt, "test", stmt)
            if not isinstance(cond, SSAValue):
                cond = self.constant(bool(self.truth(cond, self.node)), i1)
            cond = self.to_bool(cond, self.node)
            self.emit(scf.ConditionOp(cond, *cond_block.args))
            body_block = Block(arg_types=arg_types)
            self.block = body_block
            self.env = dict(before)
            for name, arg in zip(carried, body_block.args):
                arg.name_hint = None if "." in name else name
                self.env[name] = before[name] if name in literal_names else arg
            self.node = stmt
            if enter is not None:
                enter()
            self.lower_body(body)
            if advance is not None:
                advance()
        finally:
            self.loop_depth -= 1
            self.region_depth -= 1
        yielded = [self.env.get(name) for name in carried]
        self.node = body[-1] if body else stmt
        values = []
        for name, value in zip(carried, yielded):
            if isinstance(value, _Undefined) or value is None:
                raise self.error(f"variable '{name}' may be undefined at the end of the loop "
                                 f"body", stmt)
            if not isinstance(value, SSAValue):
                value = self.coerce(value, init_types[name])
            values.append(value)
        if all(isinstance(v, SSAValue) and v.type == init_types[n]
               for v, n in zip(values, carried)):
            self.emit(scf.YieldOp(*values))
        return cond_block, body_block, values, self.env

    # ---------------------------------------------------------------------------------------
    # with: pipelines and stages
    # ---------------------------------------------------------------------------------------

    def stmt_With(self, stmt: ast.With) -> None:
        if len(stmt.items) != 1:
            raise self.error("use one context manager per 'with' in kernels", stmt)
        item = stmt.items[0]
        call = item.context_expr
        if not isinstance(call, ast.Call):
            raise self.error("only 'with pto.pipeline() as pl:' and 'with pl.stage(...):' are "
                             "supported", stmt)
        if isinstance(call.func, ast.Attribute):
            base = self.expr(call.func.value) if not isinstance(call.func.value, ast.Call) \
                else None
            if isinstance(base, PipelineHandle) and call.func.attr == "stage":
                if item.optional_vars is not None:
                    raise self.error("'with pl.stage(...)' binds nothing; drop 'as'", stmt)
                self._lower_stage(stmt, call, base)
                return
        callee = self.expr(call.func)
        self.node = stmt
        if BUILTINS.get(callee) == "pipeline":
            self.call_args(call, [], 0)
            self._lower_pipeline(stmt, item.optional_vars)
            return
        raise self.error("only 'with pto.pipeline() as pl:' and 'with pl.stage(...):' are "
                         "supported", stmt)

    def _region_env(self, stmts: list[ast.stmt]) -> tuple[Block, dict[str, Any], dict[str, Any]]:
        before = dict(self.env)
        outer = self.block
        block = Block()
        self.block = block
        self.region_depth += 1
        try:
            self.lower_body(stmts)
        finally:
            self.region_depth -= 1
        after = self.env
        self.block = outer
        self.env = before
        return block, before, after

    def _changed(self, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
        return [n for n, v in after.items()
                if isinstance(v, SSAValue) and before.get(n) is not v]

    def _lower_pipeline(self, stmt: ast.With, target: ast.expr | None) -> None:
        if target is not None and not isinstance(target, ast.Name):
            raise self.error("write 'with pto.pipeline() as pl:'", stmt)
        block_placeholder = Block()
        handle = PipelineHandle(block_placeholder)
        handle.depth = self.region_depth + 1
        saved_name = target.id if target is not None else None
        if saved_name:
            self.env[saved_name] = handle
        block, before, after = self._region_env(stmt.body)
        names = self._changed(before, after)
        self.node = stmt
        outer = self.block
        self.block = block
        self.emit(pto.YieldOp(*[after[n] for n in names]))
        self.block = outer
        problem = pto.check_stage_graph(handle.stages)
        if problem:
            raise self.error(problem, stmt)
        op = pto.PipelineOp([after[n].type for n in names], Region(block))
        self.emit(op)
        for n, r in zip(names, op.results):
            r.name_hint = n
            self.env[n] = r
        self._keep_constants(before, after, names)
        if saved_name:
            self.env[saved_name] = handle
        handle.closed = True

    def _lower_stage(self, stmt: ast.With, call: ast.Call, handle: PipelineHandle) -> None:
        if handle.closed:
            raise self.error("'with pl.stage(...)' must be inside its 'with pto.pipeline() as "
                             "pl:' block, which has already ended here; indent the stage into "
                             "the pipeline", stmt)
        if self.region_depth != handle.depth:
            raise self.error("'with pl.stage(...)' must be directly inside 'with pto.pipeline() "
                             "as pl:', not inside a branch, a loop or another stage", stmt)
        name, after = self.call_args(call, ["name", "after"], 1, {"after": None})
        self.node = stmt
        if not isinstance(name, str):
            raise self.error("a stage name must be a string literal", call)
        if after is None:
            after_names: list[str] = []
        elif isinstance(after, str):
            after_names = [after]
        elif isinstance(after, tuple | list) and all(isinstance(a, str) for a in after):
            after_names = list(after)
        else:
            raise self.error("after= takes a stage name or a list of stage names", call)
        handle.stages.append((name, after_names))
        problem = pto.check_stage_graph(handle.stages)
        if problem and "later in the pipeline" not in problem and "unknown stage" not in problem:
            raise self.error(problem, stmt)
        block, before, after_env = self._region_env(stmt.body)
        names = self._changed(before, after_env)
        outer = self.block
        self.block = block
        self.emit(pto.YieldOp(*[after_env[n] for n in names]))
        self.block = outer
        self.node = stmt
        op = pto.StageOp(name, after_names, [after_env[n].type for n in names], Region(block))
        self.emit(op)
        for n, r in zip(names, op.results):
            r.name_hint = n
            self.env[n] = r
        self._keep_constants(before, after_env, names)

    def _keep_constants(self, before: dict[str, Any], after: dict[str, Any],
                        yielded: list[str]) -> None:
        """Compile-time constants (weakly typed literals) assigned in a pipeline or stage stay
        visible after it, like the values it yields: stages run in program order."""
        for n, v in after.items():
            if n not in yielded and not isinstance(v, SSAValue) and \
                    before.get(n, _MISSING) is not v:
                self.env[n] = v

    def _merge_type(self, name: str, tv: Any, ev: Any, stmt: ast.AST) -> Attribute:
        if isinstance(tv, SSAValue) and isinstance(ev, SSAValue):
            if tv.type != ev.type:
                raise self.error(f"variable '{name}' is {_type_name(tv.type)} in one branch and "
                                 f"{_type_name(ev.type)} in the other; use pto.cast() so both "
                                 f"branches agree", stmt)
            return tv.type
        if isinstance(tv, SSAValue):
            return tv.type
        if isinstance(ev, SSAValue):
            return ev.type
        return self.literal_type(tv if not isinstance(tv, float) else tv)
