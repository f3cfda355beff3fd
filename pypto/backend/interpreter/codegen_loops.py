"""Code generation for SIMT loops: `scf.while` with a per-lane condition, and `pto.loop_step`.

A part of `KernelCodegen` (codegen.py, `gen.loops`). An `scf.while` becomes a Python
`while True:` over the lane vector:

    _m = <mask of the lanes entering the loop>
    while True:
        <before region>                      # the per-lane condition c
        exiting = _mask_andnot(_m, c)        # lanes leaving now keep these values as results
        result = _loop_exit(result, value, exiting, dtype)
        _m = _mask_and(_m, c)
        if _m is False: break                # no lane left
        <after region>                       # the body, on the lanes still in the loop
    _m = <saved mask>

A condition the uniformity analysis proves the same on every lane (a loop with uniform bounds
and a run-time step, `while k < n` on uniform values) needs no masks: the loop is a plain
Python `while` whose results are the values at exit.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import scf

from pypto import dtypes
from pypto.backend.interpreter import watchdog
from pypto.dialects import pto

if TYPE_CHECKING:
    from pypto.backend.interpreter.codegen_regions import CodegenAPI


def loop_exit(result: Any, value: Any, exiting: Any, dtype: Any) -> Any:
    """Lanes in `exiting` take `value` (what they carried when their condition failed); the
    others keep `result`. `exiting` is a mask: None (every lane), False (none) or a bool array."""
    if exiting is False:
        return result
    if exiting is None:
        if isinstance(value, np.ndarray):
            return value.copy() if dtype is None or value.dtype == dtype else value.astype(dtype)
        return value
    out = np.where(exiting, value, result)
    return out if dtype is None or out.dtype == dtype else out.astype(dtype)


def loop_step(ctx: Any, step: Any, mask: Any, site: int) -> Any:
    """`pto.loop_step`: the step of a SIMT loop must be non-zero and the same on every active
    lane of a block; returns it (a scalar when the vector is one block or less)."""
    if not isinstance(step, np.ndarray):
        if step == 0:
            raise ctx.fail("the step of this range() is 0 at run time: the loop would never "
                           "end; use a non-zero step", site)
        return step
    active = step if mask is None or mask is False else step[mask]
    if mask is False or active.size == 0:
        return step.flat[0] if step.size else step
    if not active.all():
        raise ctx.fail("the step of this range() is 0 on an active lane at run time: the loop "
                       "would never end; use a non-zero step", site)
    per_block = int(np.prod(ctx.block))
    if step.size > per_block and step.size % per_block == 0:
        rows = step.reshape(-1, per_block)
        live = np.ones(rows.shape, dtype=bool) if mask is None else mask.reshape(rows.shape)
        info = np.iinfo(step.dtype)
        lo = np.where(live, rows, info.max).min(axis=1)
        hi = np.where(live, rows, info.min).max(axis=1)
        differs = (lo != hi) & live.any(axis=1)
        if differs.any():
            raise ctx.fail(f"the step of this range() differs between the lanes of a block "
                           f"(from {lo[differs][0]} to {hi[differs][0]}); a SIMT loop's step "
                           f"must be the same on every lane (start and stop may differ)", site)
        return step
    if active.min() != active.max():
        raise ctx.fail(f"the step of this range() differs between lanes (from {active.min()} "
                       f"to {active.max()}); a SIMT loop's step must be the same on every lane "
                       f"(start and stop may differ)", site)
    return active[0]


NAMESPACE = {"_codegen_loops": sys.modules[__name__], "_loop_exit": loop_exit,
             "_loop_step": loop_step, "_watchdog": watchdog}
"""Names the generated code of these emitters uses."""


class SimtLoopEmitters:
    """`op_scf_while` and `op_pto_loop_step` (see the module docstring): a part of
    `codegen.KernelCodegen` (`gen.loops`)."""

    def __init__(self, gen: CodegenAPI) -> None:
        self.gen = gen  # the kernel's codegen, which holds this part

    def op_pto_loop_step(self, op: pto.LoopStepOp) -> None:
        gen = self.gen
        gen.emit(f"{gen.name(op.result)} = _loop_step(_ctx, {gen.name(op.step)}, _m, "
                 f"{gen.site(op)})")

    def op_scf_condition(self, op: scf.ConditionOp) -> None:
        raise AssertionError("scf.condition is emitted by op_scf_while")

    def op_scf_while(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block
        condition = before.last_op
        assert isinstance(condition, scf.ConditionOp)
        divergent = condition.condition not in self.gen.an.uniform
        for arg, init in zip(before.args, op.arguments):
            self.gen.regions.transfer(self.gen.name(arg), init)
        saved = self.gen.fresh("ms")
        self.gen.emit(f"{saved} = _m")
        results = list(op.results)
        if divergent:
            for r in results:
                self.gen.emit(f"{self.gen.name(r)} = {self.gen.regions.zero_of(r.type)}")
                if _is_address(r.type):
                    self.gen.emit(f"{self.gen.name(r)}_b = None")
        # the watchdog (watchdog.py): PYPTO_MAX_TRIPS, and the clock under a timeout=
        trips, limit = self.gen.fresh("trips"), self.gen.fresh("limit")
        self.gen.emit(f"{trips} = 0")
        self.gen.emit(f"{limit} = _watchdog.max_trips()")
        self.gen.emit("while True:")
        self.gen.indent += 1
        self.gen.emit(f"{trips} += 1")
        self.gen.emit(f"if {trips} > {limit}:")
        self.gen.emit(f"    raise _watchdog.too_many_trips(_ctx, {self.gen.site(op)}, {limit})")
        self.gen.emit(f"if not {trips} & {watchdog.CLOCK_EVERY - 1} and _watchdog._deadline:")
        self.gen.emit(f"    _watchdog.check_clock(_ctx, {self.gen.site(op)})")
        self.gen.cse.append({})
        for inner in list(before.ops)[:-1]:
            self.gen.op(inner)
        c = self.gen.name(condition.condition)
        if divergent:
            exiting = self.gen.fresh("mx")
            self.gen.emit(f"{exiting} = _mask_andnot(_m, {c})")
            for r, v in zip(results, condition.args):
                rn, vn = self.gen.name(r), self.gen.name(v)
                if _is_address(r.type):
                    self.gen.emit(f"{rn} = _loop_exit({rn}, {vn}, {exiting}, None)")
                    self.gen.emit(f"if {exiting} is not False:")
                    self.gen.emit(f"    {rn}_b = {vn}_b")
                elif isinstance(r.type, pto.TokenType):
                    self.gen.emit(f"if {exiting} is not False:")
                    self.gen.emit(f"    {rn} = {vn}")
                else:
                    dt = self.gen.const(dtypes.np_dtype_of(r.type))
                    self.gen.emit(f"{rn} = _loop_exit({rn}, {vn}, {exiting}, {dt})")
            self.gen.emit(f"_m = _mask_and(_m, {c})")
            self.gen.emit("if _m is False:")
            self.gen.emit("    break")
        else:
            self.gen.emit(f"if not {c}:")
            self.gen.indent += 1
            for r, v in zip(results, condition.args):
                self.gen.regions.transfer(self.gen.name(r), v)
            self.gen.emit("break")
            self.gen.indent -= 1
        for arg, v in zip(after.args, condition.args):
            self.gen.regions.transfer(self.gen.name(arg), v)
        ops = list(after.ops)
        for inner in ops[:-1]:
            self.gen.op(inner)
        self.yield_into(ops[-1], before.args)
        self.gen.cse.pop()
        self.gen.indent -= 1
        self.gen.emit(f"_m = {saved}")

    def yield_into(self, term: Any, args: Any) -> None:
        """Assign a loop body's `scf.yield` operands to the loop's carried values (through
        temporaries: a yield may swap them), with the buffer of each address."""
        if not (isinstance(term, scf.YieldOp) and term.operands):
            return
        temps = [self.gen.fresh("y") for _ in term.operands]
        for tmp, value in zip(temps, term.operands):
            self.gen.regions.transfer(tmp, value)
        for tmp, arg in zip(temps, args):
            self.gen.emit(f"{self.gen.name(arg)} = {tmp}")
            if _is_address(arg.type):
                self.gen.emit(f"{self.gen.name(arg)}_b = {tmp}_b")


def _is_address(t: Any) -> bool:
    return isinstance(t, pto.PtrType | pto.L1BufferType)
