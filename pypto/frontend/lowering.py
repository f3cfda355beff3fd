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
import contextlib
import math as _math_module
import copy
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    CallSiteLoc,
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

from pypto import dtypes, exact
from pypto.dialects import pto
from pypto.errors import CompileError
from pypto.frontend.blame import blame, describe_type, is_pointer, scalar_used_as_pointer
from pypto.frontend.builtins import BUILTINS, ELEMENTWISE, TILE_VECTOR, static_range
from pypto.frontend.hints import call_replacement, expression_replacement
from pypto.frontend.calls import CallLowering
from pypto.frontend.common import (
    _describe_value,
    _is_bool,
    _is_float,
    _is_int,
    _type_name,
)
from pypto.frontend.early_return import (
    drop_trailing_returns,
    lift_loop_returns,
    rewrite_returns,
)
from pypto.frontend.collectives import MAX_BLOCK_LANES, CollectiveLowering
from pypto.frontend.helpers import HelperLowering, helper_function
from pypto.frontend.kernel import Kernel, KernelSource
from pypto.frontend.simt_loops import convert_divergent_for_loops
from pypto.frontend.subscripts import SubscriptLowering
from pypto.frontend.structured import PipelineHandle, StructuredLowering, _Undefined
from pypto.frontend.operators import (
    _BOOL_BINARY,
    _CMPF,
    _CMPI,
    _CMPI_BOOL,
    _FLOAT_BINARY,
    _INT_BINARY,
    _OP_SYMBOL,
    _PY_BINARY,
    _PY_COMPARE,
    _PY_UNARY,
)

Value = SSAValue | int | float | bool


_FLOAT_RANK = {16: 1, 32: 2, 64: 3}


