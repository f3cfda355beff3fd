"""Which kernels the native backend compiles, decided from op traits and types before lowering.

The compiled lane model runs a block's lanes one after another (docs/native.md#the-pipeline),
while the interpreter runs every op for all lanes before the next op. The two agree whenever no
lane can observe another lane's memory effects, which this check makes sure of statically:

- only the ops the lowering knows (ids, pointer arithmetic, loads and stores to HBM and L1,
  `pto.fma`, `arith`/`math` ops whose LLVM form gives exactly the interpreter's bits,
  structured control flow, barriers, atomics, fill / copies / mma and the tile vector
  instructions at block level (tiles.py), printf (printf.py: its lines in the interpreter's
  order), the in-flight copy check where tokens.py cannot prove it (inflight.py), warp
  shuffles and votes once
  warp_exchange.py has made them L1 exchanges. L1 and barriers are exact through the phase plan
  (phases.py: every barrier and L1 write cuts the block's code into phases run lane by lane),
  which is asked last and refuses what it cannot split;
- a tensor written by the kernel is written by one op, outside any loop, and never read; or
  else every access to it is *lane-private*: at element `get_global_id(0) + u` (u a parameter or
  constant), one SSA value for all of them, in a 1-D launch (checked at launch: `needs_1d`),
  where no two lanes share an element; or else lane_independence.py can follow every access
  to it (affine indices), and proves at each launch that no two lanes share an element
  (`launch_checked`, docs/native.md#lane-independence); or else the tensor is *shared*
  (shared_hbm.py: each write a phase of its own, one-block launches,
  docs/native.md#shared-hbm-elements); the others are only read; parameters
  that may alias (one tensor passed twice) are not written;
- a tensor updated by an atomic (`pto.atomic_add`, `_max`, `_min`, `_and`, `_or`, `_xor`,
  `_exch`, `_cas`) is only updated so (no load, store, alias), and either every update is an
  integer add, max, min, and, or, xor of one kind whose old value is unused (any order gives
  the same bits), or there is one atomic op outside loops (lanes then update in the
  interpreter's lane order);
- pointers are kernel parameters offset by `pto.addptr` (never carried through loops or `if`
  results), so every access names its tensor and is bounds-checked against it;
- value types i1, i32, i64, f16, bf16 (as its bits: bf16.py), f32, f64 (an f16 / bf16 fma
  rounded once by narrow_fma.py); the transcendental
  functions call NumPy's own float64 loops, the interpreter's definition (numpy_math.py,
  docs/native.md#exactness), not libm, which may differ in the last bit.

`unsupported_reason` returns None for a kernel it accepts, else the first reason, with the
op's location, why it stays on the interpreter.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import (BFloat16Type, Float16Type, Float32Type, Float64Type,
                                   IntegerType, i32,
                                   i64)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from pypto.backend.native.bf16 import bf16_refusal
from pypto.backend.native.int_pow import constant_exponent
from pypto.backend.native.lane_independence import refusal as independence_refusal
from pypto.backend.native.loop_steps import refusal as step_refusal
from pypto.backend.native.printf import MAX_VALUES as PRINTF_VALUES
from pypto.backend.native.printf import plan as printf_plan
from pypto.backend.native.printf import printf_ops
from pypto.backend.native.numpy_math import ufunc_of, unavailable
from pypto.backend.native.warp_exchange import refusal as exchange_refusal
from pypto.backend.native.phases import COLLECTIVES, Plan, needs_phases, refusal
from pypto.backend.native import shared_hbm
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import (atomic_update, launch_id, memory_accesses, offset_base,
                                     warp_collective)

SCALAR_TYPES = (IntegerType, Float16Type, BFloat16Type, Float32Type, Float64Type)
INT_WIDTHS = (1, 32, 64)
MEMORY_ELEMENTS = ("f16", "bf16", "f32", "f64", "i1", "i32", "i64")

LANE_IDS = ("global_id", "local_id", "block_id", "block_dim", "grid_dim", "warp_id", "lane_id")
"""Launch ids the lane function computes from its block and lane coordinates."""

ARITH_OPS: frozenset[str] = frozenset({
    "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori",
    "arith.xori", "arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui", "arith.shli",
    "arith.shrsi", "arith.shrui", "arith.addf", "arith.subf", "arith.mulf", "arith.divf",
    "arith.negf", "arith.cmpi", "arith.cmpf", "arith.select", "arith.extsi", "arith.extui",
    "arith.trunci", "arith.extf", "arith.truncf", "arith.sitofp", "arith.minimumf",
    "arith.maximumf",
})
"""`arith` ops whose LLVM instruction computes exactly what pypto.dialects.arith_semantics and
pypto/exact.py define (IEEE correctly rounded float arithmetic and casts, wrapping integers;
shifts outside [0, width) are given their defined value by the lowering)."""

DIVISIONS: frozenset[str] = frozenset({
    "arith.divsi", "arith.remsi", "arith.divui", "arith.remui", "arith.floordivsi"})
"""Integer divisions (pypto.dialects.arith_semantics); a divisor that is not a non-zero constant
is checked, zero raising the interpreter's division-by-zero error."""

