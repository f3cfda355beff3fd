"""`pypto-opt --emit=cost|timeline|trace`: the cost model's outputs for a `.mlir` file.

The kernel (the only `pto.kernel` function, or `--kernel NAME`) is run once by the executor with
the trace instrument on generated inputs — pointer parameters get zero-filled tensors of
`--arg NAME=ELEMENTS` elements (default: one per lane of the launch), integer parameters
`--arg NAME=VALUE` (default: the lanes of the launch, the usual `n`), float parameters 1.0 —
unless the IR carries the launch `pto.compile` recorded (`pypto.ir.LAUNCH_ATTR`): then the block
and the arguments the command line does not give are that launch's — and the trace is costed
by `run_and_cost`, the entry point `pto.profile()` uses. With
`--model=fused` (the default) IR that is still at the pto level is first lowered with the
passes `pto.profile(model="fused", pipeline=...)` appends (`model_lowering`: `convert-pto-to-npu`
for the launch's block, `npu-fuse-load-mma` with the target's rules), so the two give the same
figure for the same kernel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, IntegerType, ModuleOp

from pypto import dtypes
from pypto.backend.cost_model import ModelParams
from pypto.backend.cost_model.run import is_npu_level, model_lowering, run_and_cost
from pypto.backend.interpreter import Executable
from pypto.backend.launch_shape import LaunchShape
from pypto.backend.targets import Target, resolve_target
from pypto.dialects import pto
from pypto.errors import KernelError
from pypto.ir import LAUNCH_ATTR, recorded_launch

EMITS = ("mlir", "cost", "timeline", "trace")


class EmitError(Exception):
    """Bad cost options or a kernel that cannot be traced; the message says what to do."""


class _HostTensor:
    """A zero-filled stand-in for a device tensor (what the executor binds to a pointer)."""

    def __init__(self, data: np.ndarray):
        self.data = data
        self.freed = False


def parse_dims(text: str | None, what: str) -> tuple[int, ...]:
    """The integers of `--grid` / `--block` text (`4`, `4,2,1`, `4x2`); the `LaunchShape`
    made from them checks their number and signs."""
    if text is None:
        return (1, 1, 1)
    try:
        return tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
    except ValueError:
        raise EmitError(f"--{what} takes 1 to 3 positive integers like 4 or 4,2,1; got "
                        f"{text!r}") from None


def model_lowering_passes(shape: LaunchShape, target: Target) -> list[Any]:
    """`model_lowering`'s passes for IR that `pto.compile` does not compile (a pto-level
    file): parsed, with the launch's block set on the block-shaped ones, as `pto.compile`
    sets it for `pto.profile`."""
    from pypto.passes import parse_pipeline

    passes = parse_pipeline(model_lowering(target))
    return [dataclasses.replace(p, block_dims=shape.block)
            if getattr(p, "block_dims", None) == () else p for p in passes]


def _kernel(module: ModuleOp, name: str | None) -> func.FuncOp:
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp)
               and pto.KERNEL_ATTR in op.attributes and op.body.blocks]
    names = [k.sym_name.data for k in kernels]
    if name is not None:
        for k in kernels:
            if k.sym_name.data == name:
                return k
        raise EmitError(f"no kernel named '{name}'; kernels: {', '.join(names) or 'none'}")
    if len(kernels) != 1:
        raise EmitError("the cost outputs need exactly one kernel (a func.func with "
                        "{pto.kernel}); " + (f"found {', '.join(names)}: choose one with "
                                              f"--kernel NAME" if kernels else "found none"))
    return kernels[0]


def _arguments(kernel: func.FuncOp, values: dict[str, str], lanes: int) -> list[Any]:
    args: list[Any] = []
    params = list(kernel.body.block.args)
    known = {a.name_hint or f"arg{i}" for i, a in enumerate(params)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise EmitError(f"--arg names no parameter of '{kernel.sym_name.data}': "
                        f"{', '.join(unknown)}; parameters: {', '.join(sorted(known))}")
    for i, arg in enumerate(params):
        name = arg.name_hint or f"arg{i}"
        given = values.get(name)
        t = arg.type
        try:
            if isinstance(t, pto.PtrType):
                count = int(given) if given is not None else lanes
                if count < 0:
                    raise EmitError(f"--arg {name}={given}: a pointer's value is its tensor's "
                                    f"element count, which cannot be negative")
                try:
                    array = np.zeros(count, dtypes.np_dtype_of(t.element_type))
                except (MemoryError, OverflowError):
                    raise EmitError(f"--arg {name}={given}: a tensor of {count} elements "
                                    f"cannot be allocated on this machine; give a smaller "
                                    f"size") from None
                args.append(_HostTensor(array))
            elif isinstance(t, IntegerType):
                value = int(given) if given is not None else lanes
                if not -(2**63) <= value < 2**63:
                    raise EmitError(f"--arg {name}={given}: does not fit in int64 (the widest "
                                    f"kernel integer)")
                args.append(value)
            elif isinstance(t, AnyFloat):
                args.append(float(given) if given is not None else 1.0)
            else:
                raise EmitError(f"parameter '{name}' has type {t}, which the cost outputs "
                                f"cannot generate")
        except ValueError:
            raise EmitError(f"--arg {name}={given}: not a number") from None
    return args


def emit(module: ModuleOp, kind: str, *, grid: str | None, block: str | None, model: str,
         target: str | None, arg_values: Sequence[str], kernel_name: str | None) -> str:
    """The `kind` output for `module` (raises EmitError / PtoError with a user message)."""
    resolved = resolve_target(target)
    params = ModelParams.of(resolved, model)
    grid_dims, block_dims = parse_dims(grid, "grid"), parse_dims(block, "block")
    values: dict[str, str] = {}
    for item in arg_values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise EmitError(f"--arg takes NAME=VALUE, got {item!r}")
        values[name] = value
    kernel = _kernel(module, kernel_name)
    recorded = recorded_launch(module)
    launch_note = ""
    if recorded is not None and (not values or block is None):
        # what pto.compile specialised this IR for (pypto.ir.LAUNCH_ATTR), for what the
        # command line does not give
        taken: list[str] = []
        if block is None:
            block_dims = recorded[0]
            taken.append(f"block={','.join(map(str, block_dims))}")
        if not values:
            values = dict(recorded[1])
            taken += [f"{k}={v}" for k, v in values.items()]
        launch_note = (f"# from the launch pto.compile recorded ({LAUNCH_ATTR}): "
                       f"{' '.join(taken)}\n")
    shape = LaunchShape.of(grid_dims, block_dims, kernel=kernel.sym_name.data, target=resolved,
                           what=f"--grid/--block of kernel '{kernel.sym_name.data}'")
    grid3, block3 = shape.grid, shape.block
    note = ""
    if model == "fused" and not is_npu_level(kernel.walk()):
        from pypto.ir import make_context
        from pypto.passes import pass_text, run_pipeline

        passes = model_lowering_passes(shape, resolved)
        run_pipeline(module, passes, make_context())
        text = ",".join(pass_text(p) for p in passes)
        note = f"# the pto-level input was lowered first: {text}\n"
    note = launch_note + note
    lanes_total = shape.lanes
    args = _arguments(kernel, values, lanes_total)
    try:
        # stdout carries the machine output alone (JSON, the table): the kernel's pto.printf
        # lines go to stderr (docs/pypto-opt.md)
        with contextlib.redirect_stdout(sys.stderr):
            prof = run_and_cost(Executable(kernel, target=resolved), grid3, block3, args, params)
    except KernelError as err:
        raise EmitError(f"running the kernel on generated inputs failed: {err}; give the sizes "
                        f"and values it needs with --arg NAME=VALUE (a pointer's tensor "
                        f"elements, or a scalar)") from None
    if kind == "timeline":
        header, rest = prof.to_text().split("\n", 1)
        return header + "\n" + note + rest
    if kind == "trace":
        return json.dumps(prof.to_chrome_trace(), indent=1) + "\n"
    lines = [f"# {prof.header}", note.rstrip("\n"), f"total_cycles: {prof.total_cycles}",
             f"# {prof.summary()}", str(prof.cycle_breakdown()).split("\n", 1)[-1],
             "utilization: " + ", ".join(f"{p} {u:.1%}" for p, u in prof.utilization().items())]
    bubbles = prof.bubbles()
    lines += [f"bubble: {b}" for b in bubbles[:10]]
    return "\n".join(line for line in lines if line) + "\n"