class KernelLowering(SubscriptLowering, StructuredLowering, CallLowering, HelperLowering,
                     CollectiveLowering):
    """Lowers one specialisation of a kernel (fixed argument types) to a `builtin.module`."""

    def __init__(self, kernel: Kernel, arg_types: Sequence[Attribute],
                 constexprs: dict[str, Any] | None = None,
                 block: Sequence[int] | None = None):
        self.kernel = kernel
        self.block_dims = tuple(block) if block is not None else None
        self.src: KernelSource = kernel.source
        self.arg_types = list(arg_types)
        self.constexprs = dict(constexprs or {})
        self.block: Block | None = None
        self.env: dict[str, Any] = {}
        self.node: ast.AST | None = None
        self.statement: ast.AST | None = None  # the statement being lowered (for errors)
        self.region_depth = 0  # > 0 while lowering the body of an if / loop / stage
        self.loop_depth = 0
        self.globals = kernel.outer_values()
        self.folded: dict[str, Any] = {}  # module / closure constants folded in, by name
        self.function_block: Block | None = None
        self.launch_args: Sequence[Any] | None = None  # to blame arguments in type errors
        self.arg_shapes: tuple[tuple[int, ...] | None, ...] = ()  # launch shapes (t[r, c])
        self.value_shapes: dict[SSAValue, tuple[int, ...]] = {}

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

    def type_error(self, message: str, node: ast.AST | None, values: Sequence[Any],
                   hint: str = "", converts: Sequence[Any] | None = None) -> CompileError:
        """A type error about `values`: names the parameters (and launch arguments) their types
        come from, and gives `hint` (a conversion of `converts`, default `values`) only when it
        would not convert a pointer."""
        misuse = scalar_used_as_pointer(values, self.function_block, self.kernel.params,
                                        self.launch_args, self.src.tree)
        if misuse is not None:  # the cause, at the use that needs a pointer
            return self.error(misuse[0], misuse[1])
        pointer = any(isinstance(v, SSAValue) and is_pointer(v.type)
                      for v in (values if converts is None else converts))
        sentences = blame(values, self.function_block, self.kernel.params, self.launch_args)
        text = message
        if sentences:
            text += ": " + "; ".join(sentences)
            if hint and not pointer:
                text += f"; if the arguments are as intended, {hint}"
            else:
                text += f"; check the arguments of the launch of '{self.kernel.name}'"
        elif hint and not pointer:
            text += f"; {hint}"
        elif pointer:
            text += "; a pointer cannot be converted to a number"
        return self.error(text, node)

    def loc(self, node: ast.AST | None = None) -> FileLineColLoc | CallSiteLoc:
        """The source location of `node`; inside an inlined helper, `callsite(<line in the
        helper> at <the call>)` (nested for helpers calling helpers), so that run-time errors
        name the call site too (pypto.diagnostics.call_sites)."""
        node = node or self.node
        line = getattr(node, "lineno", self.src.first_line)
        col = getattr(node, "col_offset", 0) + self.src.col_offset + 1
        here = FileLineColLoc(StringAttr(self.src.filename), IntAttr(line), IntAttr(col))
        caller = getattr(self, "call_loc", None)
        return here if caller is None else CallSiteLoc(here, caller)

    def emit(self, op: Operation) -> Operation:
        assert self.block is not None
        op.location = self.loc()
        self.block.add_op(op)
        return op

    # ---------------------------------------------------------------------------------------
    # entry
    # ---------------------------------------------------------------------------------------

    def lower(self) -> ModuleOp:
        fdef = self.src.rewritten
        if fdef is None:
            # the early-return rewrite, done once per kernel: lowering only reads the tree,
            # so every specialisation (and every constexpr retry) shares the rewritten copy
            fdef = copy.deepcopy(self.src.tree)
            fdef.body = drop_trailing_returns(rewrite_returns(lift_loop_returns(fdef.body))) \
                or fdef.body
            self.src.rewritten = fdef
        self.node = fdef
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise self.error("kernels cannot be async functions")
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("kernel parameters must be plain positional parameters")
        if args.defaults:
            raise self.error("kernel parameters cannot have default values")
        body_block = Block(arg_types=self.arg_types)
        for position, (arg_node, block_arg) in enumerate(zip(args.args, body_block.args)):
            if position < len(self.arg_shapes) and self.arg_shapes[position] is not None:
                self.value_shapes[block_arg] = self.arg_shapes[position]
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
        prologue = self.__dict__.get("prologue")
        if prologue is not None and prologue.first_op is not None:
            # scratch buffers of collectives: declared and initialised at the kernel's entry
            ops = list(prologue.ops)
            for op in ops:
                op.detach()
            body_block.insert_ops_before(ops, body_block.first_op)
        fn = func.FuncOp(self.kernel.name, FunctionType.from_lists(self.arg_types, []),
                         Region(body_block))
        fn.attributes[pto.KERNEL_ATTR] = UnitAttr()
        self.node = fdef
        fn.location = self.loc(fdef)
        module = ModuleOp([fn])
        module.location = self.loc(fdef)
        return module

    def block_lanes(self) -> int:
        """Lanes per block of this specialisation (the target's maximum when not given)."""
        if self.block_dims is None:
            return MAX_BLOCK_LANES
        count = 1
        for d in self.block_dims:
            count *= d
        return count

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
            self.node = self.statement = stmt
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
        if isinstance(stmt.target, ast.Subscript):
            self.augment_subscript(stmt)
            return
        if not isinstance(stmt.target, ast.Name):
            raise self.error("only plain variables can be updated with an augmented assignment",
                             stmt.target)
        current = self.lookup(stmt.target.id, stmt.target)
        rhs = self.expr(stmt.value)
        self.node = stmt
        self.assign(stmt.target, self.binop(stmt.op, current, rhs, stmt))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, SSAValue) and value.name_hint is None and "." not in target.id:
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
            self.store_subscript(target, value)
            return
        raise self.error("only assignments to variables are supported (write through a pointer "
                         "with pto.store(ptr, value))", target)

    def stmt_Return(self, stmt: ast.Return) -> None:
        if getattr(self, "inline_stack", None):
            raise self.error("'return' inside a loop of a helper function is not supported; "
                             "let the loop finish (keep the result in a variable, leave with "
                             "'break') and return after it", stmt)
        if stmt.value is not None:
            raise self.error("kernels cannot return a value; store results through a pointer "
                             "with pto.store()", stmt)
        if self.loop_depth:
            raise self.error("'return' inside a loop is not supported; leave the loop with "
                             "'break' (it may sit under a lane-dependent 'if') and return after "
                             "it", stmt)
        if self.region_depth:
            raise self.error("'return' inside a pipeline stage is not supported", stmt)
        self.emit(func.ReturnOp())

    # ---------------------------------------------------------------------------------------
    # expressions
    # ---------------------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Any:
        saved = self.node
        self.node = node
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise self.error(expression_replacement(node) or
                             f"the expression '{ast.unparse(node)}' "
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
            value = self.globals[name]
            if isinstance(value, bool | int | float | str | tuple | np.generic):
                self.folded[name] = value
            return self.fold_global(value, name, node)
        if hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        raise self.error(f"name '{name}' is not defined", node)

    def fold_global(self, value: Any, name: str, node: ast.AST) -> Any:
        """Module-level and closed-over Python values are compile-time constants."""
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

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node: ast.List) -> Any:
        """A list display is a compile-time sequence, like a tuple (`after=["a", "b"]`)."""
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
            handler = getattr(self, f"call_{handler_name}", None)
            if handler is None and handler_name in TILE_VECTOR:  # by its declaration
                return self.call_tile_vector(node, TILE_VECTOR[handler_name])
            if handler is None:  # an Elementwise op of the dialect: lowered by its declaration
                return self.call_elementwise(node, handler_name, ELEMENTWISE[handler_name])
            return handler(node)
        if callee is static_range:
            return self.static_range_call(node)
        if _is_math_function(callee) or callee in _FOLDABLE_BUILTINS:
            return self.fold_call(callee, node)
        if callee is _PIPELINE_RUN:
            self.call_args(node, [], 0)
            return None  # the article's pl.run(): stages already run in order
        if callee in _PY_BUILTIN_CALLS:
            return getattr(self, _PY_BUILTIN_CALLS[callee])(node)
        replacement = call_replacement(callee, node.func)
        if replacement is not None:
            raise self.error(replacement, node)
        helper = helper_function(callee)
        if helper is not None:
            return self.inline_call(helper, node)
        name = getattr(callee, "__qualname__", None) or repr(callee)
        raise self.error(f"call to '{ast.unparse(node.func)}' ({name}) is not supported in a "
                         f"kernel; only pto instructions and the builtins listed in "
                         f"docs/language.md can be called", node)

    # ---------------------------------------------------------------------------------------
    # compile-time calls (docs/language.md#compile-time-values)
    # ---------------------------------------------------------------------------------------

    def static_range_call(self, node: ast.Call) -> range:
        """`pto.static_range(a, b, s)`: a range of compile-time integers (unrolled by `for`)."""
        if node.keywords or not 1 <= len(node.args) <= 3:
            raise self.error("pto.static_range() takes 1 to 3 positional arguments, as "
                             "range()", node)
        values = [self.expr(a) for a in node.args]
        self.node = node
        for arg, value in zip(node.args, values):
            if isinstance(value, SSAValue):
                raise self.error(f"pto.static_range() is unrolled at compile time: its "
                                 f"arguments must be compile-time integers, but "
                                 f"'{ast.unparse(arg)}' is a run-time value; loop with "
                                 f"range() instead", arg)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.error(f"pto.static_range() takes integers, got "
                                 f"'{ast.unparse(arg)}' = {value!r}", arg)
        if len(values) == 3 and values[2] == 0:
            raise self.error("the step of pto.static_range() is zero", node.args[2])
        return range(*values)

    def fold_call(self, callee: Any, node: ast.Call) -> Any:
        """`math.sqrt(2.0 / math.pi)`, `int(n / 2)`: a call of a pure Python function on
        compile-time values is evaluated now, exactly as Python computes it (the result is
        rounded to the element type where it meets a typed value, as every literal)."""
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise self.error("* and ** arguments are not supported in a kernel", node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        self.node = node
        spelled = ast.unparse(node.func)
        for arg_node, value in [*zip(node.args, args),
                                *((k.value, kwargs[k.arg]) for k in node.keywords)]:
            if isinstance(value, SSAValue):
                name = getattr(callee, "__name__", spelled)
                instead = _RUNTIME_MATH.get(name)
                use = f"; use {instead} for a run-time value" if instead else \
                    " (see docs/language.md for the per-lane functions)"
                raise self.error(f"{spelled}() is evaluated at compile time, but "
                                 f"'{ast.unparse(arg_node)}' is a run-time value{use}",
                                 arg_node)
            if not isinstance(value, bool | int | float | str | tuple):
                raise self.error(f"{spelled}() takes numbers at compile time, got "
                                 f"'{ast.unparse(arg_node)}' = {_describe_value(value)}",
                                 arg_node)
        result = self.fold(lambda: callee(*args, **kwargs), node)
        if callee in _SEQUENCE_BUILTINS:  # enumerate / zip / reversed: a compile-time tuple
            result = self.fold(lambda: tuple(result), node)
        if isinstance(result, bool | int | float | tuple):
            return result
        raise self.error(f"{spelled}() gave {result!r}, which is not a number", node)

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
                                 f"{_type_name(t)}; write an integer literal, or convert with "
                                 f"pto.cast(x, {_type_name(t)})")
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
            # weak typing: the literal takes the float type, rounded once (±inf beyond its range)
            rounded = float(exact.round_literal(value, dtypes.np_dtype_of(t)))
            return self.emit(arith.ConstantOp(FloatAttr(rounded, t), t)).results[0]
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
        raise self.type_error(f"{describe_type(t)} cannot be used as a condition", node, (value,))

    def unify(self, a: Any, b: Any, node: ast.AST, what: str) -> tuple[SSAValue, SSAValue]:
        """Bring two operands to a common type (docs/language.md#types-literals-and-promotion)."""
        for v in (a, b):
            if not isinstance(v, SSAValue | bool | int | float):
                raise self.error(f"{what} is not defined on {v!r}", node)
        if not isinstance(a, SSAValue):
            assert isinstance(b, SSAValue)
            self.check_literal(a, b, node)
            return self.coerce(a, b.type), b
        if not isinstance(b, SSAValue):
            self.check_literal(b, a, node)
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
        raise self.type_error(f"{what} mixes {_tname(ta)} and {_tname(tb)}", node,
                              (a, b), f"convert one side explicitly with pto.cast(x, "
                                      f"{_type_name(ta)})")

    def check_literal(self, literal: Any, typed: SSAValue, node: ast.AST) -> None:
        """A float literal meeting an integer (or pointer) value: an error naming where the
        value's type comes from (a float literal never becomes an integer implicitly)."""
        t = typed.type
        if isinstance(literal, float) and (_is_int(t) or is_pointer(t)):
            what = "meets" if is_pointer(t) else "cannot take the integer type of"
            raise self.type_error(f"the float literal {literal!r} {what} "
                                  f"{_describe_typed(typed)}", node, (typed,),
                                  f"write an integer literal, or convert with pto.cast(x, "
                                  f"{_type_name(t)})")

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
            if _fold_too_big(op, lhs, rhs):
                raise self.error(f"constant expression '{ast.unparse(node)}' is too large to "
                                 f"evaluate at compile time (more than {FOLD_LIMIT_BITS} bits or "
                                 f"elements); kernel values are at most 64 bits", node)
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
            raise self.type_error(f"a pointer can only be offset by an integer, got "
                                  f"{offset!r}", node, (ptr,))
        if isinstance(offset, int):
            offset = self.constant(offset, self.literal_type(offset))
        if not isinstance(offset, SSAValue) or not _is_int(offset.type):
            raise self.type_error(
                f"a pointer can only be offset by an integer, got "
                f"{describe_type(offset.type) if isinstance(offset, SSAValue) else repr(offset)}",
                node, (offset, ptr) if isinstance(offset, SSAValue) else (ptr,))
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


