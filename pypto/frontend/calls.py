"""Lowering of calls: the PTO builtins (`pto.load`, `pto.mma`, ...) and Python's min/max/abs.

A mixin of `KernelLowering` (lowering.py): each `call_<name>` lowers the builtin registered
under `<name>` in builtins.BUILTINS. They rely on the lowering's `emit`, `error`, `expr`, typing
helpers and `const_int`.
"""

from __future__ import annotations

import ast
import math as py_math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr
from xdsl.ir import Attribute, SSAValue

from pypto import dtypes, exact
from pypto.analysis.ir_utils import root_alloc
from pypto.dialects import pto
from pypto.dialects.traits import elementwise_reference, kernel_function, tile_vector
from pypto.frontend.blame import describe_type, is_pointer
from pypto.frontend.common import (
    NeedsConstexpr,
    _describe_value,
    _is_bool,
    _is_float,
    _is_int,
    _type_name,
)

_COPY_KEYWORDS = ("rows", "src_stride", "dst_stride")
_PRINTF_CONVERSION = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa])")


def _tile_shape(value: SSAValue) -> tuple[int, int] | None:
    """The shape of a tile (an L1 buffer of `pto.alloc_tile`, maybe passed on by pipeline
    stages), None for anything else (a flat buffer, a pointer into one)."""
    if not isinstance(value.type, pto.L1BufferType):
        return None
    root = root_alloc(value)
    return None if root is None else pto.tile_shape_of(root)


def _signature_names(signature: str) -> list[str]:
    """Parameter names of a builtin signature such as `"(dst, a, rounding='rne')"`."""
    return [part.split("=")[0].strip() for part in signature[1:-1].split(",") if part.strip()]


