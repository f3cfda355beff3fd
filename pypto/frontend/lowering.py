"""Python AST -> `pto` IR.

The frontend walks the kernel's AST once and builds xDSL ops directly (never printing and
re-parsing). Each op gets the Python `file:line:col` it came from as its location.

Values during lowering are either SSA values (per-lane runtime values) or plain Python numbers
(weakly typed literals and folded module constants, materialised when they meet a typed value,
as NumPy 2 / JAX weak typing). Python objects (modules, dtypes, builtins) can only be used where a
compile-time value is expected.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from pypto import dtypes
from pypto.dialects import pto
from pypto.errors import CompileError
from pypto.frontend.builtins import BUILTINS
from pypto.frontend.calls import CallLowering
from pypto.frontend.common import (
    NeedsConstexpr,
    _describe_value,
    _is_bool,
    _is_float,
    _is_int,
    _type_name,
)
from pypto.frontend.early_return import drop_trailing_returns, rewrite_returns
from pypto.frontend.kernel import Kernel, KernelSource

Value = SSAValue | int | float | bool


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


_FLOAT_RANK = {16: 1, 32: 2, 64: 3}


class PipelineHandle:
    """The compile-time object bound by `with pto.pipeline() as pl:`."""

    def __init__(self, op_block: Block):
        self.block = op_block
        self.stages: list[tuple[str, list[str]]] = []


class KernelLowering(CallLowering):
    """Lowers one specialisation of a kernel (fixed argument types) to a `builtin.module`."""

    def __init__(self, kernel: Kernel, arg_types: Sequence[Attribute],
                 constexprs: dict[str, Any] | None = None):
        self.kernel = kernel
        self.src: KernelSource = kernel.source
        self.arg_types = list(arg_types)
        self.constexprs = dict(constexprs or {})
        self.block: Block | None = None
        self.env: dict[str, Any] = {}
        self.node: ast.AST | None = None
        self.region_depth = 0  # > 0 while lowering the body of an if / loop / stage
        self.loop_depth = 0
        self.globals = dict(kernel.fn.__globals__)
        closure = kernel.fn.__closure__ or ()
        for name, cell in zip(kernel.fn.__code__.co_freevars, closure):
            try:
                self.globals[name] = cell.cell_contents
            except ValueError:  # pragma: no cover - empty cell
                pass

    # ---------------------------------------------------------------------------------------
    # errors and locations
    # ---------------------------------------------------------------------------------------

    def error(self, message: str, node: ast.AST | None = None) -> CompileError:
        node = node or self.node
        line = getattr(node, "lineno", self.src.first_line)
        col = getattr(node, "col_offset", 0) + self.src.col_offset
        source_line = self.src.lines[line - 1] if 0 < line <= len(self.src.lines) else None
        return CompileError(message, filename=self.src.filename, line=line, col=col,
                            source_line=source_line)

    def loc(self, node: ast.AST | None = None) -> FileLineColLoc:
        node = node or self.node
        line = getattr(node, "lineno", self.src.first_line)
        col = getattr(node, "col_offset", 0) + self.src.col_offset + 1
        return FileLineColLoc(StringAttr(self.src.filename), IntAttr(line), IntAttr(col))

    def emit(self, op: Operation) -> Operation:
        assert self.block is not None
        op.location = self.loc()
        self.block.add_op(op)
        return op

    # ---------------------------------------------------------------------------------------
    # entry
    # ---------------------------------------------------------------------------------------

    def lower(self) -> ModuleOp:
        fdef = copy.deepcopy(self.src.tree)
        fdef.body = drop_trailing_returns(rewrite_returns(fdef.body)) or fdef.body
        self.node = fdef
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise self.error("kernels cannot be async functions")
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("kernel parameters must be plain positional parameters")
        if args.defaults:
            raise self.error("kernel parameters cannot have default values")
        body_block = Block(arg_types=self.arg_types)
        for arg_node, block_arg in zip(args.args, body_block.args):
            block_arg.name_hint = arg_node.arg
            block_arg.location = self.loc(arg_node)
            if arg_node.arg in self.constexprs:
                self.env[arg_node.arg] = self.constexprs[arg_node.arg]
            else:
                self.env[arg_node.arg] = block_arg
        self.function_block = body_block
        self.block = body_block
        self.lower_body(fdef.body)
        if not self._terminated():
            self.node = fdef.body[-1] if fdef.body else fdef
            self.emit(func.ReturnOp())
        fn = func.FuncOp(self.kernel.name, FunctionType.from_lists(self.arg_types, []),
                         Region(body_block))
        fn.attributes[pto.KERNEL_ATTR] = UnitAttr()
        self.node = fdef
        fn.location = self.loc(fdef)
        module = ModuleOp([fn])
        module.location = self.loc(fdef)
        return module

    def _terminated(self) -> bool:
        assert self.block is not None
        last = self.block.last_op
        return isinstance(last, func.ReturnOp)

    # ---------------------------------------------------------------------------------------
    # statements
    # ---------------------------------------------------------------------------------------

    def lower_body(self, stmts: Sequence[ast.stmt]) -> None:
        for index, stmt in enumerate(stmts):
            if self._terminated():
                raise self.error("unreachable code after 'return'", stmt)
            if (index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue  # docstring
            self.node = stmt
            method = getattr(self, f"stmt_{type(stmt).__name__}", None)
            if method is None:
                raise self.error(f"'{_describe_stmt(stmt)}' is not supported in a pto kernel "
                                 f"(see docs/language.md for the supported Python subset)", stmt)
            method(stmt)

    def stmt_Pass(self, stmt: ast.Pass) -> None:
        pass

    def stmt_Expr(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # a string used as a comment
        self.expr(stmt.value)

    def stmt_Assign(self, stmt: ast.Assign) -> None:
        value = self.expr(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is None:
            raise self.error("a bare annotation declares nothing in a kernel; assign a value", stmt)
        value = self.expr(stmt.value)
        self.assign(stmt.target, value)

    def stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise self.error("only plain variables can be updated with an augmented assignment",
                             stmt.target)
        current = self.lookup(stmt.target.id, stmt.target)
        rhs = self.expr(stmt.value)
        self.node = stmt
        self.assign(stmt.target, self.binop(stmt.op, current, rhs, stmt))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, SSAValue) and value.name_hint is None:
                value.name_hint = target.id  # readable IR and error messages ('A_tile')
            self.env[target.id] = value
            return
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.error("tuple assignment needs a tuple of the same length", target)
            for elt, item in zip(target.elts, value):
                self.assign(elt, item)
            return
        if isinstance(target, ast.Subscript):
            base, index = ast.unparse(target.value), ast.unparse(target.slice)
            raise self.error(f"subscripts are not supported in kernels: write one element per "
                             f"lane with pto.store({base} + {index}, value)", target)
        raise self.error("only assignments to variables are supported (write through a pointer "
                         "with pto.store(ptr, value))", target)

    def stmt_Return(self, stmt: ast.Return) -> None:
        if stmt.value is not None:
            raise self.error("kernels cannot return a value; store results through a pointer "
                             "with pto.store()", stmt)
        if self.loop_depth:
            raise self.error("'return' inside a loop is not supported; let the loop finish "
                             "(use a flag and an 'if') or move the return before the loop", stmt)
        if self.region_depth:
            raise self.error("'return' inside a pipeline stage is not supported", stmt)
        self.emit(func.ReturnOp())

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
            result.name_hint = name
            self.env[name] = result

    # ---------------------------------------------------------------------------------------
    # loops
    # ---------------------------------------------------------------------------------------

    def stmt_For(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise self.error("'for ... else' is not supported in kernels", stmt)
        if not isinstance(stmt.target, ast.Name):
            raise self.error("the loop variable must be a plain name", stmt.target)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and self._is_range(it.func)):
            raise self.error("kernels loop with 'for x in range(...)' only", it)
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
        if isinstance(step, SSAValue):
            step = self.const_int(step, it.args[2], "the step of range()")
        if isinstance(step, bool) or not isinstance(step, int) or step == 0:
            raise self.error("the step of range() must be a non-zero compile-time integer",
                             it)
        for b, n in ((start, "start"), (stop, "stop")):
            if isinstance(b, SSAValue) and not _is_int(b.type) or \
                    not isinstance(b, SSAValue) and (isinstance(b, bool) or
                                                     not isinstance(b, int)):
                raise self.error(f"the {n} of range() must be an integer", it)
        if not isinstance(start, SSAValue) and not isinstance(stop, SSAValue):
            trip = len(range(start, stop, step))
            if trip == 0:
                return
        self._lower_for(stmt, start, stop, step)

    def _is_range(self, func_node: ast.expr) -> bool:
        try:
            value = self.expr(func_node)
        except CompileError:
            return False
        return value is py_builtins.range

    def _lower_for(self, stmt: ast.For, start: Any, stop: Any, step: int) -> None:
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
        carried = self._loop_carried(stmt)
        before = dict(self.env)
        outer = self.block
        init_types: dict[str, Attribute] = {}
        for name in carried:
            v = before[name]
            init_types[name] = v.type if isinstance(v, SSAValue) else self.literal_type(v)
        init_types.update(self._weak_carried_types(stmt, carried, init_types, before, ity,
                                                   iv_map, step))
        for _attempt in range(4):
            body, yielded, results_env = self._lower_loop_body(
                stmt, carried, init_types, before, ity, iv_map, step)
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
                            ity: Attribute, iv_map: Any, step: int) -> dict[str, Attribute]:
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
                                                step, literal_names=weak)
        except (CompileError, NeedsConstexpr):
            return {}
        finally:
            self.env = before
        return {name: value.type for name, value in zip(carried, probe)
                if name in weak and isinstance(value, SSAValue)}

    def _loop_carried(self, stmt: ast.For) -> list[str]:
        assigned = sorted(_assigned_names(stmt.body) | {stmt.target.id})
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
                         ity: Attribute, iv_map: Any, step: int,
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
            self.lower_body(stmt.body)
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
        raise self.error("'break' is not supported in kernels: loops run a uniform number of "
                         "iterations; keep a per-lane flag and guard the rest of the body with "
                         "'if'", stmt)

    def stmt_Continue(self, stmt: ast.Continue) -> None:
        raise self.error("'continue' is not supported in kernels: guard the rest of the loop "
                         "body with 'if' instead", stmt)

    def stmt_While(self, stmt: ast.While) -> None:
        raise self.error("'while' loops are not supported in kernels; use "
                         "'for x in range(...)' with uniform bounds", stmt)

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
        for n, v in after.items():
            if n not in names and n not in self.env:
                if not isinstance(v, SSAValue):
                    self.env[n] = v
        if saved_name:
            self.env[saved_name] = handle

    def _lower_stage(self, stmt: ast.With, call: ast.Call, handle: PipelineHandle) -> None:
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

    # ---------------------------------------------------------------------------------------
    # expressions
    # ---------------------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Any:
        saved = self.node
        self.node = node
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise self.error(f"the expression '{ast.unparse(node)}' "
                             f"({type(node).__name__}) is not supported in a pto kernel", node)
        result = method(node)
        self.node = saved
        return result

    def expr_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, bool | int | float):
            return node.value
        if isinstance(node.value, str):
            return node.value
        raise self.error(f"the constant {node.value!r} is not supported in a kernel", node)

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.env:
            value = self.env[name]
            if isinstance(value, _Undefined):
                if value.kind == "for":
                    raise self.error(f"variable '{name}' is first assigned inside the loop at "
                                     f"line {value.line} and may be undefined after it; assign "
                                     f"it before the loop", node)
                raise self.error(f"variable '{name}' is assigned only on some paths of the 'if' "
                                 f"at line {value.line}; assign it before the 'if' or in every "
                                 f"branch", node)
            return value
        if name in self.globals:
            return self.fold_global(self.globals[name], name, node)
        if hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        raise self.error(f"name '{name}' is not defined", node)

    def fold_global(self, value: Any, name: str, node: ast.AST) -> Any:
        """Module-level and closed-over Python values are compile-time constants."""
        import numpy as np

        if isinstance(value, np.generic) and not isinstance(value, np.bool_ | np.number):
            raise self.error(f"global '{name}' has unsupported type {type(value).__name__}", node)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return float(value)
        if isinstance(value, np.bool_):
            return bool(value)
        return value

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if isinstance(base, PipelineHandle):
            if node.attr == "run":
                return _PIPELINE_RUN
            raise self.error(f"'{ast.unparse(node)}': a pipeline offers 'with pl.stage(...)' and "
                             f"pl.run()", node)
        if isinstance(base, SSAValue):
            if isinstance(base.type, pto.PtrType | pto.L1BufferType):
                elem = dtypes.from_mlir(base.type.element_type)
                if node.attr == "dtype":
                    return elem
                if node.attr == "itemsize":
                    return elem.itemsize
            raise self.error(f"runtime values have no attribute '{node.attr}' (pointers and L1 "
                             f"buffers have .dtype and .itemsize)", node)
        try:
            return self.fold_global(getattr(base, node.attr), node.attr, node)
        except AttributeError:
            raise self.error(f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'",
                             node) from None

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = ast.unparse(node.value)
        index = ast.unparse(node.slice)
        raise self.error(f"subscripts are not supported in kernels: read one element per lane "
                         f"with pto.load({base} + {index}) (and write with "
                         f"pto.store({base} + {index}, value))", node)

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        lhs = self.expr(node.left)
        rhs = self.expr(node.right)
        self.node = node
        return self.binop(node.op, lhs, rhs, node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.expr(node.operand)
        self.node = node
        if not isinstance(operand, SSAValue):
            return self.fold(lambda: _PY_UNARY[type(node.op)](operand), node)
        t = operand.type
        if isinstance(node.op, ast.Not):
            b = self.to_bool(operand, node.operand)
            return self.emit(arith.XOrIOp(b, self.constant(True, i1))).results[0]
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if _is_float(t):
                return self.emit(arith.NegfOp(operand)).results[0]
            if _is_int(t):
                return self.emit(arith.SubiOp(self.constant(0, t), operand)).results[0]
        if isinstance(node.op, ast.Invert) and isinstance(t, IntegerType):
            return self.emit(arith.XOrIOp(operand, self.constant(-1 if _is_int(t) else True,
                                                                 t))).results[0]
        raise self.error(f"operator '{ast.unparse(node)}' is not defined on {_type_name(t)}", node)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.expr(v) for v in node.values]
        self.node = node
        if all(not isinstance(v, SSAValue) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        # Per-lane values: both sides are evaluated (no short circuit), as in vector code.
        bools = [self.to_bool(v, n) for v, n in zip(values, node.values)]
        result = bools[0]
        for b in bools[1:]:
            op = arith.AndIOp(result, b) if isinstance(node.op, ast.And) else arith.OrIOp(result, b)
            result = self.emit(op).results[0]
        return result

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            self.node = node
            cmp = self.compare(op, left, right, node)
            if result is None:
                result = cmp
            elif isinstance(result, SSAValue) or isinstance(cmp, SSAValue):
                result = self.emit(arith.AndIOp(self.to_bool(result, node),
                                                self.to_bool(cmp, node))).results[0]
            else:
                result = result and cmp
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.expr(node.test)
        a = self.expr(node.body)
        b = self.expr(node.orelse)
        self.node = node
        if not isinstance(cond, SSAValue):
            return a if self.truth(cond, node.test) else b
        return self.select(self.to_bool(cond, node.test), a, b, node)

    def expr_Call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func)
        self.node = node
        if isinstance(callee, SSAValue):
            raise self.error(f"'{ast.unparse(node.func)}' is a runtime value, not a function", node)
        try:
            handler_name = BUILTINS.get(callee)
        except TypeError:  # unhashable callee
            handler_name = None
        if handler_name is not None:
            return getattr(self, f"call_{handler_name}")(node)
        if callee is _PIPELINE_RUN:
            self.call_args(node, [], 0)
            return None  # the article's pl.run(): stages already run in order
        if callee in _PY_BUILTIN_CALLS:
            return getattr(self, _PY_BUILTIN_CALLS[callee])(node)
        name = getattr(callee, "__qualname__", None) or repr(callee)
        raise self.error(f"call to '{ast.unparse(node.func)}' ({name}) is not supported in a "
                         f"kernel; only pto instructions and the builtins listed in "
                         f"docs/language.md can be called", node)

    # ---------------------------------------------------------------------------------------
    # typing helpers
    # ---------------------------------------------------------------------------------------

    def fold(self, fn: Callable[[], Any], node: ast.AST) -> Any:
        try:
            return fn()
        except Exception as exc:  # e.g. ZeroDivisionError in a constant expression
            raise self.error(f"cannot evaluate constant expression '{ast.unparse(node)}': "
                             f"{exc}", node) from None

    def truth(self, value: Any, node: ast.AST) -> bool:
        if isinstance(value, bool | int | float):
            return bool(value)
        raise self.error(f"'{ast.unparse(node)}' is not a condition", node)

    def literal_type(self, value: Any) -> Attribute:
        if isinstance(value, bool):
            return i1
        if isinstance(value, int):
            return IntegerType(32) if -(2**31) <= value < 2**31 else IntegerType(64)
        if isinstance(value, float):
            return dtypes.float32.mlir()
        raise self.error(f"{value!r} is not a number")

    def constant(self, value: int | float | bool, t: Attribute) -> SSAValue:
        if isinstance(t, IntegerType):
            width = t.width.data
            if isinstance(value, float):
                raise self.error(f"the float literal {value!r} cannot take the integer type "
                                 f"{_type_name(t)}; cast explicitly with pto.cast(x, pto.float32)")
            ivalue = int(value)
            if width == 1:
                ivalue = -1 if ivalue else 0  # i1 true is printed/stored as -1 in signless form
                attr = IntegerAttr(ivalue, t)
            else:
                lo, hi = -(2 ** (width - 1)), 2 ** (width - 1)
                if not lo <= ivalue < hi:
                    raise self.error(f"the literal {value} does not fit in {_type_name(t)}")
                attr = IntegerAttr(ivalue, t)
            return self.emit(arith.ConstantOp(attr, t)).results[0]
        if _is_float(t):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), t), t)).results[0]
        raise self.error(f"cannot make a constant of type {t}")

    def coerce(self, value: Any, t: Attribute) -> SSAValue:
        """Give a literal the type `t` (weak typing); SSA values must already have type `t`."""
        if isinstance(value, SSAValue):
            if value.type != t:
                raise self.error(f"expected {_type_name(t)}, got {_type_name(value.type)}")
            return value
        if isinstance(value, bool | int | float):
            return self.constant(value, t)
        raise self.error(f"expected a value of type {_type_name(t)}, got {value!r}")

    def materialize(self, value: Any) -> SSAValue:
        if isinstance(value, SSAValue):
            return value
        return self.constant(value, self.literal_type(value))

    def to_bool(self, value: Any, node: ast.AST) -> SSAValue:
        """Python truthiness of a per-lane value, as i1."""
        value = self.materialize(value)
        t = value.type
        if _is_bool(t):
            return value
        if _is_int(t):
            return self.emit(arith.CmpiOp(value, self.constant(0, t), "ne")).results[0]
        if _is_float(t):
            return self.emit(arith.CmpfOp(value, self.constant(0.0, t), "une")).results[0]
        raise self.error(f"a {t} value cannot be used as a condition", node)

    def unify(self, a: Any, b: Any, node: ast.AST, what: str) -> tuple[SSAValue, SSAValue]:
        """Bring two operands to a common type (SPEC §2 promotion rules)."""
        for v in (a, b):
            if not isinstance(v, SSAValue | bool | int | float):
                raise self.error(f"{what} is not defined on {v!r}", node)
        if not isinstance(a, SSAValue):
            assert isinstance(b, SSAValue)
            return self.coerce(a, b.type), b
        if not isinstance(b, SSAValue):
            return a, self.coerce(b, a.type)
        ta, tb = a.type, b.type
        if ta == tb:
            return a, b
        if _is_int(ta) and _is_int(tb):
            wide = ta if ta.width.data > tb.width.data else tb
            a = a if ta == wide else self.emit(arith.ExtSIOp(a, wide)).results[0]
            b = b if tb == wide else self.emit(arith.ExtSIOp(b, wide)).results[0]
            return a, b
        if _is_float(ta) and _is_float(tb):
            rank_a, rank_b = _FLOAT_RANK[ta.bitwidth], _FLOAT_RANK[tb.bitwidth]
            if rank_a == rank_b:  # float16 with bfloat16: both to float32 (as NumPy/ml_dtypes)
                wide: Attribute = dtypes.float32.mlir()
            else:
                wide = ta if rank_a > rank_b else tb
            a = a if ta == wide else self.emit(arith.ExtFOp(a, wide)).results[0]
            b = b if tb == wide else self.emit(arith.ExtFOp(b, wide)).results[0]
            return a, b
        raise self.error(f"{what} mixes {_type_name(ta)} and {_type_name(tb)}; convert one side "
                         f"explicitly with pto.cast(x, {_type_name(ta)})", node)

    def binop(self, op: ast.operator, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if isinstance(lhs, SSAValue) and isinstance(lhs.type, pto.PtrType | pto.L1BufferType):
            return self.ptr_offset(lhs, rhs, op, node)
        if isinstance(rhs, SSAValue) and isinstance(rhs.type, pto.PtrType | pto.L1BufferType):
            if isinstance(op, ast.Add):
                return self.ptr_offset(rhs, lhs, op, node)
            raise self.error("only 'pointer + integer' and 'pointer - integer' are defined", node)
        if not isinstance(lhs, SSAValue) and not isinstance(rhs, SSAValue):
            if type(op) not in _PY_BINARY:
                raise self.error(f"operator '{ast.unparse(node)}' is not supported", node)
            return self.fold(lambda: _PY_BINARY[type(op)](lhs, rhs), node)
        symbol = _OP_SYMBOL.get(type(op), type(op).__name__)
        a, b = self.unify(lhs, rhs, node, f"'{symbol}'")
        t = a.type
        table = _INT_BINARY if _is_int(t) else _FLOAT_BINARY if _is_float(t) else _BOOL_BINARY
        builder = table.get(type(op))
        if builder is None:
            raise self.error(f"operator '{symbol}' is not defined on {_type_name(t)}", node)
        return builder(self, a, b)

    def ptr_offset(self, ptr: SSAValue, offset: Any, op: ast.operator, node: ast.AST) -> SSAValue:
        if not isinstance(op, ast.Add | ast.Sub):
            raise self.error("only 'pointer + integer' and 'pointer - integer' are defined", node)
        if isinstance(offset, bool) or isinstance(offset, float):
            raise self.error("a pointer can only be offset by an integer", node)
        if isinstance(offset, int):
            offset = self.constant(offset, self.literal_type(offset))
        if not isinstance(offset, SSAValue) or not _is_int(offset.type):
            raise self.error(f"a pointer can only be offset by an integer, got "
                             f"{_type_name(offset.type) if isinstance(offset, SSAValue) else offset!r}",
                             node)
        if isinstance(op, ast.Sub):
            offset = self.emit(arith.SubiOp(self.constant(0, offset.type), offset)).results[0]
        return self.emit(pto.AddPtrOp(ptr, offset)).results[0]

    def compare(self, op: ast.cmpop, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if not isinstance(lhs, SSAValue) and not isinstance(rhs, SSAValue):
            return self.fold(lambda: _PY_COMPARE[type(op)](lhs, rhs), node)
        if type(op) not in _CMPI:
            raise self.error(f"comparison '{ast.unparse(node)}' is not supported on runtime "
                             f"values", node)
        a, b = self.unify(lhs, rhs, node, "comparison")
        t = a.type
        if _is_float(t):
            return self.emit(arith.CmpfOp(a, b, _CMPF[type(op)])).results[0]
        if isinstance(t, IntegerType):
            pred = _CMPI[type(op)] if _is_int(t) else _CMPI_BOOL[type(op)]
            return self.emit(arith.CmpiOp(a, b, pred)).results[0]
        raise self.error(f"cannot compare values of type {t}", node)

    def select(self, cond: SSAValue, a: Any, b: Any, node: ast.AST) -> SSAValue:
        if not isinstance(a, SSAValue) and not isinstance(b, SSAValue):
            t = self.literal_type(a) if type(a) is type(b) or not isinstance(b, float) else \
                self.literal_type(b)
            a, b = self.coerce(a, t), self.coerce(b, t)
        else:
            a, b = self.unify(a, b, node, "select")
        return self.emit(arith.SelectOp(cond, a, b)).results[0]


def _int_floordiv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return self.emit(arith.FloorDivSIOp(a, b)).results[0]


def _int_mod(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    """Python's `%` (result has the sign of the divisor): remsi, then fix up the sign."""
    t = a.type
    rem = self.emit(arith.RemSIOp(a, b)).results[0]
    zero = self.constant(0, t)
    nonzero = self.emit(arith.CmpiOp(rem, zero, "ne")).results[0]
    rem_neg = self.emit(arith.CmpiOp(rem, zero, "slt")).results[0]
    div_neg = self.emit(arith.CmpiOp(b, zero, "slt")).results[0]
    signs_differ = self.emit(arith.XOrIOp(rem_neg, div_neg)).results[0]
    fix = self.emit(arith.AndIOp(nonzero, signs_differ)).results[0]
    adjusted = self.emit(arith.AddiOp(rem, b)).results[0]
    return self.emit(arith.SelectOp(fix, adjusted, rem)).results[0]


