"""`convert-pto-to-llvm`: the lane and grid functions (after `convert-scf-to-cf`) in the `llvm`
dialect, ready for `xdsl.backend.llvm.convert`.

- A `!pto.ptr<T, global>` parameter becomes two: the tensor's first element (`!llvm.ptr`) and
  its element count (i64). Pointer values are that tensor plus an i64 element offset
  (`pto.addptr` adds to it), so every `pto.load` / `pto.store` / `pto.fma` is checked against its
  tensor: an offset outside `[0, count)` writes an error record at the lane function's `err`
  argument (code 1, the access's site number, the offset, the parameter, the block and lane) and
  returns 1; the runtime turns it into the interpreter's `MemoryAccessError`.
- `cf.assert` (the loop watchdog `pto-simt-to-lanes` puts in every `scf.while`) records code 2.
- `arith` / `math` ops become the LLVM instructions or intrinsics with exactly the interpreter's
  semantics (pypto.dialects.arith_semantics, pypto/exact.py): wrapping integers, shifts outside
  `[0, width)` given their defined value, `INT_MIN / -1` wrapping, bool casts as NumPy's
  (`True` is 1, an int is true when non-zero), `pto.fma` as one `llvm.fma`.
- `func` / `cf` become `llvm.func`, `llvm.call`, `llvm.return`, `llvm.br`, `llvm.cond_br`.

docs/native.md#the-pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, llvm, math
from xdsl.dialects.builtin import (FloatAttr, IntegerAttr, IntegerType, ModuleOp, StringAttr,
                                   VectorType,
                                   UnrealizedConversionCastOp, f16, f32, f64, i1, i8,
                                   i32,
                                   i64)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from pypto.backend.native.atomics import is_rmw_atomic, lower_atomic
from pypto.backend.native import fill_loops, mma_calls
from pypto.backend.native.bf16 import has_bf16, widen_bf16
from pypto.backend.native.narrow_fma import rewrite_narrow_fmas
from pypto.backend.native.printf import declare as declare_printf
from pypto.backend.native.quick_ops import constant_attr as _constant_attr
from pypto.backend.native.quick_ops import ANY_NAN_ATTR, extreme_ops, quick as _op
from pypto.backend.native.printf import lower_printf
from pypto.backend.native.int_pow import lower_ipowi, lower_uitofp
from pypto.backend.native.numpy_math import add_helpers, lower_math, ufunc_of
from pypto.backend.native.fast_blocks import (COUNT_ATTR, NSW_ATTR, RANGE_ATTR, UNCHECKED_ATTR,
                                              add_fast_blocks)
from pypto.backend.native.full_blocks import full_variants
from pypto.backend.native.launch_checks import launch_variants
from pypto.backend.native.phases import ARENA_ATTR, L1_INDEX_ATTR
from pypto.backend.native.constant_lanes import GATHER_FREE_ATTR
from pypto.backend.native.simt_to_lanes import GRID_ATTR, ID_ARGS, LANE_ATTR, LANE_SUFFIX
from pypto.backend.native import copy_loops
from pypto.backend.native import tiles as native_tiles
from pypto.dialects import pto

OOB = 1
WATCHDOG = 2
DIVIDE_BY_ZERO = 3
CAST_RANGE = 4
TIME_LIMIT = 5
COLLECTIVE = 6
"""Error codes of the record (COLLECTIVE: the runtime's callback raised; it kept the error;
pypto.backend.native.collectives.COLLECTIVE_CODE is this number)."""
LIMIT_SLOT = 10
"""err[10]: the loop watchdog's trip limit (PYPTO_MAX_TRIPS, written by the runtime per launch)."""
EXPIRED_SLOT = 11
"""err[11]: non-zero once the launch's `timeout=` ran out (set by a timer thread, read by every
`while` loop each CLOCK_EVERY trips)."""
CLOCK_EVERY = 4096
"""Trips between two reads of the time-limit flag (the interpreter's watchdog.CLOCK_EVERY)."""
COLLECTIVE_SYMBOL = "pypto_native_collective"
COLLECTIVE_OPS = (pto.FillOp, pto.BulkCopyOp, pto.MmaOp)


def collective_signature() -> llvm.LLVMFunctionType:
    """(err, site, 3 x (pointer, count, offset), 4 x i64, f64) -> i32."""
    ptr = llvm.LLVMPointerType()
    return llvm.LLVMFunctionType([ptr, i64, *[ptr, i64, i64] * 3, *[i64] * 4, f64], i32)


SITE_ATTR = "pto.native_site"
"""Site number of a checked op (set by the JIT to index its table of locations); without it the
ops are numbered in order."""

_INT_BIN = {arith.AddiOp: llvm.AddOp, arith.SubiOp: llvm.SubOp, arith.MuliOp: llvm.MulOp,
            arith.AndIOp: llvm.AndOp, arith.OrIOp: llvm.OrOp, arith.XOrIOp: llvm.XOrOp}
