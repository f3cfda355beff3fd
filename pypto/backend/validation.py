"""Per-pass translation validation: run the kernel after every pass and compare with before.

`pto.compile(..., validate=True)` and `pypto-opt --validate` use it. Each kernel `func.func` of
the module is executed by the interpreter (`Executable.run`) on generated inputs before the
pipeline, then again after each pass; the first pass after which any output tensor differs (bit
for bit, NaN equal to NaN) or the kernel fails differently is named, with the first differing
element and the first op of the IR that the pass changed (the likely culprit), and raised as
`TranslationValidationError`.

Inputs are generated, not the user's: for each `!pto.ptr<T, global>` parameter a tensor of
`tensor_elements` random values (floats in [-2, 2), ints in [0, n), bools), each int parameter
gets `n` (the number of lanes: the usual "size" argument), float parameters 1.5. A kernel that
already fails on these inputs before the pipeline cannot be validated: the report says so and
nothing is raised (validation is a check of the passes, not of the kernel).
"""

from __future__ import annotations

import contextlib
import difflib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from pypto import dtypes
from pypto.backend.launch_shape import LaunchShape
from pypto.backend.targets import resolve_target
from pypto.settings import read
from pypto.diagnostics import op_location, source_loc
from pypto.dialects import pto
from pypto.errors import PtoError

SEED = 20261130


class TranslationValidationError(PtoError):
    """A pass changed what a kernel computes (or made it fail): the pass, element and op."""

    def __init__(self, message: str, *, pass_name: str, kernel: str):
        self.pass_name = pass_name
        self.kernel = kernel
        super().__init__(message)


@dataclass
class _Buffer:
    """The tensor-like object `Executable.bind` accepts (`.data`, `.freed`)."""

    data: np.ndarray
    freed: bool = False


@dataclass
class Outcome:
    """What one run produced: every output buffer's final contents, or the error."""

    outputs: list[np.ndarray] = field(default_factory=list)
    error: str | None = None


@dataclass
class Report:
    """What validation did: kernels checked, passes compared, kernels it could not run."""

    kernels: list[str] = field(default_factory=list)
    passes_checked: int = 0
    skipped: list[str] = field(default_factory=list)  # "kernel: why"


def kernel_funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]


def generate_inputs(kernel: func.FuncOp, lanes: int, tensor_elements: int,
                    seed: int = SEED, like: Sequence[Any] | None = None) -> list[Any]:
    """Arguments for `kernel`: random tensors, `lanes` for ints, 1.5 for floats. With `like`
    (the real launch arguments), tensors take their sizes and scalars their values."""
    rng = np.random.default_rng(seed)
    args: list[Any] = []
    for index, t in enumerate(kernel.function_type.inputs.data):
        model = like[index] if like is not None and index < len(like) else None
        if isinstance(t, pto.PtrType):
            npd = dtypes.np_dtype_of(t.element_type)
            size = int(getattr(model, "size", 0) or tensor_elements)
            if npd == np.bool_:
                data = rng.integers(0, 2, size).astype(np.bool_)
            elif npd.kind in "iu":  # nonzero (divisors), small (indices, bins, shifts)
                data = rng.integers(1, max(2, min(lanes, size, 64)), size).astype(npd)
            else:
                data = rng.uniform(-2, 2, size).astype(npd)
            args.append(_Buffer(data))
        else:
            npd = dtypes.np_dtype_of(t)
            if isinstance(model, bool | int | float | np.number):
                args.append(npd.type(model))
            else:
                args.append(npd.type(True) if npd == np.bool_ else
                            npd.type(lanes) if npd.kind in "iu" else npd.type(1.5))
    return args


def _unlaunchable(kernel: func.FuncOp) -> str | None:
    """Why `kernel` cannot be launched with generated arguments (None when it can)."""
    if kernel.function_type.outputs.data:
        return "it returns values (a launched kernel returns nothing)"
    for t in kernel.function_type.inputs.data:
        if isinstance(t, pto.PtrType):
            if t.memory_space.data != "global":
                return f"it has a parameter of type {t} (launches pass HBM pointers)"
            t = t.element_type
        try:
            dtypes.np_dtype_of(t)
        except TypeError:
            return f"it has a parameter of type {t}, which a launch cannot pass"
    return None


def run_once(kernel: func.FuncOp, grid: tuple[int, int, int], block: tuple[int, int, int],
             inputs: Sequence[Any], target: Any = None) -> Outcome:
    """Run `kernel` on a copy of `inputs`; the copies of every tensor afterwards."""
    from pypto.backend.interpreter import Executable

    args = [_Buffer(a.data.copy()) if isinstance(a, _Buffer) else a for a in inputs]
    try:
        # the kernel's pto.printf output belongs to the user's launches, not to these runs
        with contextlib.redirect_stdout(io.StringIO()):
            Executable(kernel, target=target, race_check=False).run(grid, block, args)
    except PtoError as exc:
        return Outcome(error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    except Exception as exc:  # noqa: BLE001 - IR the interpreter cannot run (e.g. pypto-opt
        # input that is no kernel); reported as the outcome, never as a validator crash
        return Outcome(error=f"the interpreter cannot run it ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})")
    return Outcome(outputs=[a.data for a in args if isinstance(a, _Buffer)])


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f" or a.dtype == dtypes.bfloat16.np_dtype:
        af, bf = a.astype(np.float64), b.astype(np.float64)
        return (a.view(np.uint8).reshape(a.size, -1) == b.view(np.uint8).reshape(
            b.size, -1)).all(axis=1) | (np.isnan(af) & np.isnan(bf))
    return a == b


def _first_difference(kernel: func.FuncOp, before: Outcome, after: Outcome) -> str | None:
    if before.error != after.error:
        return (f"before it: {before.error or 'the kernel ran'}; after it: "
                f"{after.error or 'the kernel ran'}")
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)
             if isinstance(a.type, pto.PtrType)]
    for name, x, y in zip(names, before.outputs, after.outputs):
        same = _same(x, y)
        if not same.all():
            at = int(np.argmin(same))
            return (f"tensor '{name}' element {at}: {x[at].item()!r} before the pass, "
                    f"{y[at].item()!r} "
                    f"after it ({int((~same).sum())} element(s) differ)")
    return None


