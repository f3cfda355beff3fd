"""`pto.profile()`: modelled cycles of one launch (SPEC §3, §6).

The kernel is compiled for the model's IR level (`table`: the pto level, as the simulator's
latency table sees it; `fused`: the npu firmware level, after `convert-pto-to-npu` and
`npu-fuse-load-mma`), run once by the one executor with the `Trace` instrument attached (so the
launch really executes: output tensors are written, as under a hardware profiler), and the trace
is costed by `pypto.backend.cost_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pypto.backend.targets import Target, resolve_target
from pypto.backend.launch_shape import check_launch_shape
from pypto.compiler import DEFAULT_PIPELINE, compile

if TYPE_CHECKING:
    from pypto.backend.cost_model import Profile


def model_pipeline(model: str, target: Target) -> str:
    """The pass pipeline that produces the IR level a model costs."""
    if model == "table":
        return DEFAULT_PIPELINE
    fuse = "npu-fuse-load-mma"
    if target.path and not target.path.endswith("default.toml"):
        fuse += "{target=" + _quoted(target.path) + "}"
    return f"{DEFAULT_PIPELINE},convert-pto-to-npu,{fuse}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(kernel: Any, *, grid: Any, block: Any, args: Sequence[Any], model: str = "fused",
            pipeline: str | None = None, target: Target | str | None = None) -> Profile:
    """Model the cycles of `kernel` launched on `grid` x `block` with `args`.

    `model="fused"` (default) is the firmware's view: npu-level IR with load/mma fusion and the
    firmware's latencies; `model="table"` the simulator's per-instruction table at the pto
    level (the article's pitfall 1 is the difference). `pipeline` overrides the passes run
    before costing (the model's latencies then apply to whatever IR it produces); `target` is a
    `Target` or a TOML file merged over the default target (calibration).
    """
    # the cost model is imported at the first profile, not by `import pypto` (~8 ms)
    from pypto.backend.cost_model import MODELS, ModelError, ModelParams, build_profile
    from pypto.backend.cost_model.trace import CostTrace

    if model not in MODELS:
        raise ModelError(f"unknown cost model {model!r}; models: {', '.join(MODELS)}")
    resolved = resolve_target(target)
    params = ModelParams.of(resolved, model)
    grid3, block3 = check_launch_shape(grid, block, kernel=getattr(kernel, "name", "?"),
                                       target=resolved,
                                       what=f"pto.profile of kernel '{getattr(kernel, 'name', '?')}'")
    text = model_pipeline(model, resolved) if pipeline is None else pipeline
    compiled = compile(kernel, args=args, block=block3, pipeline=text, target=resolved)
    from pypto.runtime import sync

    sync()  # earlier launches on the tensors complete first, as under a device profiler
    trace = CostTrace()
    compiled.executable.run(grid3, block3, tuple(args), instrument=trace)
    sizes = {i: int(a.nbytes) for i, a in enumerate(args)
             if hasattr(a, "nbytes") and hasattr(a, "freed")}
    return build_profile(compiled.name, grid3, block3, params, trace.table,
                         trace.block_classes(), sizes)