_FLOAT_BIN = {arith.AddfOp: llvm.FAddOp, arith.SubfOp: llvm.FSubOp, arith.MulfOp: llvm.FMulOp,
              arith.DivfOp: llvm.FDivOp}
_CASTS = {arith.ExtUIOp: llvm.ZExtOp, arith.ExtFOp: llvm.FPExtOp, arith.TruncFOp: llvm.FPTruncOp}
_MINMAX = {arith.MinSIOp: "slt", arith.MaxSIOp: "sgt", arith.MinUIOp: "ult",
           arith.MaxUIOp: "ugt"}
_UNARY_INTRINSICS = {math.SqrtOp: "sqrt", math.FloorOp: "floor", math.CeilOp: "ceil",
                     math.AbsFOp: "fabs", math.TruncOp: "trunc", math.RoundEvenOp: "roundeven"}
_BINARY_INTRINSICS = {math.CopySignOp: "copysign", arith.MinimumfOp: "minimum",
                      arith.MaximumfOp: "maximum"}


def _suffix(t: Attribute) -> str:
    return {"f32": "f32", "f64": "f64"}.get(str(t), str(t))


def _sext(v: SSAValue, t: Attribute) -> Operation:
    return _op(llvm.SExtOp, (v,), (t,), lambda: llvm.SExtOp(v, t))


def _gep(base: SSAValue, index: int | SSAValue, elem: Attribute) -> Operation:
    if isinstance(index, int):
        return _op(llvm.GEPOp, (base,), (index, elem),
                   lambda: llvm.GEPOp.from_mixed_indices(base, [index], elem))
    return _op(llvm.GEPOp, (base, index), (None, elem),
               lambda: llvm.GEPOp.from_mixed_indices(base, [index], elem))


def _store(value: SSAValue, address: SSAValue) -> Operation:
    return _op(llvm.StoreOp, (value, address), (), lambda: llvm.StoreOp(value, address))


def _icmp(a: SSAValue, b: SSAValue, predicate: int) -> Operation:
    return _op(llvm.ICmpOp, (a, b), (predicate,),
               lambda: llvm.ICmpOp(a, b, IntegerAttr(predicate, i64)))


def _binary(cls: type[Operation], a: SSAValue, b: SSAValue) -> Operation:
    return _op(cls, (a, b), (), lambda: cls(a, b))


@dataclass
class _Ptr:
    param: int  # index among the original parameters
    base: SSAValue
    count: SSAValue
    offset: SSAValue