FLOAT_TO_INT = "arith.fptosi"
"""Truncation toward zero, to i32 / i64; NaN or out of range is the interpreter's error."""

MATH_OPS: frozenset[str] = frozenset({
    "math.sqrt", "math.floor", "math.ceil", "math.absf", "math.trunc", "math.roundeven",
    "math.copysign", "math.fma", "math.absi", "math.rsqrt", "pto.fmod",
})
"""Correctly rounded (or exact) functions: LLVM's intrinsic and NumPy's ufunc agree on every
input (`rsqrt` is the interpreter's 1 / sqrt in float64 rounded once; `fmod` is exact).
exp, log, sin, ... are not here: they call NumPy's float64 loops (numpy_math.py), since libm and
NumPy's own implementations may differ in the last bit (docs/native.md#exactness)."""

STRUCTURE = frozenset({"scf.if", "scf.while", "scf.for", "scf.yield", "scf.condition",
                       "func.return"})


ORDER_FREE = frozenset({"add", "max", "min", "and", "or", "xor"})
"""Integer atomics whose final value is the same in any order (commutative and associative):
when no lane uses the old value, the lanes may update in any order."""


def _atomic_kind(op: Operation) -> str:
    update = atomic_update(op)
    return update.kind if update is not None else ""


def _type_ok(t: Attribute) -> bool:
    if isinstance(t, IntegerType):
        return t.width.data in INT_WIDTHS
    if isinstance(t, pto.PtrType):
        return str(t.element_type) in MEMORY_ELEMENTS
    if isinstance(t, pto.L1BufferType):  # (bf16 L1 tiles: only block-level instructions
        return str(t.element_type) in (*MEMORY_ELEMENTS, "bf16")  # touch them, bf16 values
        # are refused where lane code would load one)
    if isinstance(t, pto.TokenType):
        return True
    return isinstance(t, SCALAR_TYPES)


def _where(op: Operation) -> str:
    return op_location(op, unknown="here")


def root_param(value: SSAValue) -> BlockArgument | None:
    """The kernel parameter a pointer value offsets (through `pto.addptr` only), else None."""
    while True:
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            return value if isinstance(owner, func.FuncOp) else None
        base = offset_base(value.owner)
        if base is None:
            return None
        value = base


def root_alloc(value: SSAValue) -> pto.AllocLocalOp | None:
    """The L1 buffer (`pto.alloc_local`) a local pointer offsets, else None."""
    while True:
        if isinstance(value.owner, pto.AllocLocalOp):
            return value.owner
        if isinstance(value, BlockArgument):
            return None
        base = offset_base(value.owner)
        if base is None:
            return None
        value = base


def _in_loop(op: Operation, kernel: func.FuncOp) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, scf.WhileOp | scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


def _lane_private_offset(ptr: SSAValue) -> SSAValue | None:
    """`v` when `ptr` is `addptr(parameter, v)` with `v = get_global_id(0) [+ u]`, u a
    parameter or a constant: an element no other lane of a 1-D launch touches."""
    owner = ptr.owner
    if not isinstance(owner, pto.AddPtrOp) or not isinstance(owner.ptr, BlockArgument):
        return None
    v = owner.offset

    def gid0(x: SSAValue) -> bool:
        return isinstance(x.owner, Operation) and launch_id(x.owner) == "global_id" and \
            x.owner.properties["dim"].value.data == 0

    def uniform(x: SSAValue) -> bool:
        return isinstance(x, BlockArgument) and isinstance(x.block.parent_op(), func.FuncOp) or \
            isinstance(x.owner, arith.ConstantOp)

    if gid0(v):
        return v
    if isinstance(v.owner, arith.AddiOp):
        a, b = v.owner.operands
        if gid0(a) and uniform(b) or gid0(b) and uniform(a):
            return v
    return None