_FOLDABLE_BUILTINS = frozenset({py_builtins.int, py_builtins.float, py_builtins.bool,
                                py_builtins.round, py_builtins.pow, py_builtins.divmod,
                                py_builtins.len, py_builtins.enumerate, py_builtins.zip,
                                py_builtins.reversed})
_SEQUENCE_BUILTINS = frozenset({py_builtins.enumerate, py_builtins.zip, py_builtins.reversed})
"""Python builtins a kernel may call on compile-time values (folded, never lowered)."""

_RUNTIME_MATH = {"sqrt": "pto.sqrt(x)", "exp": "pto.exp(x)", "log": "pto.log(x)",
                 "tanh": "pto.tanh(x)", "fabs": "abs(x)", "floor": "pto.cast(x, pto.int32)",
                 "int": "pto.cast(x, pto.int32)", "float": "pto.cast(x, pto.float32)",
                 "pow": "x ** n", "round": "pto.cast", "trunc": "pto.cast(x, pto.int32)"}
"""What a compile-time function is written as when its argument is a per-lane value."""


def _is_math_function(callee: Any) -> bool:
    """A function of Python's `math` module (pure: folded on compile-time arguments)."""
    name = getattr(callee, "__name__", None)
    return callable(callee) and isinstance(name, str) and \
        getattr(_math_module, name, None) is callee