class CallLowering:
    """`call_*` methods of the kernel lowering (see the module docstring)."""

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
        if not isinstance(value, SSAValue) or \
                not isinstance(value.type, pto.PtrType | pto.L1BufferType):
            raise self.type_error(f"{what} must be a pointer (a tensor parameter or L1 buffer, "
                                  f"plus an offset), got {_describe_value(value)}", node, (value,))
        return value

    def const_int(self, value: Any, node: ast.AST, what: str) -> int:
        if isinstance(value, SSAValue) and isinstance(value.owner, arith.ConstantOp) and \
                isinstance(value.owner.value, IntegerAttr) and _is_int(value.type):
            return value.owner.value.value.data  # a typed constant, e.g. pto.cast(64, pto.int32)
        if isinstance(value, SSAValue):
            params = self.param_slice(value)
            if params:
                raise NeedsConstexpr(params)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{what} must be a compile-time integer, got "
                             f"{_describe_value(value)} (a value computed per lane or loaded "
                             f"from memory cannot size a buffer)", node)
        if not -(2**63) <= value < 2**63:
            raise self.error(f"{what} is {_short_int(value)}, outside the int64 range of the "
                             f"IR's integer attributes; use a value that fits", node)
        return value

    def param_slice(self, value: SSAValue) -> set[str] | None:
        """Kernel parameters `value` is computed from by pure arithmetic, or None."""
        from xdsl.ir import BlockArgument

        params: set[str] = set()
        stack = [value]
        seen: set[SSAValue] = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if isinstance(v, BlockArgument):
                if v.owner is self.function_block and v.name_hint:
                    params.add(v.name_hint)
                    continue
                return None
            owner = v.owner
            if not owner.name.startswith("arith."):
                return None
            stack.extend(owner.operands)
        return params

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
        if len(node.args) >= 3 or any(k.arg in _COPY_KEYWORDS for k in node.keywords):
            self._bulk_copy(node, pto.TileStoreOp, "pto.store", "global", "local")
            return
        ptr, value = self.call_args(node, ["ptr", "value"], 2)
        ptr = self.expect_ptr(ptr, node, "pto.store's first argument")
        value = self.value_as(value, ptr.type.element_type, node, "the stored value", ptr)
        self.emit(pto.StoreOp(value, ptr))

    def call_fma(self, node: ast.Call) -> None:
        dst, a, b, c = self.call_args(node, ["dst", "a", "b", "c"], 4)
        dst = self.expect_ptr(dst, node, "pto.fma's destination")
        t = dst.type.element_type
        operands = [self.value_as(v, t, node, f"fma operand '{n}'", dst)
                    for v, n in ((a, "a"), (b, "b"), (c, "c"))]
        self.emit(pto.FmaOp(dst, *operands))

    def value_as(self, value: Any, t: Attribute, node: ast.AST, what: str,
                 pointer: SSAValue | None = None) -> SSAValue:
        """`value` as an element of type `t` (of `pointer`): literals take the type, values
        must have it; a mismatch names the parameters the two types come from."""
        pointers = (pointer,) if pointer is not None else ()
        if isinstance(value, SSAValue):
            if value.type != t:
                shown = describe_type(value.type) if is_pointer(value.type) else \
                    _type_name(value.type)
                raise self.type_error(f"{what} is {shown} but the pointer holds {_type_name(t)}",
                                      node, (value, *pointers),
                                      f"convert it with pto.cast(x, {_type_name(t)})",
                                      converts=(value,))
            return value
        if isinstance(value, float) and _is_int(t):
            raise self.type_error(f"{what} is the float literal {value!r} but the pointer holds "
                                  f"{_type_name(t)}", node, pointers,
                                  f"write an integer literal, or convert with pto.cast(x, "
                                  f"{_type_name(t)})", converts=())
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
    # builtins: warp shuffles and votes (docs/language.md#warp-shuffles-and-votes)
    # ---------------------------------------------------------------------------------------

    def _shuffle(self, node: ast.Call, op_cls: type, second: str) -> SSAValue:
        name = op_cls.name
        value, lane = self.call_args(node, ["v", second], 2)
        if isinstance(value, bool | int | float):
            value = self.materialize(value)
        if not isinstance(value, SSAValue) or is_pointer(value.type) or \
                not (_is_float(value.type) or _is_int(value.type) or _is_bool(value.type)):
            raise self.type_error(f"{name} moves a number or a bool between the lanes of a "
                                  f"warp, got {_describe_value(value)}", node, (value,),
                                  "shuffle the offset (an int) and add it to the pointer on "
                                  "the receiving lane")
        if isinstance(lane, bool) or isinstance(lane, float) or \
                (isinstance(lane, SSAValue) and not (_is_int(lane.type) and
                                                     lane.type.width.data == 32)):
            raise self.type_error(f"{name}'s {second} must be an int32, got "
                                  f"{_describe_value(lane)}", node, (lane,),
                                  "convert it with pto.cast(x, pto.int32)")
        if isinstance(lane, int):
            lane = self.constant(lane, IntegerType(32))
        if not isinstance(lane, SSAValue):
            raise self.error(f"{name}'s {second} must be an int32, got "
                             f"{_describe_value(lane)}", node)
        return self.emit(op_cls(value, lane)).results[0]

    def call_shfl(self, node: ast.Call) -> SSAValue:
        return self._shuffle(node, pto.ShflOp, "src_lane")

    def call_shfl_up(self, node: ast.Call) -> SSAValue:
        return self._shuffle(node, pto.ShflUpOp, "delta")

    def call_shfl_down(self, node: ast.Call) -> SSAValue:
        return self._shuffle(node, pto.ShflDownOp, "delta")

    def call_shfl_xor(self, node: ast.Call) -> SSAValue:
        return self._shuffle(node, pto.ShflXorOp, "mask")

    def _vote(self, node: ast.Call, op_cls: type) -> SSAValue:
        (pred,) = self.call_args(node, ["pred"], 1)
        if isinstance(pred, SSAValue) and is_pointer(pred.type) or \
                not isinstance(pred, SSAValue | bool | int | float):
            raise self.type_error(f"{op_cls.name} takes a condition (a bool, or a number: "
                                  f"non-zero is true), got {_describe_value(pred)}", node,
                                  (pred,))
        return self.emit(op_cls(self.to_bool(pred, node))).results[0]

    def call_ballot(self, node: ast.Call) -> SSAValue:
        return self._vote(node, pto.BallotOp)

    def call_vote_any(self, node: ast.Call) -> SSAValue:
        return self._vote(node, pto.VoteAnyOp)

    def call_vote_all(self, node: ast.Call) -> SSAValue:
        return self._vote(node, pto.VoteAllOp)

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
                for value in (result, v):
                    if not isinstance(value, int | float):
                        raise self.error(f"{which}() takes numbers, got "
                                         f"{_describe_value(value)}", node)
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
            if not isinstance(v, int | float):
                raise self.error(f"abs() takes a number, got {_describe_value(v)}", node)
            return abs(v)
        if _is_float(v.type):
            return self.emit(math.AbsFOp(v)).results[0]
        if _is_int(v.type):
            return self.emit(math.AbsIOp(v)).results[0]
        raise self.error(f"abs() is not defined on {_type_name(v.type)}", node)

    # ---------------------------------------------------------------------------------------
    # builtins: atomics, L1 and tile instructions
    # ---------------------------------------------------------------------------------------

    def call_atomic_add(self, node: ast.Call) -> SSAValue:
        ptr, value = self.call_args(node, ["ptr", "value"], 2)
        ptr = self.expect_ptr(ptr, node, "pto.atomic_add's first argument")
        value = self.value_as(value, ptr.type.element_type, node, "the added value", ptr)
        return self.emit(pto.AtomicAddOp(ptr, value)).results[0]

    def atomic_operand(self, ptr: Any, value: Any, node: ast.Call, name: str, what: str
                       ) -> tuple[SSAValue, SSAValue]:
        """The pointer and a value of its element type for `pto.<name>`, whose element types
        are checked here, at the call (docs/language.md#atomics)."""
        ptr = self.expect_ptr(ptr, node, f"pto.{name}'s first argument")
        elem = ptr.type.element_type
        if isinstance(elem, IntegerType) and elem.width.data == 1:
            raise self.error(f"pto.{name} is not defined on bool elements; use an int32 "
                             f"buffer (0 / 1)", node)
        bitwise = name in ("atomic_and", "atomic_or", "atomic_xor", "atomic_cas")
        if bitwise and not _is_int(elem):
            how = "compares integers exactly" if name == "atomic_cas" else "is bitwise"
            raise self.error(f"pto.{name} {how}: the pointer holds {_type_name(elem)}, it "
                             f"needs int32 or int64 elements", node)
        return ptr, self.value_as(value, elem, node, what, ptr)

    def atomic_rmw(self, node: ast.Call, name: str, op_class: type) -> SSAValue:
        ptr, value = self.call_args(node, ["ptr", "value"], 2)
        ptr, value = self.atomic_operand(ptr, value, node, name, "the value")
        return self.emit(op_class(ptr, value)).results[0]

    def call_atomic_max(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_max", pto.AtomicMaxOp)

    def call_atomic_min(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_min", pto.AtomicMinOp)

    def call_atomic_and(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_and", pto.AtomicAndOp)

    def call_atomic_or(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_or", pto.AtomicOrOp)

    def call_atomic_xor(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_xor", pto.AtomicXorOp)

    def call_atomic_exch(self, node: ast.Call) -> SSAValue:
        return self.atomic_rmw(node, "atomic_exch", pto.AtomicExchOp)

    def call_atomic_cas(self, node: ast.Call) -> SSAValue:
        ptr, compare, value = self.call_args(node, ["ptr", "compare", "value"], 3)
        ptr, compare = self.atomic_operand(ptr, compare, node, "atomic_cas",
                                           "the compared value")
        value = self.value_as(value, ptr.type.element_type, node, "the new value", ptr)
        return self.emit(pto.AtomicCasOp(ptr, compare, value)).results[0]

    def call_alloc_local(self, node: ast.Call) -> SSAValue:
        count, dtype = self.call_args(node, ["count", "dtype"], 1, {"dtype": dtypes.float32})
        count = self.const_int(count, node, "the element count of pto.alloc_local")
        if count <= 0:
            raise self.error(f"pto.alloc_local needs a positive element count, got {count}",
                             node)
        dt = self.dtype_arg(dtype, node)
        return self.emit(pto.AllocLocalOp(count, dt.mlir())).results[0]

    def call_alloc_tile(self, node: ast.Call) -> SSAValue:
        rows, cols, dtype = self.call_args(node, ["rows", "cols", "dtype"], 2,
                                           {"dtype": dtypes.float32})
        rows = self.const_int(rows, node, "the rows of pto.alloc_tile")
        cols = self.const_int(cols, node, "the cols of pto.alloc_tile")
        if rows <= 0 or cols <= 0:
            raise self.error(f"pto.alloc_tile needs a positive shape, got {rows} x {cols}",
                             node)
        dt = self.dtype_arg(dtype, node)
        return self.emit(pto.AllocLocalOp(rows * cols, dt.mlir(), shape=(rows, cols))).results[0]

    def call_tile_vector(self, node: ast.Call, op_cls: type) -> None:
        """A tile vector instruction (`pto.tadd(dst, a, b)`, ...), lowered from its
        declaration: tile operands are tiles of `pto.alloc_tile` (the op's shape is the full
        operand's), uniform values take the tile's element type, `op` / `rounding` are string
        literals. The dialect's verifier reports the rest at the Python line."""
        trait = tile_vector(op_cls)
        fn = kernel_function(op_cls)
        names = list(_signature_names(fn.signature))
        props = [n for n in ("op", "rounding") if n in names]
        operand_names = [n for n in names if n not in props]
        defaults = {"rounding": "rne"}
        values = self.call_args(node, names, len(operand_names) + (1 if "op" in props else 0),
                                defaults)
        bound = dict(zip(names, values))
        where = f"pto.{fn.name}"
        shape = None
        tiles: list[SSAValue] = []
        for name, role in zip(operand_names, trait.roles):
            if role == "value":
                continue
            value = bound[name]
            if not isinstance(value, SSAValue) or _tile_shape(value) is None:
                raise self.error(f"{where}'s '{name}' must be a tile of pto.alloc_tile(rows, "
                                 f"cols, dtype), got {_describe_value(value)}", node)
            tiles.append(value)
            rows, cols = _tile_shape(value)
            full = {"full": (rows, cols), "row": None, "col": None, "trans": (cols, rows)}[role]
            if full is not None and shape is None:
                shape = full
        if shape is None:
            raise self.error(f"{where} needs a full tile operand", node)
        for name, role in zip(operand_names, trait.roles):
            if role == "value":
                continue
            want = {"full": shape, "row": (shape[0], 1), "col": (1, shape[1]),
                    "trans": (shape[1], shape[0])}[role]
            got = _tile_shape(bound[name])
            if got != want:
                raise self.error(f"{where}'s '{name}' is a {got[0]} x {got[1]} tile, but this "
                                 f"instruction on a {shape[0]} x {shape[1]} tile needs "
                                 f"{want[0]} x {want[1]}", node)
        element = pto.element_type_of(
            bound[operand_names[op_cls.SOURCE]].type) if trait.roles[op_cls.SOURCE] != "value" \
            else pto.element_type_of(bound[operand_names[0]].type)
        operands = []
        for name, role in zip(operand_names, trait.roles):
            value = bound[name]
            if role == "value":
                value = self.value_as(value, element, node, f"{where}'s '{name}'")
            operands.append(value)
        properties: dict[str, Any] = {"rows": IntegerAttr(shape[0], 64),
                                      "cols": IntegerAttr(shape[1], 64)}
        for name in props:
            text = bound[name]
            if not isinstance(text, str):
                raise self.error(f"{where}'s '{name}' must be a string literal, got "
                                 f"{_describe_value(text)}", node)
            properties["cmp" if name == "op" else name] = StringAttr(text)
        op = op_cls.create(operands=operands, properties=properties)
        try:
            op.verify()
        except Exception as exc:  # the dialect's checks, reported at the Python line
            raise self.error(str(exc).splitlines()[0], node) from None
        self.emit(op)

    def dtype_arg(self, value: Any, node: ast.AST) -> dtypes.DType:
        if isinstance(value, SSAValue):
            raise self.error("dtype must be a compile-time dtype such as pto.float16", node)
        try:
            return dtypes.as_dtype(value)
        except TypeError as exc:
            raise self.error(str(exc), node) from None

    def as_i32(self, value: Any, node: ast.AST, what: str) -> SSAValue:
        """A uniform integer operand of a tile instruction, as i32."""
        if isinstance(value, SSAValue):
            if not _is_int(value.type):
                raise self.error(f"{what} must be an integer, got {_describe_value(value)}",
                                 node)
            if value.type.width.data == 64:
                return self.emit(arith.TruncIOp(value, IntegerType(32))).results[0]
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{what} must be an integer, got {value!r}", node)
        if not 0 <= value < 2**31:
            raise self.error(f"{what} must be between 0 and 2**31 - 1, got {value}", node)
        return self.constant(value, IntegerType(32))

    def _bulk_copy(self, node: ast.Call, op_cls: type, name: str, dst_space: str,
                   src_space: str) -> SSAValue | None:
        dst, src, nbytes, rows, src_stride, dst_stride = self.call_args(
            node, ["dst", "src", "nbytes", "rows", "src_stride", "dst_stride"], 3,
            {"rows": 1, "src_stride": None, "dst_stride": None})
        dst = self.expect_ptr(dst, node, f"{name}'s destination")
        src = self.expect_ptr(src, node, f"{name}'s source")
        spaces = {"global": "HBM (a tensor parameter)", "local": "L1 (pto.alloc_local)"}
        for value, space, what in ((dst, dst_space, "destination"), (src, src_space, "source")):
            if pto.memory_space_of(value.type) != space:
                raise self.error(f"{name} copies {spaces[src_space].split(' ')[0]} -> "
                                 f"{spaces[dst_space].split(' ')[0]}: its {what} must be in "
                                 f"{spaces[space]}", node)
        elem = dst.type.element_type
        if src.type.element_type != elem:
            raise self.error(f"{name}: source holds {_type_name(src.type.element_type)} but the "
                             f"destination holds {_type_name(elem)}", node)
        itemsize = dtypes.from_mlir(elem).itemsize
        if not isinstance(rows, SSAValue) and (
                isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0):
            raise self.error(f"rows must be a positive integer, got {rows!r}", node)
        if not isinstance(nbytes, SSAValue) and not isinstance(rows, SSAValue):
            if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0 or \
                    nbytes % (rows * itemsize):
                raise self.error(f"{name}: nbytes={nbytes!r} is not a whole number of "
                                 f"{rows} row(s) of {_type_name(elem)} ({itemsize} bytes each)",
                                 node)
        if src_stride is None or dst_stride is None:  # the default stride: one row's length
            row_len = self._row_length(nbytes, rows, itemsize, node)
            src_stride = row_len if src_stride is None else src_stride
            dst_stride = row_len if dst_stride is None else dst_stride
        operands = [self.as_i32(v, node, what) for v, what in (
            (nbytes, "nbytes"), (rows, "rows"), (src_stride, "src_stride"),
            (dst_stride, "dst_stride"))]
        op = self.emit(op_cls(dst, src, *operands))
        return op.results[0] if op.results else None

    def _row_length(self, nbytes: Any, rows: Any, itemsize: int, node: ast.Call) -> Any:
        """`nbytes // (rows * itemsize)`, the default strides. A run-time `rows` of 0 or less
        must raise the copy's own error ("nbytes=... is not a whole number of 0 row(s)",
        docs/isa.md#ptoasync_load), which the copy checks before it uses a stride: so the
        divisor is `max(rows * itemsize, 1)` and the division never fails first (the quotient
        is the same whenever the copy is well formed)."""
        per_row = self.binop(ast.Mult(), rows, itemsize, node)
        if isinstance(per_row, SSAValue):
            one = self.constant(1, per_row.type)
            per_row = self.emit(arith.MaxSIOp(per_row, one)).results[0]
        return self.binop(ast.FloorDiv(), nbytes, per_row, node)

    def call_async_load(self, node: ast.Call) -> SSAValue | None:
        return self._bulk_copy(node, pto.AsyncLoadOp, "pto.async_load", "local", "global")

    def call_async_store(self, node: ast.Call) -> SSAValue | None:
        return self._bulk_copy(node, pto.AsyncStoreOp, "pto.async_store", "global", "local")

    def call_wait(self, node: ast.Call) -> None:
        (tok,) = self.call_args(node, ["token"], 1)
        if not isinstance(tok, SSAValue) or not isinstance(tok.type, pto.TokenType):
            raise self.error("pto.wait takes the token returned by pto.async_load or "
                             "pto.async_store", node)
        self.emit(pto.WaitOp(tok))

    def call_wait_all(self, node: ast.Call) -> None:
        self.call_args(node, [], 0)
        self.emit(pto.WaitAllOp())

    def call_fill(self, node: ast.Call) -> None:
        dst, value, count = self.call_args(node, ["dst", "value", "count"], 3)
        dst = self.expect_ptr(dst, node, "pto.fill's destination")
        if pto.memory_space_of(dst.type) != "local":
            raise self.error("pto.fill writes L1: its destination must be an L1 buffer", node)
        value = self.value_as(value, dst.type.element_type, node, "the fill value", dst)
        self.emit(pto.FillOp(dst, value, self.as_i32(count, node, "count")))

    def call_mma(self, node: ast.Call) -> None:
        c, a, b, m, n, k = self.call_args(node, ["C", "A", "B", "m", "n", "k"], 6)
        c = self.expect_ptr(c, node, "pto.mma's C")
        a = self.expect_ptr(a, node, "pto.mma's A")
        b = self.expect_ptr(b, node, "pto.mma's B")
        dims = [self.const_int(v, node, f"mma's {w}") for v, w in ((m, "m"), (n, "n"), (k, "k"))]
        for value, what in ((c, "C"), (a, "A"), (b, "B")):
            if pto.memory_space_of(value.type) != "local":
                raise self.error(f"pto.mma works on L1 tiles: {what} must be an L1 buffer "
                                 f"(copy it in with pto.async_load)", node)
        try:
            op = pto.MmaOp(c, a, b, *dims)
            op.verify_()
        except Exception as exc:  # the dialect's checks, reported at the Python line
            raise self.error(str(exc), node) from None
        self.emit(op)

    def call_pipeline(self, node: ast.Call) -> None:
        raise self.error("pto.pipeline() is used as 'with pto.pipeline() as pl:'", node)

    def call_printf(self, node: ast.Call) -> None:
        if not node.args or node.keywords:
            raise self.error("pto.printf takes a format string and values", node)
        fmt = self.expr(node.args[0])
        if not isinstance(fmt, str):
            raise self.error("pto.printf's first argument must be a string literal", node)
        values = [self.materialize(self.expr(a)) for a in node.args[1:]]
        self.node = node
        wanted = [c for c in _PRINTF_CONVERSION.findall(fmt) if c != "%%"]
        if len(wanted) != len(values):
            raise self.error(f"pto.printf format has {len(wanted)} conversion(s) but "
                             f"{len(values)} value(s) were given", node)
        for v in values:
            if isinstance(v.type, pto.PtrType | pto.L1BufferType | pto.TokenType):
                raise self.error("pto.printf prints numbers; pointers and buffers cannot be "
                                 "printed", node)
        self.emit(pto.PrintfOp(fmt, values))

    # ---------------------------------------------------------------------------------------
    # builtins: math, select, cast
    # ---------------------------------------------------------------------------------------

    def _unary_math(self, node: ast.Call, name: str, op_cls: type,
                    fold: Any) -> Any:
        (x,) = self.call_args(node, ["x"], 1)
        if isinstance(x, bool | int | float) and not isinstance(x, bool):
            try:
                return float(fold(float(x)))
            except (ValueError, OverflowError, ZeroDivisionError) as exc:
                raise self.error(f"pto.{name}({x}) cannot be evaluated: {exc}", node) from None
        if not isinstance(x, SSAValue) or not _is_float(x.type):
            raise self.type_error(f"pto.{name} takes a float value, got {_describe_value(x)}",
                                  node, (x,), "pto.cast() integers first")
        return self.emit(op_cls(x)).results[0]

    def call_elementwise(self, node: ast.Call, name: str, op_cls: type) -> Any:
        """`pto.<name>(x)` of an `Elementwise` dialect op (unary, on floats): a Python number
        folds through the op's exact reference in float64; a value emits the op."""
        reference = exact.MATH[elementwise_reference(op_cls)]  # type: ignore[index]
        return self._unary_math(node, name, op_cls,
                                lambda v: float(reference(np.float64(v))))

    def call_exp(self, node: ast.Call) -> Any:
        return self._unary_math(node, "exp", math.ExpOp, py_math.exp)

    def call_log(self, node: ast.Call) -> Any:
        return self._unary_math(node, "log", math.LogOp, py_math.log)

    def call_sqrt(self, node: ast.Call) -> Any:
        return self._unary_math(node, "sqrt", math.SqrtOp, py_math.sqrt)

    def call_rsqrt(self, node: ast.Call) -> Any:
        return self._unary_math(node, "rsqrt", math.RsqrtOp, lambda v: 1.0 / py_math.sqrt(v))

    def call_tanh(self, node: ast.Call) -> Any:
        return self._unary_math(node, "tanh", math.TanhOp, py_math.tanh)

    def call_select(self, node: ast.Call) -> Any:
        c, a, b = self.call_args(node, ["cond", "a", "b"], 3)
        if not isinstance(c, SSAValue):
            return a if c else b
        return self.select(self.to_bool(c, node), a, b, node)

    def call_cast(self, node: ast.Call) -> Any:
        x, dtype = self.call_args(node, ["x", "dtype"], 2)
        dt = self.dtype_arg(dtype, node)
        target = dt.mlir()
        if not isinstance(x, SSAValue):
            if isinstance(x, bool | int | float):
                # An explicit dtype makes the literal a typed value (as np.float32(0.0) is),
                # no longer weakly typed: `pto.cast(0.0, pto.float32) + half` is float32.
                if dt.kind == "float":
                    folded = x  # rounded once to the type by `constant`
                elif dt.kind == "bool":
                    folded = bool(x)
                else:
                    folded = self._literal_to_int(x, dt, node)
                return self.constant(folded, target)
            raise self.error(f"pto.cast takes a number, got {_describe_value(x)}", node)
        return self.convert(x, target, node)

    def _literal_to_int(self, x: bool | int | float, dt: Any, node: ast.AST) -> int:
        """`pto.cast(literal, int type)` folded as the run-time cast computes it: an int wraps,
        a float truncates toward zero; a float that is NaN, infinite or out of the type's range
        after truncation (a `KernelError` at run time) is a `CompileError` here, at the call."""
        bits = dt.np_dtype.itemsize * 8
        if isinstance(x, float):
            if py_math.isfinite(x):
                truncated = int(x)  # toward zero, exact for every finite float
                if -(2 ** (bits - 1)) <= truncated < 2 ** (bits - 1):
                    return truncated
            raise self.error(f"pto.cast({x!r}, {dt.name}): {x!r} is outside the range of "
                             f"{dt.name} ([-2^{bits - 1}, 2^{bits - 1})), so the cast has no "
                             f"value (NaN and out-of-range float-to-int casts are errors, "
                             f"docs/language.md); use a value that fits", node)
        wrapped = int(x) & ((1 << bits) - 1)  # int -> int wraps, as arith.trunci does
        return wrapped - (1 << bits) if wrapped >= 1 << (bits - 1) else wrapped

    def convert(self, x: SSAValue, target: Attribute, node: ast.AST) -> SSAValue:
        src = x.type
        if src == target:
            return x
        if _is_bool(target):
            return self.to_bool(x, node)
        if _is_bool(src):
            if _is_int(target):
                return self.emit(arith.ExtUIOp(x, target)).results[0]
            return self.emit(arith.UIToFPOp(x, target)).results[0]
        if _is_int(src) and _is_int(target):
            if src.width.data < target.width.data:
                return self.emit(arith.ExtSIOp(x, target)).results[0]
            return self.emit(arith.TruncIOp(x, target)).results[0]
        if _is_int(src) and _is_float(target):
            return self.emit(arith.SIToFPOp(x, target)).results[0]
        if _is_float(src) and _is_int(target):
            return self.emit(arith.FPToSIOp(x, target)).results[0]
        if _is_float(src) and _is_float(target):
            if src.bitwidth < target.bitwidth:
                return self.emit(arith.ExtFOp(x, target)).results[0]
            if src.bitwidth > target.bitwidth:
                return self.emit(arith.TruncFOp(x, target)).results[0]
            # float16 <-> bfloat16: through float32 (exact widening, one rounding)
            wide = self.emit(arith.ExtFOp(x, dtypes.float32.mlir())).results[0]
            return self.emit(arith.TruncFOp(wide, target)).results[0]
        raise self.type_error(f"cannot cast {describe_type(src)} to {describe_type(target)}",
                              node, (x,))


def _short_int(value: int) -> str:
    """`value` for a message: in full when short, else its sign and digit count."""
    if abs(value) < 10**30:
        return str(value)
    return f"{'minus ' if value < 0 else ''}an integer of ~{int(abs(value).bit_length() * 0.30103) + 1} digits"