def _float_divmod(self: KernelLowering, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Python's float `(a // b, a % b)`, as NumPy's `npy_divmod`: exact fmod, then fix-ups.

    float16/bfloat16 are computed in float32 and rounded back, as NumPy does for half.
    """
    from xdsl.dialects import math

    t = a.type
    narrow = t.bitwidth < 32
    if narrow:
        f32 = dtypes.float32.mlir()
        a = self.emit(arith.ExtFOp(a, f32)).results[0]
        b = self.emit(arith.ExtFOp(b, f32)).results[0]
    ft = a.type
    e = lambda op: self.emit(op).results[0]  # noqa: E731
    zero, one, half = (self.constant(v, ft) for v in (0.0, 1.0, 0.5))
    mod = e(pto.FmodOp(a, b))
    div = e(arith.DivfOp(e(arith.SubfOp(a, mod)), b))
    mod_nonzero = e(arith.CmpfOp(mod, zero, "une"))
    signs_differ = e(arith.XOrIOp(e(arith.CmpfOp(b, zero, "olt")),
                                  e(arith.CmpfOp(mod, zero, "olt"))))
    fix = e(arith.AndIOp(mod_nonzero, signs_differ))
    mod = e(arith.SelectOp(fix, e(arith.AddfOp(mod, b)), mod))
    div = e(arith.SelectOp(fix, e(arith.SubfOp(div, one)), div))
    mod = e(arith.SelectOp(mod_nonzero, mod, e(math.CopySignOp(zero, b))))
    floor = e(math.FloorOp(div))
    round_up = e(arith.CmpfOp(e(arith.SubfOp(div, floor)), half, "ogt"))
    floor = e(arith.SelectOp(round_up, e(arith.AddfOp(floor, one)), floor))
    div_nonzero = e(arith.CmpfOp(div, zero, "une"))
    floor = e(arith.SelectOp(div_nonzero, floor,
                             e(math.CopySignOp(zero, e(arith.DivfOp(a, b))))))
    b_zero = e(arith.CmpfOp(b, zero, "oeq"))
    floor = e(arith.SelectOp(b_zero, e(arith.DivfOp(a, b)), floor))  # x // 0.0: inf/nan
    if narrow:
        floor = e(arith.TruncFOp(floor, t))
        mod = e(arith.TruncFOp(mod, t))
    return floor, mod


def _float_floordiv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return _float_divmod(self, a, b)[0]


def _float_mod(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    return _float_divmod(self, a, b)[1]


def _float_pow(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    from xdsl.dialects import math

    return self.emit(math.PowFOp(a, b)).results[0]


def _int_pow(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    from xdsl.dialects import math

    return self.emit(math.IPowIOp(a, b)).results[0]


def _simple(op_cls: type[Operation]) -> Callable[[KernelLowering, SSAValue, SSAValue], SSAValue]:
    return lambda self, a, b: self.emit(op_cls(a, b)).results[0]


def _int_truediv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    raise self.error("'/' on integers is not defined in kernels; use '//' for integer division "
                     "or pto.cast() the operands to a float type")


_INT_BINARY = {
    ast.Add: _simple(arith.AddiOp),
    ast.Sub: _simple(arith.SubiOp),
    ast.Mult: _simple(arith.MuliOp),
    ast.FloorDiv: _int_floordiv,
    ast.Mod: _int_mod,
    ast.Div: _int_truediv,
    ast.Pow: _int_pow,
    ast.BitAnd: _simple(arith.AndIOp),
    ast.BitOr: _simple(arith.OrIOp),
    ast.BitXor: _simple(arith.XOrIOp),
    ast.LShift: _simple(arith.ShLIOp),
    ast.RShift: _simple(arith.ShRSIOp),
}
_FLOAT_BINARY = {
    ast.Add: _simple(arith.AddfOp),
    ast.Sub: _simple(arith.SubfOp),
    ast.Mult: _simple(arith.MulfOp),
    ast.Div: _simple(arith.DivfOp),
    ast.FloorDiv: _float_floordiv,
    ast.Mod: _float_mod,
    ast.Pow: _float_pow,
}
_BOOL_BINARY = {
    ast.BitAnd: _simple(arith.AndIOp),
    ast.BitOr: _simple(arith.OrIOp),
    ast.BitXor: _simple(arith.XOrIOp),
}

_OP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
              ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}

_PY_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b, ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
}
_PY_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Not: lambda a: not a,
    ast.Invert: lambda a: ~a,
}
_PY_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}
_CMPI = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq",
         ast.NotEq: "ne"}
_CMPI_BOOL = {ast.Lt: "ult", ast.LtE: "ule", ast.Gt: "ugt", ast.GtE: "uge", ast.Eq: "eq",
              ast.NotEq: "ne"}
_CMPF = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq",
         ast.NotEq: "une"}

_PY_BUILTIN_CALLS: dict[Any, str] = {
    py_builtins.min: "py_min",
    py_builtins.max: "py_max",
    py_builtins.abs: "py_abs",
}


def _describe_stmt(stmt: ast.stmt) -> str:
    kind = type(stmt).__name__
    names = {"While": "while loop", "For": "for loop", "Try": "try statement",
             "ClassDef": "class definition", "FunctionDef": "nested function",
             "With": "with statement", "Raise": "raise statement", "Delete": "del statement",
             "Global": "global statement", "Nonlocal": "nonlocal statement",
             "Import": "import", "ImportFrom": "import", "Assert": "assert statement",
             "Match": "match statement", "AsyncFor": "async for", "AsyncWith": "async with"}
    return names.get(kind, kind)


_PIPELINE_RUN = object()


def lower_kernel(kernel: Kernel, arg_types: Sequence[Attribute],
                 constexprs: dict[str, Any] | None = None) -> ModuleOp:
    """Lower one specialisation of `kernel` to a `builtin.module` (verified by the caller).

    Raises `NeedsConstexpr` when a parameter must be specialised on its launch value.
    """
    return KernelLowering(kernel, arg_types, constexprs).lower()