def needs_1d(kernel: func.FuncOp) -> bool:
    """Does the kernel (accepted by `unsupported_reason`) rely on a 1-D launch, its written
    tensors being lane-private by `get_global_id(0)`?"""
    return _analyse(kernel)[1]


def unsupported_reason(kernel: func.FuncOp) -> str | None:
    """None when the native backend compiles `kernel` with the interpreter's results, else why
    not (the first obstacle found, with its location)."""
    return _analyse(kernel)[0]


def unsupported_op(kernel: func.FuncOp) -> Operation | None:
    """The op `unsupported_reason` is about (for tools to point at), None if none or supported."""
    culprit: list[Operation] = []
    return culprit[0] if _check(kernel, [], culprit) is not None and culprit else None


def analyse(kernel: func.FuncOp) -> tuple[str | None, bool]:
    """(`unsupported_reason`, `needs_1d`) in one pass over the kernel."""
    return _analyse(kernel)


def _analyse(kernel: func.FuncOp) -> tuple[str | None, bool]:
    private: list[bool] = []
    reason = _check(kernel, private, [])
    return reason, bool(private) and reason is None


def analyse_launch(kernel: func.FuncOp, plans: list[Plan] | None = None
                   ) -> tuple[str | None, bool, list[BlockArgument]]:
    """`analyse` and `launch_checked` in one pass (a build needs both: one walk and one
    phase plan instead of two); the phase plan, if the kernel has one, appended to `plans`."""
    private: list[bool] = []
    modelled: list[BlockArgument] = []
    reason = _check(kernel, private, [], modelled, plans)
    return reason, bool(private) and reason is None, modelled if reason is None else []


def launch_checked(kernel: func.FuncOp) -> list[BlockArgument]:
    """The written tensors (of a kernel `unsupported_reason` accepts) whose lane independence
    is proven at each launch (lane_independence.LaunchCheck) rather than by the rules above."""
    modelled: list[BlockArgument] = []
    _check(kernel, [], [], modelled)
    return modelled