class _FunctionLowering:
    """One func.func (lane or grid function) rewritten into an llvm.func."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.is_lane = LANE_ATTR in fn.attributes
        self.ptrs: dict[SSAValue, _Ptr] = {}
        self.expanded: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}
        self.next_site = 0
        self.calls_collective = False
        self.calls_mma = False
        self.calls_tile = False  # a tile vector instruction (tiles.py)
        self.numpy_calls: set[str] = set()
        self.calls_printf = False
        """The NumPy loops the function calls (numpy_math.py)."""

    # helpers --------------------------------------------------------------------------------

    @staticmethod
    def _before(anchor: Operation, *ops: Operation) -> SSAValue:
        anchor.parent_block().insert_ops_before(list(ops), anchor)
        return ops[-1].results[0] if ops[-1].results else None  # type: ignore[return-value]

    @staticmethod
    def _const(value: int | float, t: Attribute) -> llvm.ConstantOp:
        return llvm.ConstantOp.create(properties={"value": _constant_attr(value, t)},
                                      result_types=[t])

    def _replace(self, op: Operation, *new: Operation, result: SSAValue | None = None) -> None:
        if new:
            op.parent_block().insert_ops_before(list(new), op)
        if op.results:
            op.results[0].replace_all_uses_with(result if result is not None else
                                                new[-1].results[0])
        op.detach()
        op.erase()

    # signature ------------------------------------------------------------------------------

    def lower(self) -> llvm.FuncOp:
        entry = self.fn.body.blocks[0]
        first = entry.first_op
        original = list(entry.args)
        param = 0
        for arg in original:
            if isinstance(arg.type, pto.PtrType):
                index = arg.index
                base = entry.insert_arg(llvm.LLVMPointerType(), index)
                count = entry.insert_arg(i64, index + 1)
                zero = self._const(0, i64)
                entry.insert_op_before(zero, first)
                self.ptrs[arg] = _Ptr(param, base, count, zero.result)
                self.expanded[arg] = (base, count)
            param += 1
        self.params = param
        self.ids = None
        arena = self.fn.attributes.get(ARENA_ATTR)  # phase functions: the L1 arena argument
        self.arena = original[arena.value.data] if isinstance(arena, IntegerAttr) else None
        if self.is_lane:
            n = len(original) - ID_ARGS - 1
            self.ids = original[n:n + 6]
        for op in list(self.fn.body.walk()):
            self._lower_op(op)
        for op in [o for o in self.fn.body.walk()
                   if isinstance(o, pto.AddPtrOp | pto.AllocLocalOp)][::-1]:
            op.detach()
            op.erase()
        for arg in list(entry.args):
            if isinstance(arg.type, pto.PtrType):
                entry.erase_arg(arg)
        inputs = [a.type for a in entry.args]
        ftype = llvm.LLVMFunctionType(inputs, i32)
        linkage = llvm.LinkageAttr("internal" if self.is_lane or RANGE_ATTR in self.fn.attributes
                                   else "external")
        new = llvm.FuncOp(self.fn.sym_name.data, ftype, linkage=linkage, body=Region())
        if GATHER_FREE_ATTR in self.fn.attributes:  # (jit.py: its code without gathers)
            new.attributes[GATHER_FREE_ATTR] = self.fn.attributes[GATHER_FREE_ATTR]
        self.fn.body.move_blocks(new.body)
        return new

    # pointers and memory --------------------------------------------------------------------

    def ptr(self, value: SSAValue) -> _Ptr:
        found = self.ptrs.get(value)
        if found is not None:
            return found
        op = value.owner
        if isinstance(op, pto.AllocLocalOp) and self.arena is not None:  # an L1 buffer: the
            index = op.attributes.get(L1_INDEX_ATTR)                     # arena + its offset
            k = index.value.data if isinstance(index, IntegerAttr) else 0
            base = self._before(op, llvm.GEPOp.from_mixed_indices(
                self.arena, [op.l1_offset or 0], i8))
            count = self._before(op, self._const(op.result.type.size, i64))
            zero = self._before(op, self._const(0, i64))
            found = _Ptr(-1 - k, base, count, zero)  # (parameter -1 - k: L1 buffer k)
            self.ptrs[value] = found
            return found
        if not isinstance(op, pto.AddPtrOp):
            raise DiagnosticException(f"convert-pto-to-llvm: pointer {value} is not a parameter "
                                      f"offset by pto.addptr (run pto-simt-to-lanes first)")
        parent = self.ptr(op.ptr)
        off = op.offset
        if off.type != i64:
            off = self._before(op, _sext(off, i64))
        total = self._before(op, _binary(llvm.AddOp, parent.offset, off))
        found = _Ptr(parent.param, parent.base, parent.count, total)
        self.ptrs[value] = found
        return found

    def _checked_address(self, op: Operation, address: SSAValue, elem: Attribute) -> SSAValue:
        """The checked element address of `op`'s access through `address`: the block is split,
        an out-of-range offset branches to a block recording the error."""
        p = self.ptr(address)
        if UNCHECKED_ATTR in op.attributes:  # proven in range for the block (fast_blocks.py)
            return self._before(op, _gep(p.base, p.offset, elem))
        attr = op.attributes.get(SITE_ATTR)
        site = attr.value.data if isinstance(attr, IntegerAttr) else self.next_site
        self.next_site += 1
        inside = self._before(op, _icmp(p.offset, p.count, 6))  # ult
        self._fail_unless(op, inside, OOB, site, p.offset, p.param)
        return self._before(op, _gep(p.base, p.offset, elem))

    def _fail_unless(self, op: Operation, ok: SSAValue, code: int, site: int,
                     detail: SSAValue | None, param: int) -> None:
        """Split `op`'s block before `op`: continue when `ok`, else record the error and return."""
        if not self.is_lane:
            raise DiagnosticException("convert-pto-to-llvm: a checked op outside a lane function")
        block = op.parent_block()
        rest = block.split_before(op)
        fail = Block()
        block.parent.insert_block_after(fail, block)
        err = self.fn.body.blocks[0].args[-1]
        values: list[SSAValue] = []
        for value in (code, site, detail, param):
            if isinstance(value, int):
                c = self._const(value, i64)
                fail.add_op(c)
                values.append(c.result)
            elif value is None:
                c = self._const(0, i64)
                fail.add_op(c)
                values.append(c.result)
            else:
                values.append(value)
        for coord in self.ids or ():
            ext = _sext(coord, i64)
            fail.add_op(ext)
            values.append(ext.results[0])
        for index, value in enumerate(values):
            slot = _gep(err, index, i64)
            fail.add_op(slot)
            fail.add_op(_store(value, slot.results[0]))
        one = self._const(code, i32)
        fail.add_op(one)
        fail.add_op(llvm.ReturnOp(one.result))
        block.add_op(llvm.CondBrOp(ok, rest, [], fail, []))

    # ops ------------------------------------------------------------------------------------

    def _lower_op(self, op: Operation) -> None:  # noqa: C901 - one case per op kind
        kind = type(op)
        if op.name.startswith("llvm."):  # already lowered (fast_blocks.py, full_blocks.py,
            return                        # ...): no case below applies to it
        if kind is cf.BranchOp:  # (the most frequent ops first: none of the cases below
            args = tuple(op.operands)  # applies to them)
            self._replace(op, _op(llvm.BrOp, args, (), lambda: llvm.BrOp(op.successor, *args),
                                  (op.successor,)))
        elif kind is cf.ConditionalBranchOp:
            then, other = tuple(op.then_arguments), tuple(op.else_arguments)
            self._replace(op, _op(llvm.CondBrOp, (op.cond, *then, *other), (len(then),),
                                  lambda: llvm.CondBrOp(op.cond, op.then_block, then,
                                                        op.else_block, other),
                                  (op.then_block, op.else_block)))
        elif isinstance(op, pto.AddPtrOp | pto.AllocLocalOp):
            self.ptr(op.results[0])
        elif isinstance(op, pto.LoadOp | pto.StoreOp) and \
                pto.UNCHECKED_VECTOR_ATTR in op.attributes:  # (pair_registers.py)
            t = op.results[0].type if isinstance(op, pto.LoadOp) else op.value.type
            assert isinstance(t, VectorType) and UNCHECKED_ATTR in op.attributes
            elem = t.element_type
            address = self._checked_address(op, op.ptr, elem)
            size = elem.bitwidth // 8  # type: ignore[attr-defined]
            self._replace(op, llvm.LoadOp(address, t, alignment=size)
                          if isinstance(op, pto.LoadOp) else
                          llvm.StoreOp(op.value, address, alignment=size))
        elif isinstance(op, pto.LoadOp):
            t = op.results[0].type
            if t == i1:  # a bool is a byte (NumPy's bool_): true when non-zero
                address = self._checked_address(op, op.ptr, i8)
                byte = llvm.LoadOp(address, i8)
                zero = self._const(0, i8)
                self._replace(op, byte, zero, llvm.ICmpOp(byte.results[0], zero.result,
                                                          IntegerAttr(1, i64)))
            else:
                address = self._checked_address(op, op.ptr, t)
                self._replace(op, llvm.LoadOp(address, t))
        elif isinstance(op, pto.StoreOp):
            if op.value.type == i1:  # stored as the byte 0 or 1
                address = self._checked_address(op, op.ptr, i8)
                byte = llvm.ZExtOp(op.value, i8)
                self._replace(op, byte, llvm.StoreOp(byte.results[0], address))
            else:
                address = self._checked_address(op, op.ptr, op.value.type)
                self._replace(op, llvm.StoreOp(op.value, address))
        elif isinstance(op, pto.FmaOp):
            address = self._checked_address(op, op.dst, op.a.type)
            if isinstance(op.a.type, IntegerType):  # integers: a * b + c, wrapping
                mul = llvm.MulOp(op.a, op.b)
                fma: Operation = llvm.AddOp(mul.results[0], op.c)
                self._replace(op, mul, fma, llvm.StoreOp(fma.results[0], address), result=None)
            else:
                fma = llvm.FMAOp(op.a, op.b, op.c)
                self._replace(op, fma, llvm.StoreOp(fma.results[0], address), result=None)
        elif isinstance(op, pto.AtomicAddOp):  # lanes run one at a time: load, add, store
            t = op.value.type
            address = self._checked_address(op, op.ptr, t)
            old = llvm.LoadOp(address, t)
            add = (llvm.AddOp if isinstance(t, IntegerType) else llvm.FAddOp)(
                old.results[0], op.value)
            self._replace(op, old, add, llvm.StoreOp(add.results[0], address),
                          result=old.results[0])
        elif isinstance(op, arith.ConstantOp):
            t = op.results[0].type
            v = op.value.value.data
            self._replace(op, self._const(int(v) if isinstance(t, IntegerType) else v, t))
        elif kind in _INT_BIN:
            if NSW_ATTR in op.attributes:  # proven not to overflow (fast_blocks.py)
                self._replace(op, _INT_BIN[kind](op.operands[0], op.operands[1], {},
                                                 llvm.OverflowAttr([llvm.OverflowFlag
                                                                    .NO_SIGNED_WRAP])))
            else:
                self._replace(op, _binary(_INT_BIN[kind], op.operands[0], op.operands[1]))
        elif isinstance(op, UnrealizedConversionCastOp) and COUNT_ATTR in op.attributes:
            op.results[0].replace_all_uses_with(self.ptr(op.inputs[0]).count)
            op.detach()
            op.erase()
        elif kind in _FLOAT_BIN:
            self._replace(op, _binary(_FLOAT_BIN[kind], op.operands[0], op.operands[1]))
        elif isinstance(op, arith.NegfOp):
            self._replace(op, llvm.FNegOp(op.operands[0]))
        elif kind in _MINMAX:
            a, b = op.operands
            pred = llvm.ICmpPredicateFlag(_MINMAX[kind]).to_int()
            cmp = llvm.ICmpOp(a, b, IntegerAttr(pred, i64))
            self._replace(op, cmp, llvm.SelectOp(cmp, a, b))
        elif isinstance(op, arith.ShLIOp | arith.ShRUIOp | arith.ShRSIOp):
            self._shift(op)
        elif isinstance(op, arith.DivSIOp | arith.RemSIOp | arith.DivUIOp | arith.RemUIOp |
                        arith.FloorDivSIOp):
            self._division(op)
        elif isinstance(op, arith.CmpiOp):
            self._replace(op, _icmp(op.lhs, op.rhs, op.predicate.value.data))
        elif isinstance(op, arith.CmpfOp):
            name = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            if name in ("false", "true"):
                self._replace(op, self._const(int(name == "true"), i1))
            else:
                self._replace(op, llvm.FCmpOp(op.lhs, op.rhs, name))
        elif isinstance(op, arith.SelectOp):
            self._replace(op, llvm.SelectOp(*op.operands))
        elif isinstance(op, arith.TruncFOp) and op.operands[0].type == f64 and \
                op.results[0].type == f16:
            rounded = self._round_f64(op, op.operands[0], f16)
            op.results[0].replace_all_uses_with(rounded)
            op.detach()
            op.erase()
        elif kind in _CASTS:
            self._replace(op, _CASTS[kind](op.operands[0], op.results[0].type))
        elif isinstance(op, arith.ExtSIOp):
            src = op.operands[0]
            cast = llvm.ZExtOp if src.type == i1 else llvm.SExtOp  # NumPy: True is 1
            self._replace(op, cast(src, op.results[0].type))
        elif isinstance(op, arith.TruncIOp):
            src, t = op.operands[0], op.results[0].type
            if t == i1:  # NumPy: an integer is True when non-zero
                zero = self._const(0, src.type)
                self._replace(op, zero, llvm.ICmpOp(src, zero.result, IntegerAttr(1, i64)))
            else:
                self._replace(op, llvm.TruncOp(src, t))
        elif isinstance(op, arith.SIToFPOp):
            src = op.operands[0]
            if src.type == i1:
                wide = llvm.ZExtOp(src, i32)
                self._replace(op, wide, llvm.SIToFPOp(wide.results[0], op.results[0].type))
            else:
                self._replace(op, llvm.SIToFPOp(src, op.results[0].type))
        elif kind in _UNARY_INTRINSICS:
            t = op.results[0].type
            self._replace(op, llvm.CallIntrinsicOp(
                f"llvm.{_UNARY_INTRINSICS[kind]}.{_suffix(t)}", [op.operands[0]], [t]))
        elif kind in (arith.MinimumfOp, arith.MaximumfOp) and ANY_NAN_ATTR not in op.attributes:
            # of NaNs the interpreter's choice (quick_ops.extreme_ops, docs/native.md#exactness)
            self._replace(op, *extreme_ops(_BINARY_INTRINSICS[kind], op.results[0].type,
                                           *op.operands))
        elif kind in _BINARY_INTRINSICS:
            t = op.results[0].type
            self._replace(op, llvm.CallIntrinsicOp(
                f"llvm.{_BINARY_INTRINSICS[kind]}.{_suffix(t)}", list(op.operands), [t]))
        elif isinstance(op, math.FmaOp):
            self._replace(op, llvm.FMAOp(*op.operands))
        elif isinstance(op, math.AbsIOp):
            t = op.results[0].type
            no = self._const(0, i1)
            self._replace(op, no, llvm.CallIntrinsicOp(f"llvm.abs.{t}", [op.operands[0],
                                                                         no.result], [t]))
        elif isinstance(op, func.CallOp):
            args: list[SSAValue] = []
            for a in op.arguments:
                if isinstance(a.type, pto.PtrType):
                    p = self.ptr(a)
                    args += [p.base, p.count]
                else:
                    args.append(a)
            self._replace(op, llvm.CallOp(op.callee, *args, return_type=i32))
        elif isinstance(op, func.ReturnOp):
            self._replace(op, llvm.ReturnOp(op.operands[0]))
        elif isinstance(op, cf.AssertOp):
            self._watchdog(op)
        elif isinstance(op, arith.FPToSIOp):
            self._float_to_int(op)
        elif isinstance(op, math.RsqrtOp):  # the interpreter's: 1 / sqrt(x) in float64,
            x = op.operands[0]                 # rounded once to the type
            wide = x if x.type == f64 else self._before(op, llvm.FPExtOp(x, f64))
            root = self._before(op, llvm.CallIntrinsicOp("llvm.sqrt.f64", [wide], [f64]))
            one = self._const(1.0, f64)
            inverse = self._before(op, one, llvm.FDivOp(one.result, root))
            rounded = self._round_f64(op, inverse, op.results[0].type)
            op.results[0].replace_all_uses_with(rounded)
            op.detach()
            op.erase()
        elif isinstance(op, COLLECTIVE_OPS):
            self._collective(op)
        elif native_tiles.is_tile_op(op):  # a block-level call (pypto/backend/native/tiles.py)
            native_tiles.lower_tile_op(self, op)
        elif is_rmw_atomic(op):
            lower_atomic(self, op)
        elif ufunc_of(op) is not None:
            lower_math(self, op)
        elif isinstance(op, math.IPowIOp):
            lower_ipowi(self, op)
        elif isinstance(op, arith.UIToFPOp):
            lower_uitofp(self, op)
        elif isinstance(op, pto.PrintfOp):
            lower_printf(self, op)
        elif isinstance(op, arith.BitcastOp):
            self._replace(op, llvm.BitcastOp(op.operands[0], op.results[0].type))
        elif isinstance(op, pto.FmodOp):  # C's fmod (exact), as NumPy's np.fmod
            self._replace(op, llvm.FRemOp(op.operands[0], op.operands[1]))
        elif op.dialect_name() == "llvm":
            pass
        else:
            raise DiagnosticException(f"convert-pto-to-llvm: '{op.name}' has no lowering to the "
                                      f"llvm dialect (run pto-simt-to-lanes first, which checks)")

    def _collective(self, op: Operation) -> None:
        """A block-level instruction in the grid function: a call to the runtime's
        `COLLECTIVE_SYMBOL` (pypto.backend.native.collectives), which does it with NumPy as
        the interpreter does (the same copies, the same matmul: the same bits, the same
        errors). Arguments: err record, site, three (element pointer, count, offset) operands,
        four integers, one float (fill's value)."""
        site = self._site(op)
        err = self.fn.body.blocks[0].args[-1]
        new: list[Operation] = []

        def const(v: int | float, t: Attribute = i64) -> SSAValue:
            c = self._const(v, t)
            new.append(c)
            return c.result

        def wide(v: SSAValue) -> SSAValue:
            ext = llvm.SExtOp(v, i64)
            new.append(ext)
            return ext.results[0]

        pointers: list[SSAValue] = []
        for v in op.operands:
            if isinstance(v.type, pto.PtrType | pto.L1BufferType):
                p = self.ptr(v)
                pointers += [p.base, p.count, p.offset]
        while len(pointers) < 9:
            pointers += [err, const(0), const(0)]
        ints: list[SSAValue] = []
        fval = const(0.0, f64)
        if isinstance(op, pto.FillOp):
            ints.append(wide(op.count))
            value = op.value
            if isinstance(value.type, IntegerType):
                ints.append(wide(value) if value.type != i64 else value)
            else:
                ext = llvm.FPExtOp(value, f64) if value.type != f64 else None
                if ext is not None:
                    new.append(ext)
                    fval = ext.results[0]
                else:
                    fval = value
        elif isinstance(op, pto.BulkCopyOp):
            ints += [wide(v) for v in (op.nbytes, op.rows, op.src_stride, op.dst_stride)]
        while len(ints) < 4:
            ints.append(const(0))
        call = llvm.CallOp(COLLECTIVE_SYMBOL, err, const(site), *pointers, *ints, fval,
                           return_type=i32)
        new.append(call)
        self.calls_collective = True
        if isinstance(op, pto.BulkCopyOp) and copy_loops.emit(  # a memcpy loop, the call
                op, err, tuple(pointers[3:6]), tuple(pointers[0:3]), ints, new):  # kept for
            return                                                  # errors (copy_loops.py)
        if isinstance(op, pto.MmaOp) and mma_calls.emit(  # NumPy's sgemm, the call kept for
                op, err, [tuple(pointers[i:i + 3]) for i in (0, 3, 6)], new):  # errors
            self.calls_mma = True                                   # (mma_calls.py)
            return
        if isinstance(op, pto.FillOp) and fill_loops.emit(  # a store loop, the call kept for
                op, err, tuple(pointers[0:3]), ints[0], fval, new):  # errors (fill_loops.py)
            return
        self._replace(op, *new, result=None)
    def _site(self, op: Operation) -> int:
        attr = op.attributes.get(SITE_ATTR)
        if isinstance(attr, IntegerAttr):
            return attr.value.data
        self.next_site += 1
        return self.next_site - 1

    def _slot(self, op: Operation, slot: int) -> SSAValue:
        """Load err[slot] (i64) before `op`."""
        err = self.fn.body.blocks[0].args[-1]
        address = self._before(op, llvm.GEPOp.from_mixed_indices(err, [slot], i64))
        return self._before(op, llvm.LoadOp(address, i64))

    def _watchdog(self, op: cf.AssertOp) -> None:
        """A `while` loop's watchdog (`pto-simt-to-lanes` asserts trips < its limit): the limit
        is the launch's (err[LIMIT_SLOT]), and every CLOCK_EVERY trips err[EXPIRED_SLOT] is read
        (after a compiler barrier, so the read stays in the loop) for the `timeout=`."""
        site = int(op.msg.data.rpartition(":")[2])  # pto-watchdog:<loop number>
        compare = op.arg.owner
        if not isinstance(compare, llvm.ICmpOp):
            raise DiagnosticException("convert-pto-to-llvm: a watchdog assert not on a trip "
                                      "count comparison (run pto-simt-to-lanes)")
        trips = compare.operands[0]
        limit = self._slot(op, LIMIT_SLOT)
        below = self._before(op, llvm.ICmpOp(trips, limit, IntegerAttr(6, i64)))  # ult
        self._fail_unless(op, below, WATCHDOG, site, None, -1)
        mask = self._const(CLOCK_EVERY - 1, i64)
        zero = self._const(0, i64)
        low = self._before(op, mask, zero, llvm.AndOp(trips, mask.result))
        due = self._before(op, llvm.ICmpOp(low, zero.result, IntegerAttr(0, i64)))  # eq
        block = op.parent_block()
        rest = block.split_before(op)
        check = Block()
        block.parent.insert_block_after(check, block)
        block.add_op(llvm.CondBrOp(due, check, [], rest, []))
        check.add_op(llvm.BrOp(rest))
        anchor = check.last_op
        self._before(anchor, llvm.InlineAsmOp("", "~{memory}", [], has_side_effects=True))
        expired = self._slot(anchor, EXPIRED_SLOT)
        zero2 = self._const(0, i64)
        ok = self._before(anchor, zero2, llvm.ICmpOp(expired, zero2.result,
                                                      IntegerAttr(0, i64)))
        self._fail_unless(anchor, ok, TIME_LIMIT, site, None, -1)
        op.detach()
        op.erase()

    def _round_f64(self, op: Operation, x: SSAValue, t: Attribute) -> SSAValue:
        """`x` (f64) rounded once to `t` (f64, f32 or f16), before `op`. To float16 through
        float32 rounded to odd (truncated, its last bit set when inexact), then to nearest:
        float32 keeps more than float16's 11 + 2 bits, so the two roundings are one (LLVM's
        direct f64 -> f16 conversion is a runtime-library call MCJIT may not resolve)."""
        if t == f64:
            return x
        near = self._before(op, llvm.FPTruncOp(x, f32))
        if t == f32:
            return near
        back = self._before(op, llvm.FPExtOp(near, f64))
        inexact = self._before(op, llvm.FCmpOp(back, x, "one"))  # (false for NaN)
        bits = self._before(op, llvm.BitcastOp(near, i32))
        abs_back = self._before(op, llvm.CallIntrinsicOp("llvm.fabs.f64", [back], [f64]))
        abs_x = self._before(op, llvm.CallIntrinsicOp("llvm.fabs.f64", [x], [f64]))
        away = self._before(op, llvm.FCmpOp(abs_back, abs_x, "ogt"))  # rounded up: step back
        one = self._const(1, i32)
        zero = self._const(0, i32)
        step = self._before(op, one, zero, llvm.SelectOp(away, one.result, zero.result))
        toward = self._before(op, llvm.SubOp(bits, step))
        sticky = self._before(op, llvm.SelectOp(inexact, one.result, zero.result))
        odd = self._before(op, llvm.OrOp(toward, sticky))
        odd_f = self._before(op, llvm.BitcastOp(odd, f32))
        return self._before(op, llvm.FPTruncOp(odd_f, t))

    def _float_to_int(self, op: arith.FPToSIOp) -> None:
        """Truncation toward zero; a NaN or a truncated value outside the integer type is the
        interpreter's error (pypto/exact.py float_in_int_range), its value recorded as f64."""
        x = op.operands[0]
        t = op.results[0].type
        wide = x if x.type == f64 else self._before(op, llvm.FPExtOp(x, f64))
        trunc = self._before(op, llvm.CallIntrinsicOp("llvm.trunc.f64", [wide], [f64]))
        bits = t.width.data
        lo = self._const(-(2.0 ** (bits - 1)), f64)
        hi = self._const(2.0 ** (bits - 1), f64)
        ge = self._before(op, lo, hi, llvm.FCmpOp(trunc, lo.result, "oge"))
        lt = self._before(op, llvm.FCmpOp(trunc, hi.result, "olt"))
        ok = self._before(op, llvm.AndOp(ge, lt))
        detail = self._before(op, llvm.BitcastOp(wide, i64))
        self._fail_unless(op, ok, CAST_RANGE, self._site(op), detail, -1)
        self._replace(op, llvm.CallIntrinsicOp(f"llvm.fptosi.sat.{t}.f64", [trunc], [t]))

    def _shift(self, op: Operation) -> None:
        a, b = op.operands
        t = a.type
        width = self._const(t.width.data, t)
        in_range = llvm.ICmpOp(b, width.result, IntegerAttr(6, i64))  # ult: [0, width)
        if isinstance(op, arith.ShRSIOp):  # shifted one bit at a time: the sign in the end
            top = self._const(t.width.data - 1, t)
            amount = llvm.SelectOp(in_range, b, top)
            self._replace(op, width, in_range, top, amount, llvm.AShrOp(a, amount.results[0]))
            return
        shifted = (llvm.ShlOp if isinstance(op, arith.ShLIOp) else llvm.LShrOp)(a, b)
        zero = self._const(0, t)
        self._replace(op, width, in_range, shifted, zero,
                      llvm.SelectOp(in_range, shifted.results[0], zero.result))

    def _division(self, op: Operation) -> None:
        """Signed: `INT_MIN / -1` wraps to INT_MIN, its remainder is 0 (LLVM: undefined), so a
        divisor of -1 is computed as negation. In a lane function a divisor that is not a non-zero
        constant is checked first: zero is the interpreter's division-by-zero error (the grid
        function divides by launch dimensions, positive)."""
        a, b = op.operands
        constant = b.owner
        if self.is_lane and not (isinstance(constant, llvm.ConstantOp | arith.ConstantOp) and
                                 isinstance(constant.value, IntegerAttr) and
                                 constant.value.value.data != 0):
            zero = self._const(0, b.type)
            ok = self._before(op, zero, llvm.ICmpOp(b, zero.result, IntegerAttr(1, i64)))  # ne
            self._fail_unless(op, ok, DIVIDE_BY_ZERO, self._site(op), None, -1)
        if isinstance(op, arith.DivUIOp | arith.RemUIOp):
            cls = llvm.UDivOp if isinstance(op, arith.DivUIOp) else llvm.URemOp
            self._replace(op, cls(a, b))
            return
        t = a.type
        minus_one = self._const(-1, t)
        one = self._const(1, t)
        is_m1 = llvm.ICmpOp(b, minus_one.result, IntegerAttr(0, i64))
        safe = llvm.SelectOp(is_m1, one.result, b)
        if isinstance(op, arith.FloorDivSIOp):  # C's quotient, minus one when inexact and
            zero = self._const(0, t)               # the signs differ (NumPy's floor_divide)
            q = llvm.SDivOp(a, safe.results[0])
            r = llvm.SRemOp(a, safe.results[0])
            inexact = llvm.ICmpOp(r.results[0], zero.result, IntegerAttr(1, i64))  # ne
            a_neg = llvm.ICmpOp(a, zero.result, IntegerAttr(2, i64))  # slt
            b_neg = llvm.ICmpOp(b, zero.result, IntegerAttr(2, i64))
            differ = llvm.XOrOp(a_neg.results[0], b_neg.results[0])
            adjust = llvm.AndOp(inexact.results[0], differ.results[0])
            down = llvm.SubOp(q.results[0], one.result)
            floor = llvm.SelectOp(adjust.results[0], down.results[0], q.results[0])
            neg = llvm.SubOp(zero.result, a)
            self._replace(op, minus_one, one, is_m1, safe, zero, q, r, inexact, a_neg, b_neg,
                          differ, adjust, down, floor, neg,
                          llvm.SelectOp(is_m1, neg.results[0], floor.results[0]))
        elif isinstance(op, arith.DivSIOp):
            zero = self._const(0, t)
            q = llvm.SDivOp(a, safe.results[0])
            neg = llvm.SubOp(zero.result, a)
            self._replace(op, minus_one, one, is_m1, safe, zero, q, neg,
                          llvm.SelectOp(is_m1, neg.results[0], q.results[0]))
        else:
            zero = self._const(0, t)
            r = llvm.SRemOp(a, safe.results[0])
            self._replace(op, minus_one, one, is_m1, safe, zero, r,
                          llvm.SelectOp(is_m1, zero.result, r.results[0]))


