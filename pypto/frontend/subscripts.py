"""Subscripts: `p[i]` loads, `p[i] = v` stores, `p[i] += v` loads, computes and stores.

A mixin of `KernelLowering` (lowering.py). A subscript is sugar for the pointer arithmetic a
kernel already writes: `p[i]` is exactly `pto.load(p + i)` and `p[i] = v` is
`pto.store(p + i, v)`, so it lowers to the same `pto.addptr` / `pto.load` / `pto.store` ops,
located at the subscript: every pass, the race checker, the cost model and the debugger see
them as they see the spelled-out form, and an out-of-bounds access names the subscript's line
(docs/language.md#subscripts).

The base is a pointer (a tensor parameter, `p + k`) or an L1 buffer (`pto.alloc_local`). A
multi-index `t[r, c]` needs the base's shape: `row_major_strides` is the one place that gives
it: a shaped type, a tile of `pto.alloc_tile` (its alloc's static shape), or a tensor
parameter's launch shape.
"""

from __future__ import annotations

import ast
from typing import Any

from xdsl.ir import SSAValue

from pypto.analysis.ir_utils import root_alloc
from pypto.dialects import pto
from pypto.frontend.common import _describe_value, _is_int


class SubscriptLowering:
    """`expr_Subscript`, subscript assignment targets and `p[i] op= v`."""

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        self.node = node
        if not isinstance(base, SSAValue):
            if isinstance(base, tuple):  # a compile-time tuple indexed by a constant
                index = self.expr(node.slice)
                self.node = node
                if isinstance(index, SSAValue):
                    raise self.error(f"'{ast.unparse(node.value)}' is a compile-time tuple: "
                                     f"it can only be indexed by a compile-time integer", node)
                return self.fold(lambda: base[index], node)
            raise self.error(f"'{ast.unparse(node.value)}' cannot be subscripted: subscripts "
                             f"read through a pointer (a tensor parameter) or an L1 buffer",
                             node)
        pointer = self.subscript_address(base, node)
        return self.emit(pto.LoadOp(pointer)).results[0]

    def store_subscript(self, target: ast.Subscript, value: Any) -> None:
        """`p[i] = value`: `pto.store(p + i, value)` located at the subscript."""
        base = self.expr(target.value)
        self.node = target
        pointer = self.subscript_address(base, target)
        self.store_through(pointer, value, target)

    def store_through(self, pointer: SSAValue, value: Any, node: ast.AST) -> None:
        self.node = node
        value = self.value_as(value, pointer.type.element_type, node, "the stored value",
                              pointer)
        self.emit(pto.StoreOp(value, pointer))

    def augment_subscript(self, stmt: ast.AugAssign) -> None:
        """`p[i] += v`: the address is computed once, then load, `+`, store (not atomic: two
        lanes updating one element race, as in CUDA; use pto.atomic_add for that)."""
        target = stmt.target
        assert isinstance(target, ast.Subscript)
        base = self.expr(target.value)
        self.node = target
        pointer = self.subscript_address(base, target)
        current = self.emit(pto.LoadOp(pointer)).results[0]
        rhs = self.expr(stmt.value)
        self.node = stmt
        self.store_through(pointer, self.binop(stmt.op, current, rhs, stmt), target)

    def subscript_address(self, base: Any, node: ast.Subscript) -> SSAValue:
        """The element pointer `base + offset` of the subscript `node`."""
        if not isinstance(base, SSAValue) or \
                not isinstance(base.type, pto.PtrType | pto.L1BufferType):
            raise self.type_error(f"'{ast.unparse(node.value)}' cannot be subscripted: it is "
                                  f"{_describe_value(base)}; subscripts read and write through "
                                  f"a pointer (a tensor parameter) or an L1 buffer", node,
                                  (base,) if isinstance(base, SSAValue) else ())
        if isinstance(node.slice, ast.Slice) or (
                isinstance(node.slice, ast.Tuple)
                and any(isinstance(e, ast.Slice) for e in node.slice.elts)):
            raise self.error(f"slices are not supported in kernels ('{ast.unparse(node)}'): a "
                             f"lane reads or writes one element; for a block copy use "
                             f"pto.async_load / pto.async_store", node)
        indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        values = [self.expr(i) for i in indices]
        self.node = node
        for index_node, value in zip(indices, values):
            if isinstance(value, SSAValue) and _is_int(value.type):
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                continue
            raise self.type_error(f"the index '{ast.unparse(index_node)}' of "
                                  f"'{ast.unparse(node)}' must be an integer, got "
                                  f"{_describe_value(value)}", node,
                                  (value,) if isinstance(value, SSAValue) else (),
                                  "convert it with pto.cast(x, pto.int32)")
        if len(values) == 1:
            offset = values[0]
        else:
            strides = self.row_major_strides(base, len(values), node)
            self.check_constant_indices(base, values, indices, node)
            offset = self.linear_offset(values, strides, node)
        return self.ptr_offset(base, offset, ast.Add(), node)

    def row_major_strides(self, base: SSAValue, rank: int, node: ast.Subscript) -> list[int]:
        """The element strides of a `rank`-index subscript of `base`: known only for a base
        with a static shape (the hook a shaped tile type answers)."""
        shape = getattr(base.type, "shape", None)
        if shape is None and isinstance(base.type, pto.L1BufferType):
            root = root_alloc(base)  # a tile of pto.alloc_tile (maybe passed on by stages)
            shape = None if root is None else pto.tile_shape_of(root)
        if shape is None:
            shape = self.value_shapes.get(base)  # a tensor parameter: its launch shape
        if isinstance(shape, tuple) and len(shape) == rank:
            strides, step = [], 1
            for extent in reversed(shape):
                strides.append(step)
                step *= extent
            return strides[::-1]
        name = ast.unparse(node.value)
        if isinstance(shape, tuple):
            count = f"{len(shape)} index" if len(shape) == 1 else f"{len(shape)} indices"
            what = f"'{name}' was launched with shape {shape} ({count})"
            if len(shape) == 1:
                what += (" (a tensor allocated in bytes is flat: launch a shaped one, "
                         "pto.tensor(array) or pto.empty(shape))")
        elif isinstance(base.type, pto.L1BufferType):
            what = ("an L1 buffer of pto.alloc_local is one-dimensional (pto.alloc_tile(rows, "
                    "cols) makes one with a shape)")
        elif base in self.function_block.args:
            what = ("the shapes of tensor arguments are specialised only for kernels that "
                    "index with several subscripts in their own body (not only in a helper)")
        else:
            what = ("a pointer has no shape (only a tensor parameter itself, indexed in the "
                    "kernel, takes its launch shape)")
        flat = " + ".join(f"{ast.unparse(i)} * STRIDE{k}" if k < rank - 1 else ast.unparse(i)
                          for k, i in enumerate(node.slice.elts))  # type: ignore[attr-defined]
        raise self.error(f"'{ast.unparse(node)}' has {rank} indices but {what}: index it with "
                         f"one flat offset, {name}[{flat}]", node)

    def check_constant_indices(self, base: SSAValue, values: list[Any],
                               indices: list[ast.expr], node: ast.Subscript) -> None:
        """A compile-time index outside its extent of a tile's static shape is a compile
        error at the subscript (run-time indices are checked as the flat element:
        docs/language.md#subscripts)."""
        if not isinstance(base.type, pto.L1BufferType):
            return
        root = root_alloc(base)
        shape = None if root is None else pto.tile_shape_of(root)
        if shape is None:
            return
        for k, (value, extent, index) in enumerate(zip(values, shape, indices)):
            if isinstance(value, int) and not 0 <= value < extent:
                raise self.error(f"index {k} of '{ast.unparse(node)}' is "
                                 f"'{ast.unparse(index)}' = {value}, outside the tile's "
                                 f"{shape[0]} x {shape[1]} shape (0 .. {extent - 1} along "
                                 f"that axis)", node)

    def linear_offset(self, values: list[Any], strides: list[int], node: ast.AST) -> Any:
        """sum(index * stride), folded when every index is a compile-time integer."""
        offset: Any = 0
        for value, stride in zip(values, strides):
            term = value if stride == 1 else self.binop(ast.Mult(), value, stride, node)
            offset = self.binop(ast.Add(), offset, term, node) if not (
                isinstance(offset, int) and offset == 0) else term
        return offset


__all__ = ["SubscriptLowering"]