_PY_BUILTIN_CALLS: dict[Any, str] = {
    py_builtins.min: "py_min",
    py_builtins.max: "py_max",
    py_builtins.abs: "py_abs",
}


def _tname(t: Attribute) -> str:
    """`pto.float32`, or `a pointer to float32` (never an MLIR type a user did not write)."""
    return describe_type(t) if is_pointer(t) else _type_name(t)


def _describe_typed(value: SSAValue) -> str:
    """`the int32 value 'n'`, `a pointer to float32 ('o')`."""
    name = f" '{value.name_hint}'" if value.name_hint else ""
    if is_pointer(value.type):
        return f"{describe_type(value.type)}{name}"
    return f"the {_type_name(value.type)} value{name}" if name else \
        f"a {_type_name(value.type)} value"


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

FOLD_LIMIT_BITS = 1 << 16
"""Compile-time constants are folded in Python's unbounded ints: `10 ** 10 ** 8` would never
return. A fold whose result would exceed this many bits (or sequence elements) is an error."""


def _fold_too_big(op: ast.operator, lhs: Any, rhs: Any) -> bool:
    """Whether folding `lhs op rhs` would build a huge int or sequence (checked before doing it)."""
    if isinstance(op, ast.Pow) and isinstance(lhs, int) and isinstance(rhs, int):
        return rhs > 0 and abs(lhs) > 1 and (abs(lhs).bit_length() - 1 or 1) * rhs > FOLD_LIMIT_BITS
    if isinstance(op, ast.LShift) and isinstance(lhs, int) and isinstance(rhs, int):
        return lhs != 0 and rhs > 0 and lhs.bit_length() + rhs > FOLD_LIMIT_BITS
    if isinstance(op, ast.Mult):
        for seq, count in ((lhs, rhs), (rhs, lhs)):
            if isinstance(seq, str | bytes | tuple | list) and isinstance(count, int):
                return len(seq) * count > FOLD_LIMIT_BITS
    return False