@dataclass(frozen=True)
class ConvertPtoToLlvmPass(ModulePass):
    """Lower the lane and grid functions (in cf form) to the llvm dialect, accesses checked."""

    name = "convert-pto-to-llvm"

    fast_blocks: bool = True
    """Add the per-block range check and the unchecked lane loops (fast_blocks.py)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                rewrite_narrow_fmas(fn)  # float16 / bfloat16 fma rounded once (narrow_fma.py)
                if has_bf16(fn):  # bfloat16 values become their bits (bf16.py)
                    widen_bf16(fn)
        functions = {fn.sym_name.data: fn for fn in op.ops if isinstance(fn, func.FuncOp)}
        for name, grid in functions.items():
            lane = functions.get(name + LANE_SUFFIX)
            if GRID_ATTR in grid.attributes and lane is not None and self.fast_blocks:
                num_params = len(lane.body.blocks[0].args) - ID_ARGS - 1
                add_fast_blocks(op, lane, grid, num_params, full_variants, launch_variants)
        numpy_calls: set[str] = set()
        printf = False
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp):
                continue
            if LANE_ATTR not in fn.attributes and GRID_ATTR not in fn.attributes and \
                    RANGE_ATTR not in fn.attributes:
                raise DiagnosticException(
                    f"convert-pto-to-llvm: function '{fn.sym_name.data}' is not a lane or grid "
                    f"function; run pto-simt-to-lanes and convert-scf-to-cf first")
            lowering = _FunctionLowering(fn)
            new = lowering.lower()
            numpy_calls |= lowering.numpy_calls
            printf |= lowering.calls_printf
            op.body.block.insert_op_before(new, fn)
            fn.detach()
            fn.erase()
            if lowering.calls_collective and not any(
                    isinstance(o, llvm.FuncOp) and o.sym_name.data == COLLECTIVE_SYMBOL
                    for o in op.ops):
                op.body.block.insert_op_before(llvm.FuncOp(
                    COLLECTIVE_SYMBOL, collective_signature(),
                    linkage=llvm.LinkageAttr("external"), body=Region()),
                    op.body.block.first_op)
            if lowering.calls_tile:
                native_tiles.declare(op.body.block)
            if lowering.calls_mma:
                mma_calls.declare(op)
        if printf:  # the printf callback (printf.py)
            declare_printf(op)
        if numpy_calls:  # the transcendental functions: NumPy's loops (numpy_math.py)
            add_helpers(op, numpy_calls)