def _ir_lines(kernel: func.FuncOp) -> list[str]:
    from pypto.ir import print_ir

    return print_ir(kernel).splitlines()


def _changed_op(before: list[str], after: list[str], kernel: func.FuncOp) -> str:
    """The first line of the post-pass IR that is not in the pre-pass IR, with its location."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert") and j1 < j2:
            line = after[j1].strip()
            return f"the first op the pass changed is `{line}`{_python_loc(kernel, line)}"
        if tag == "delete":
            return "the pass deleted ops (no op was added or changed)"
    return "the printed IR is unchanged (the difference is in attributes not printed)"


def _python_loc(kernel: func.FuncOp, line: str) -> str:
    name = line.split("=", 1)[1].strip().split(" ")[0] if "=" in line else line.split(" ")[0]
    for op in kernel.walk():
        if op.name == name and source_loc(op) is not None:
            return f" (Python source {op_location(op)})"
    return ""


def validate_pipeline(module: ModuleOp, passes: Sequence[ModulePass], ctx: Context,
                      apply: Callable[[ModuleOp, ModulePass], None], *,
                      block: tuple[int, int, int] = (64, 1, 1), grid: tuple[int, int, int] = (2, 1, 1),
                      tensor_elements: int | None = None, target: Any = None,
                      like: Sequence[Any] | None = None) -> Report:
    """Apply `passes` to `module` one by one with `apply(module, pass)`, running every kernel
    before and after each; raise `TranslationValidationError` at the first pass that changes a
    result. The module ends transformed, as without validation."""
    shape = LaunchShape.of(grid, block, target=resolve_target(target),
                           what="the translation validation's launch (pypto-opt: "
                                "--validate-block N)")
    grid, block, lanes = shape.grid, shape.block, shape.lanes
    elements = tensor_elements if tensor_elements is not None else max(4096, 4 * lanes)
    report = Report()
    references: dict[str, tuple[list[Any], Outcome, list[str], tuple[int, int, int]]] = {}
    for kernel in kernel_funcs(module):
        name = kernel.sym_name.data
        unlaunchable = _unlaunchable(kernel)
        if unlaunchable is not None:
            report.skipped.append(f"{name}: {unlaunchable}")
            continue
        inputs = generate_inputs(kernel, lanes, elements, like=like)
        # kernels sized for one block (a per-block partial result of 1 element) get one block
        for grid_used in dict.fromkeys((grid, (1, 1, 1))):
            outcome = run_once(kernel, grid_used, block, inputs, target)
            if outcome.error is None:
                break
        if outcome.error is not None:
            report.skipped.append(f"{name}: fails on generated inputs before any pass "
                                  f"({outcome.error})")
            continue
        report.kernels.append(name)
        references[name] = (inputs, outcome, _ir_lines(kernel), grid_used)
    for index, module_pass in enumerate(passes):
        apply(module, module_pass)
        report.passes_checked += 1
        for kernel in kernel_funcs(module):
            name = kernel.sym_name.data
            if name not in references:
                continue
            inputs, before, before_ir, grid_used = references[name]
            after = run_once(kernel, grid_used, block, inputs, target)
            after_ir = _ir_lines(kernel)
            difference = _first_difference(kernel, before, after)
            if difference is not None:
                raise TranslationValidationError(
                    f"translation validation: pass '{module_pass.name}' (#{index + 1} of the "
                    f"pipeline) changed what kernel '{name}' computes on generated inputs "
                    f"(grid={grid_used}, block={block}): {difference}; "
                    f"{_changed_op(before_ir, after_ir, kernel)}",
                    pass_name=module_pass.name, kernel=name)
            references[name] = (inputs, before, after_ir, grid_used)
    _log(report)
    return report


LOG_ENV = "PYPTO_VALIDATE_LOG"
"""When set, every validation appends one line per kernel to this file ("checked NAME: N
passes" or "skipped NAME: why"): how the zoo test knows validation really ran."""


def _log(report: Report) -> None:
    path = read(LOG_ENV)  # (not a file in a directory: its `UsageError`, pypto/settings.py)
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as log:
        for name in report.kernels:
            log.write(f"checked {name}: {report.passes_checked} passes\n")
        for skipped in report.skipped:
            log.write(f"skipped {skipped}\n")


__all__ = ["Report", "TranslationValidationError", "generate_inputs", "run_once",
           "validate_pipeline"]
