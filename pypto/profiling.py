"""`pto.profile()`: modelled cycles of one launch (docs/cost-model.md#quick-start).

The kernel is compiled for the model's IR level (`table`: the pto level, as the simulator's
latency table sees it; `fused`: the npu firmware level, after `convert-pto-to-npu` and
`npu-fuse-load-mma`), run once by the one executor with the `Trace` instrument attached (so the
launch really executes: output tensors are written, as under a hardware profiler), and the trace
is costed by `pypto.backend.cost_model` — through `run_and_cost`, the entry point
`pypto-opt --emit=cost|timeline|trace` and the debugger's timeline use as well.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pypto.backend.targets import Target, resolve_target
from pypto.backend.launch_shape import LaunchShape
from pypto.compiler import DEFAULT_PIPELINE, compile
from pypto.errors import public_api

if TYPE_CHECKING:
    from pypto.backend.cost_model import Profile


def model_pipeline(model: str, target: Target, pipeline: str | None = None) -> str:
    """The pass pipeline that produces the IR level a model costs: `pipeline` (default: the
    default pipeline) and, for `model="fused"`, the lowering to the npu level with load/mma
    fusion when `pipeline` does not lower already — the same passes `pypto-opt --emit=cost
    --model fused` appends to a pto-level file (`pypto.backend.cost_model.run.model_lowering`),
    so the API and the CLI cost the same IR."""
    from pypto.backend.cost_model.run import model_lowering

    text = DEFAULT_PIPELINE if pipeline is None else pipeline
    if model != "fused":
        return _double_buffer_for(model, text)
    if lowers_to_npu(text):
        return text
    lowering = model_lowering(target)
    return f"{text},{lowering}" if text.strip() else lowering


@functools.lru_cache(maxsize=64)
def _double_buffer_for(model: str, text: str) -> str:
    """`text` with `pto-double-buffer` choosing its schedule under `model` (it costs its
    candidates under "fused" unless told: docs/passes.md#choosing-by-the-cost-model)."""
    from pypto.passes import parse_pipeline, pass_text

    try:
        passes = parse_pipeline(text)
    except Exception:  # noqa: BLE001 - a bad pipeline: compile() reports it with the fix
        return text
    if not any(p.name == "pto-double-buffer" and getattr(p, "model", model) == "fused"
               for p in passes):
        return text
    return ",".join(pass_text(dataclasses.replace(p, model=model))
                    if p.name == "pto-double-buffer" and p.model == "fused"  # type: ignore
                    else pass_text(p) for p in passes)


@functools.lru_cache(maxsize=64)
def lowers_to_npu(text: str) -> bool:
    """Does the pipeline `text` lower to the npu level itself (`convert-pto-to-npu`)?"""
    from pypto.passes import parse_pipeline

    try:
        return any(p.name == "convert-pto-to-npu" for p in parse_pipeline(text))
    except Exception:  # noqa: BLE001 - a bad pipeline: compile() reports it with the fix
        return False


@public_api
def profile(kernel: Any, *, grid: Any, block: Any, args: Sequence[Any], model: str = "fused",
            pipeline: str | None = None, target: Target | str | None = None) -> Profile:
    """Model the cycles of `kernel` launched on `grid` x `block` with `args`.

    `model="fused"` (default) is the firmware's view: npu-level IR with load/mma fusion and the
    firmware's latencies; `model="table"` the simulator's per-instruction table at the pto
    level (the article's pitfall 1 is the difference). `pipeline` replaces the passes run
    before costing; under `model="fused"` a pipeline that stays at the pto level is followed
    by the lowering to the npu level (`convert-pto-to-npu`, `npu-fuse-load-mma`), exactly as
    `pypto-opt --emit=cost --model fused` lowers a pto-level file. `target` is a `Target` or a
    TOML file merged over the default target (calibration).
    """
    # the cost model is imported at the first profile, not by `import pypto` (~8 ms)
    from pypto.backend.cost_model import MODELS, ModelError, ModelParams

    if model not in MODELS:
        raise ModelError(f"unknown cost model {model!r}; models: {', '.join(MODELS)}")
    resolved = resolve_target(target)
    params = ModelParams.of(resolved, model)
    name = getattr(kernel, "name", "?")
    shape = LaunchShape.of(grid, block, kernel=name, target=resolved,
                           what=f"pto.profile of kernel '{name}'")
    base = DEFAULT_PIPELINE if pipeline is None else pipeline
    text = model_pipeline(model, resolved, pipeline)
    from pypto.runtime.host_arrays import has_host_arrays, stage_host_arrays

    if has_host_arrays(args):  # NumPy arrays: copied in, and back after the traced run
        with stage_host_arrays(args, entry=f"pto.profile of kernel '{name}'",
                               kernel=kernel) as staged:
            return _profile(kernel, shape, staged.args, params, resolved, base, text)
    return _profile(kernel, shape, args, params, resolved, base, text)


def _profile(kernel: Any, shape: LaunchShape, args: Sequence[Any], params: Any,
             resolved: Target, base: str, text: str) -> Profile:
    """Compile, run once traced and cost (`profile` once its arguments are device values)."""
    from pypto.backend.cost_model.run import run_and_cost

    block3 = shape.block
    compiled = compile(kernel, args=args, block=block3, pipeline=text, target=resolved)

    def pto_level() -> Any:
        """The kernel before the lowering added here: the same results (the interpreter's
        guarantee across levels), and a faster plain run for the untraced launch."""
        return compile(kernel, args=args, block=block3, pipeline=base,
                       target=resolved).executable

    from pypto.runtime import sync

    sync()  # earlier launches on the tensors complete first, as under a device profiler
    return run_and_cost(compiled.executable, shape.grid, block3, tuple(args), params,
                        launch=pto_level if text != base else None)