LOWERING_RECURSION_LIMIT = 20_000
"""The lowering walks the Python AST recursively, a few frames per nesting level: with Python's
default limit (1,000) an expression of ~300 terms (`a + a + ... + a`) overflowed it. While
lowering, the limit is raised to this (never lowered); deeper input is a located CompileError."""

_RECURSION_LOCK = threading.Lock()
_RECURSION_USERS = 0
_RECURSION_SAVED = 0


def _after_fork_in_child() -> None:
    """A fork copies only the forking thread: a lock another thread held stays held in the
    child (docs/reliability.md#threads). (A count of lowering threads that are gone only
    keeps the raised recursion limit raised in the child.)"""
    global _RECURSION_LOCK
    _RECURSION_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def _deep_recursion() -> Any:
    """Raise the interpreter's recursion limit while any thread is lowering a kernel."""
    global _RECURSION_USERS, _RECURSION_SAVED
    with _RECURSION_LOCK:
        if _RECURSION_USERS == 0:
            _RECURSION_SAVED = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_RECURSION_SAVED, LOWERING_RECURSION_LIMIT))
        _RECURSION_USERS += 1
    try:
        yield
    finally:
        with _RECURSION_LOCK:
            _RECURSION_USERS -= 1
            if _RECURSION_USERS == 0:
                sys.setrecursionlimit(_RECURSION_SAVED)


def lower_kernel(kernel: Kernel, arg_types: Sequence[Attribute],
                 constexprs: dict[str, Any] | None = None,
                 folded: dict[str, Any] | None = None,
                 block: Sequence[int] | None = None,
                 launch_args: Sequence[Any] | None = None,
                 shapes: Sequence[tuple[int, ...] | None] = ()) -> ModuleOp:
    """Lower one specialisation of `kernel` to a `builtin.module` (verified by the caller).

    Raises `NeedsConstexpr` when a parameter must be specialised on its launch value. `folded`,
    when given, receives the module-level / closed-over values folded in (name -> value), so the
    caller can tell when a cached compilation went stale. `block` is the block shape (the
    scratch of `pto.reduce`). `launch_args`, when given, are the values the types come from:
    type errors they cause name them (pypto.frontend.blame). `shapes`, when given, are the
    launch shapes of the tensor arguments (None for others), for `t[r, c]` subscripts.
    """
    lowering = KernelLowering(kernel, arg_types, constexprs, block)
    lowering.launch_args = launch_args
    lowering.arg_shapes = tuple(shapes)
    with _deep_recursion():
        try:
            module = lowering.lower()
        except RecursionError:
            raise lowering.error("this statement is nested too deeply for pypto's frontend "
                                 "(thousands of levels); split the expression into several "
                                 "statements with intermediate variables",
                                 lowering.statement) from None
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            convert_divergent_for_loops(op)
    if folded is not None:
        folded.update(lowering.folded)
    return module
