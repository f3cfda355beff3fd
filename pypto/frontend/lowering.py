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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    AnyFloat,
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
from pypto.frontend.kernel import Kernel, KernelSource

Value = SSAValue | int | float | bool


@dataclass
class _Undefined:
    """Marks a variable assigned on only some paths (e.g. in one branch of an `if`)."""

    line: int


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data != 1


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _type_name(t: Attribute) -> str:
    try:
        return "pto." + dtypes.from_mlir(t).name
    except (TypeError, KeyError):
        return str(t)


_FLOAT_RANK = {16: 1, 32: 2, 64: 3}


class KernelLowering:
    """Lowers one specialisation of a kernel (fixed argument types) to a `builtin.module`."""

    def __init__(self, kernel: Kernel, arg_types: Sequence[Attribute]):
        self.kernel = kernel
        self.src: KernelSource = kernel.source
        self.arg_types = list(arg_types)
        self.block: Block | None = None
        self.env: dict[str, Any] = {}
        self.node: ast.AST | None = None
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
        fdef = self.src.tree
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
            self.env[arg_node.arg] = block_arg
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
            self.env[target.id] = value
            return
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.error("tuple assignment needs a tuple of the same length", target)
            for elt, item in zip(target.elts, value):
                self.assign(elt, item)
            return
        raise self.error("only assignments to variables are supported (write through a pointer "
                         "with pto.store(ptr, value))", target)

    def stmt_Return(self, stmt: ast.Return) -> None:
        if stmt.value is not None:
            raise self.error("kernels cannot return a value; store results through a pointer "
                             "with pto.store()", stmt)
        if self.block is not self._function_block():
            raise self.error("an early 'return' inside control flow is not supported yet; "
                             "guard the rest of the kernel with an 'if' instead", stmt)
        self.emit(func.ReturnOp())

    def _function_block(self) -> Block | None:
        block = self.block
        while block is not None and block.parent_op() is not None:
            parent = block.parent_op()
            if isinstance(parent, func.FuncOp):
                return block
            block = parent.parent_block() if parent is not None else None
        return block

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
        if isinstance(base, SSAValue):
            raise self.error(f"runtime values have no attribute '{node.attr}'", node)
        try:
            return self.fold_global(getattr(base, node.attr), node.attr, node)
        except AttributeError:
            raise self.error(f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'",
                             node) from None

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
        if isinstance(lhs, SSAValue) and isinstance(lhs.type, pto.PtrType):
            return self.ptr_offset(lhs, rhs, op, node)
        if isinstance(rhs, SSAValue) and isinstance(rhs.type, pto.PtrType):
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

    # ---------------------------------------------------------------------------------------
    # call helpers
    # ---------------------------------------------------------------------------------------

    def call_args(self, node: ast.Call, names: Sequence[str], required: int,
                  defaults: dict[str, Any] | None = None) -> list[Any]:
        """Bind positional and keyword arguments of a builtin call (evaluated)."""
        fname = ast.unparse(node.func)
        if len(node.args) > len(names):
            raise self.error(f"{fname}() takes at most {len(names)} arguments "
                             f"({', '.join(names)}), got {len(node.args)}", node)
        values: dict[str, Any] = {}
        for name, arg in zip(names, node.args):
            if isinstance(arg, ast.Starred):
                raise self.error("*args are not supported in kernels", arg)
            values[name] = self.expr(arg)
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in names:
                raise self.error(f"{fname}() got an unexpected keyword argument '{kw.arg}'; "
                                 f"it takes ({', '.join(names)})", kw)
            if kw.arg in values:
                raise self.error(f"{fname}() got multiple values for '{kw.arg}'", kw)
            values[kw.arg] = self.expr(kw.value)
        self.node = node
        out = []
        for index, name in enumerate(names):
            if name in values:
                out.append(values[name])
            elif defaults and name in defaults:
                out.append(defaults[name])
            else:
                raise self.error(f"{fname}() missing required argument '{name}' "
                                 f"(takes {', '.join(names[:required])})", node)
        return out

    def expect_ptr(self, value: Any, node: ast.AST, what: str) -> SSAValue:
        if not isinstance(value, SSAValue) or not isinstance(value.type, pto.PtrType):
            raise self.error(f"{what} must be a pointer (a tensor parameter plus an offset), "
                             f"got {_describe_value(value)}", node)
        return value

    def const_int(self, value: Any, node: ast.AST, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{what} must be a compile-time integer, got "
                             f"{_describe_value(value)}", node)
        return value

    # ---------------------------------------------------------------------------------------
    # builtins: ids
    # ---------------------------------------------------------------------------------------

    def _dim_id(self, node: ast.Call, op_cls: type[pto._DimIdOp]) -> SSAValue:
        (dim,) = self.call_args(node, ["dim"], 0, {"dim": 0})
        dim = self.const_int(dim, node, "the dimension")
        if dim not in (0, 1, 2):
            raise self.error(f"dimension must be 0, 1 or 2, got {dim}", node)
        return self.emit(op_cls(dim)).results[0]

    def call_get_global_id(self, node: ast.Call) -> SSAValue:
        return self._dim_id(node, pto.GetGlobalIdOp)

    def call_get_local_id(self, node: ast.Call) -> SSAValue:
        return self._dim_id(node, pto.GetLocalIdOp)

    def call_get_block_id(self, node: ast.Call) -> SSAValue:
        return self._dim_id(node, pto.GetBlockIdOp)

    def call_get_block_dim(self, node: ast.Call) -> SSAValue:
        return self._dim_id(node, pto.GetBlockDimOp)

    def call_get_grid_dim(self, node: ast.Call) -> SSAValue:
        return self._dim_id(node, pto.GetGridDimOp)

    def call_get_warp_id(self, node: ast.Call) -> SSAValue:
        self.call_args(node, [], 0)
        return self.emit(pto.GetWarpIdOp()).results[0]

    def call_get_lane_id(self, node: ast.Call) -> SSAValue:
        self.call_args(node, [], 0)
        return self.emit(pto.GetLaneIdOp()).results[0]

    # ---------------------------------------------------------------------------------------
    # builtins: memory and sync
    # ---------------------------------------------------------------------------------------

    def call_load(self, node: ast.Call) -> SSAValue:
        (ptr,) = self.call_args(node, ["ptr"], 1)
        ptr = self.expect_ptr(ptr, node, "pto.load's argument")
        return self.emit(pto.LoadOp(ptr)).results[0]

    def call_store(self, node: ast.Call) -> None:
        ptr, value = self.call_args(node, ["ptr", "value"], 2)
        ptr = self.expect_ptr(ptr, node, "pto.store's first argument")
        assert isinstance(ptr.type, pto.PtrType)
        value = self.value_as(value, ptr.type.element_type, node, "the stored value")
        self.emit(pto.StoreOp(value, ptr))

    def call_fma(self, node: ast.Call) -> None:
        dst, a, b, c = self.call_args(node, ["dst", "a", "b", "c"], 4)
        dst = self.expect_ptr(dst, node, "pto.fma's destination")
        assert isinstance(dst.type, pto.PtrType)
        t = dst.type.element_type
        operands = [self.value_as(v, t, node, f"fma operand '{n}'")
                    for v, n in ((a, "a"), (b, "b"), (c, "c"))]
        self.emit(pto.FmaOp(dst, *operands))

    def value_as(self, value: Any, t: Attribute, node: ast.AST, what: str) -> SSAValue:
        if isinstance(value, SSAValue):
            if value.type != t:
                raise self.error(f"{what} is {_type_name(value.type)} but the pointer holds "
                                 f"{_type_name(t)}; convert it with pto.cast(x, {_type_name(t)})",
                                 node)
            return value
        if isinstance(value, bool | int | float):
            return self.constant(value, t)
        raise self.error(f"{what} must be a number, got {_describe_value(value)}", node)

    def call_barrier(self, node: ast.Call) -> None:
        self.call_args(node, [], 0)
        self.emit(pto.BarrierOp())

    def call_barrier_block(self, node: ast.Call) -> None:
        self.call_args(node, [], 0)
        self.emit(pto.BarrierBlockOp())

    # ---------------------------------------------------------------------------------------
    # Python builtins usable in kernels
    # ---------------------------------------------------------------------------------------

    def py_min(self, node: ast.Call) -> Any:
        return self._minmax(node, "min")

    def py_max(self, node: ast.Call) -> Any:
        return self._minmax(node, "max")

    def _minmax(self, node: ast.Call, which: str) -> Any:
        if len(node.args) < 2 or node.keywords:
            raise self.error(f"{which}() in a kernel takes two or more positional values", node)
        values = [self.expr(a) for a in node.args]
        self.node = node
        result = values[0]
        for v in values[1:]:
            if not isinstance(result, SSAValue) and not isinstance(v, SSAValue):
                result = min(result, v) if which == "min" else max(result, v)
                continue
            a, b = self.unify(result, v, node, f"{which}()")
            t = a.type
            if _is_float(t):
                op = arith.MinimumfOp(a, b) if which == "min" else arith.MaximumfOp(a, b)
            elif _is_int(t):
                op = arith.MinSIOp(a, b) if which == "min" else arith.MaxSIOp(a, b)
            else:
                raise self.error(f"{which}() is not defined on {_type_name(t)}", node)
            result = self.emit(op).results[0]
        return result

    def py_abs(self, node: ast.Call) -> Any:
        if len(node.args) != 1 or node.keywords:
            raise self.error("abs() takes exactly one value", node)
        v = self.expr(node.args[0])
        self.node = node
        if not isinstance(v, SSAValue):
            return abs(v)
        from xdsl.dialects import math

        if _is_float(v.type):
            return self.emit(math.AbsFOp(v)).results[0]
        if _is_int(v.type):
            return self.emit(math.AbsIOp(v)).results[0]
        raise self.error(f"abs() is not defined on {_type_name(v.type)}", node)


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


def _float_floordiv(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    from xdsl.dialects import math

    q = self.emit(arith.DivfOp(a, b)).results[0]
    return self.emit(math.FloorOp(q)).results[0]


def _float_mod(self: KernelLowering, a: SSAValue, b: SSAValue) -> SSAValue:
    """Python's float `%`: a - floor(a / b) * b."""
    q = _float_floordiv(self, a, b)
    prod = self.emit(arith.MulfOp(q, b)).results[0]
    return self.emit(arith.SubfOp(a, prod)).results[0]


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


def _describe_value(value: Any) -> str:
    if isinstance(value, SSAValue):
        return f"a {_type_name(value.type)} value"
    return repr(value)


def lower_kernel(kernel: Kernel, arg_types: Sequence[Attribute]) -> ModuleOp:
    """Lower one specialisation of `kernel` to a verified `builtin.module`."""
    return KernelLowering(kernel, arg_types).lower()