def _check(kernel: func.FuncOp, private: list[bool],  # noqa: C901 - one rule after another
           culprit: list[Operation], modelled: list[BlockArgument] | None = None,
           plans: list[Plan] | None = None) -> str | None:
    modelled = [] if modelled is None else modelled
    if len(kernel.body.blocks) != 1:
        return "the kernel's body has several blocks (unstructured control flow); the " \
               "lowering starts from structured scf control flow"
    for arg in kernel.body.block.args:
        if not _type_ok(arg.type):
            return f"parameter of type {arg.type} (compiled: {', '.join(MEMORY_ELEMENTS)} " \
                   f"HBM pointers and i32/i64/f32/f64 scalars)"
    writers: dict[BlockArgument, list[Operation]] = {}
    readers: set[BlockArgument] = set()
    offsets: dict[BlockArgument, set[SSAValue | None]] = {}
    atomics: dict[BlockArgument, list[Operation]] = {}
    for op in kernel.walk():
        if op is kernel:
            continue
        culprit[:] = [op]
        for result in op.results:
            if not _type_ok(result.type):
                return f"{_where(op)}: a value of type {result.type} is not compiled yet"
        for region in op.regions:
            for block in region.blocks:
                for barg in block.args:
                    if not _type_ok(barg.type) or isinstance(barg.type, pto.PtrType):
                        # (a token carried by a loop: phases.py / tokens.py decide)
                        return f"{_where(op)}: a loop or branch carries a {barg.type} value"
        name = op.name
        refused = bf16_refusal(op)
        if refused is not None:
            return f"{_where(op)}: {refused} is not compiled yet"
        if warp_collective(op) is not None:  # exchanged through L1 first (warp_exchange.py)
            return exchange_refusal(kernel) or \
                f"{_where(op)}: '{name}' is a warp shuffle or vote: the native backend " \
                f"compiles it after warp_exchange.exchange_warp_collectives (NativeKernel does)"
        if name in STRUCTURE or name in ARITH_OPS or name in MATH_OPS:
            if isinstance(op, scf.IfOp | scf.WhileOp | scf.ForOp) and \
                    any(isinstance(r.type, pto.PtrType) for r in op.results):
                return f"{_where(op)}: a pointer chosen by control flow is not compiled yet"
            if isinstance(op, arith.SelectOp) and isinstance(op.results[0].type, pto.PtrType):
                return f"{_where(op)}: a pointer chosen by select is not compiled yet"
            continue
        if name in DIVISIONS:
            continue
        if isinstance(op, math.IPowIOp):  # int_pow.py
            exponent = constant_exponent(op)
            if op.results[0].type not in (i32, i64) or exponent is not None and exponent < 0:
                return f"{_where(op)}: integer '**' of {op.results[0].type} or by a negative " \
                       f"constant is not compiled (the interpreter reports a negative exponent)"
            continue
        if isinstance(op, arith.UIToFPOp):
            if op.operands[0].type != IntegerType(1):
                return f"{_where(op)}: an unsigned int -> float cast is not compiled yet"
            continue
        if ufunc_of(op) is not None:  # NumPy's own float64 loop (numpy_math.py)
            why = unavailable(op)
            if why is not None:
                return f"{_where(op)}: '{name}' is computed by NumPy's float64 loop, which " \
                       f"compiled code cannot call here ({why})"
            continue
        if name == FLOAT_TO_INT:
            if op.results[0].type not in (i32, i64):
                return f"{_where(op)}: a float -> {op.results[0].type} cast is not compiled yet"
            continue
        if launch_id(op) is not None:
            if launch_id(op) not in LANE_IDS:
                return f"{_where(op)}: '{name}' is not compiled yet"
            continue
        if isinstance(op, pto.AllocLocalOp):
            if op.l1_offset is None:
                return f"{_where(op)}: an L1 buffer without a placed offset (the native " \
                       f"backend lays out L1 as pto-allocate-l1 did)"
            continue
        if isinstance(op, pto.PrintfOp):  # printf.py: lines buffered and sorted, or as they run
            if len(printf_ops(kernel)) > 1 or _in_loop(op, kernel):
                refused = printf_plan(kernel)[0]
                if refused is not None:
                    return refused
            if len(op.values) > PRINTF_VALUES:
                return f"{_where(op)}: a pto.printf of more than {PRINTF_VALUES} values"
            continue
        if isinstance(op, pto.BarrierOp | pto.BarrierBlockOp | pto.WaitOp | pto.WaitAllOp):
            continue
        if isinstance(op, pto.LoopStepOp):  # a checked division by it (loop_steps.py)
            refused = step_refusal(op, kernel)
            if refused is not None:
                return refused
            continue
        if isinstance(op, COLLECTIVES):  # block level (phases.py): HBM operands by the rules
            for access in memory_accesses(op):
                value = op.operands[access.operand]
                if access.space == "local":
                    if root_alloc(value) is None:
                        return f"{_where(op)}: an L1 operand not a pto.alloc_local buffer"
                    continue
                root = root_param(value)
                if root is None:
                    return f"{_where(op)}: an HBM operand not derived from a kernel parameter"
                offsets.setdefault(root, set()).add(None)
                if access.kind == "write":
                    writers.setdefault(root, []).append(op)
                else:
                    readers.add(root)
            continue
        if isinstance(op, pto.AddPtrOp) and isinstance(op.results[0].type, pto.PtrType) and \
                op.results[0].type.space == "local":
            if root_alloc(op.results[0]) is None:
                return f"{_where(op)}: an L1 pointer not derived from a pto.alloc_local"
            continue
        if isinstance(op, pto.AddPtrOp):
            if root_param(op.results[0]) is None:
                return f"{_where(op)}: a pointer not derived from a kernel parameter"
            continue
        if (isinstance(op, pto.LoadOp | pto.StoreOp | pto.FmaOp) or
                atomic_update(op) is not None) and \
                all(a.space == "local" for a in memory_accesses(op)):
            # L1: a write is a phase of its own, in lane order (phases.py)
            if any(root_alloc(op.operands[a.operand]) is None for a in memory_accesses(op)):
                return f"{_where(op)}: an L1 access not through a pto.alloc_local buffer"
            continue
        if atomic_update(op) is not None:
            root = root_param(op.operands[0])
            if root is None:
                return f"{_where(op)}: an atomic through a pointer not derived from a parameter"
            atomics.setdefault(root, []).append(op)
            continue
        if isinstance(op, pto.LoadOp | pto.StoreOp | pto.FmaOp):
            for access in memory_accesses(op):
                root = root_param(op.operands[access.operand])
                if root is None or access.space != "global":
                    return f"{_where(op)}: an access through a pointer not derived from a " \
                           f"kernel parameter"
                offsets.setdefault(root, set()).add(
                    _lane_private_offset(op.operands[access.operand]))
                if access.kind == "write":
                    writers.setdefault(root, []).append(op)
                else:
                    readers.add(root)
            continue
        return f"{_where(op)}: '{name}' is not compiled by the native backend yet"
    for root, ops in atomics.items():
        culprit[:] = [ops[0]]
        pname = kernel.body.block.args.index(root)
        attrs = kernel.arg_attrs.data[pname].data if kernel.arg_attrs is not None else {}
        if root in readers or root in writers or "pto.noalias" not in attrs:
            return f"{_where(ops[0])}: parameter {pname} is updated by atomics and also loaded, " \
                   f"stored or aliased"
        kinds = {_atomic_kind(op) for op in ops}
        totals = len(kinds) == 1 and kinds <= ORDER_FREE and all(
            isinstance(op.results[0].type, IntegerType) and not op.results[0].uses
            for op in ops)
        if not totals and (len(ops) > 1 or _in_loop(ops[0], kernel)):
            return f"{_where(ops[0])}: atomics whose order shows (float, or the old value " \
                   f"used) from several ops or in a loop: the interpreter's order is op by op"
    shared: list[BlockArgument] = []
    for root, ops in writers.items():
        culprit[:] = [ops[-1]]
        pname = kernel.body.block.args.index(root)
        attrs = kernel.arg_attrs.data[pname].data if kernel.arg_attrs is not None else {}
        seen = offsets[root]
        if len(seen) == 1 and None not in seen and "pto.noalias" in attrs:
            private.append(True)  # every access at one lane-private element
            continue
        simple = None
        if root in readers:
            simple = f"{_where(ops[0])}: the kernel reads and writes parameter {pname} (lanes " \
                     f"may communicate through it)"
        elif len(ops) > 1:
            simple = f"{_where(ops[1])}: parameter {pname} is written by more than one op"
        elif _in_loop(ops[0], kernel) and not isinstance(ops[0], COLLECTIVES):
            # (a block-level copy runs once per block per iteration, in program order, as in
            # the interpreter; loops around it are block-level, phases.py)
            simple = f"{_where(ops[0])}: a store inside a loop (its order across lanes is " \
                     f"the interpreter's)"
        if "pto.noalias" not in attrs:
            return f"parameter {pname} is written and may alias another parameter"
        if simple is not None:
            # lanes that provably never share an element may run in any order, checked at
            # launch (lane_independence.py, docs/native.md#lane-independence)
            why = independence_refusal(kernel, root)
            if why is None:
                modelled.append(root)
                continue
            both = next((o for o in ops if any(
                a.kind == "read" and root_param(o.operands[a.operand]) is root
                for a in memory_accesses(o))), None)
            if both is not None:  # (one op reading and writing it: no cut between the two)
                return f"{simple}, and the lane-independence analysis cannot follow it: " \
                       f"{why}; {_where(both)} reads and writes it in one op"
            shared.append(root)  # each write a phase of its own (shared_hbm.py)
    shared_hbm.mark(kernel, shared)
    if needs_phases(kernel):
        # (bfloat16 values cross phases as their bits: bf16.py widens spill slots too)
        refused = refusal(kernel, plans)
        if refused is not None:
            culprit[:] = [refused[1]] if refused[1] is not None else []
            return refused[0]
    return None
