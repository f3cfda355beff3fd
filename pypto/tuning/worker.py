"""The tasks an executor runs: profile one config, run the reference, check one config.

Module-level functions of picklable arguments (`Job`, see `pypto.tuning.shipping`), so that any
`concurrent.futures.Executor` can run them: this process, threads, processes, Dask workers.
A task catches what a config does wrong and returns it as a record; only a failure to set the
task up at all (the kernel cannot be found in the worker) is raised, and stops the sweep.

Within one process the tasks take a lock: pypto's runtime drains one queue at a time and a
kernel's compiled variants are cached on the kernel object, so a thread pool runs the tasks
one after another (it gives no speed-up; processes and Dask workers do).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.backend.targets import Target
from pypto.errors import (
    CompileError,
    KernelError,
    L1CapacityError,
    LaunchError,
    PtoError,
)
from pypto.tuning.shipping import HostArgs, KernelRef, read_back

_LOCK = threading.RLock()

# statuses of a config (the table's `status` column)
OK = "ok"
DOES_NOT_COMPILE = "does not compile"
L1_TOO_SMALL = "L1 too small"
REFUSED = "refused by a pass"
BAD_LAUNCH = "bad launch"
RUN_ERROR = "fails at run time"
WRONG = "wrong results"
INTERNAL = "internal error"


@dataclass(frozen=True)
class Job:
    """One config's launch, by value."""

    index: int
    kernel: KernelRef
    config: dict[str, Any]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: HostArgs
    launch_pipeline: str        # the pto-level pipeline a launch of the winner compiles with
    model_pipeline: str         # the pipeline `pto.profile` costs (the model's IR level)
    stages: int | None          # the stages the config asks pto-double-buffer for
    model: str
    target: Target


@dataclass(frozen=True)
class Outcome:
    """What profiling one config gave (cached on disk as JSON, so plain values only)."""

    status: str
    cycles: int | None = None
    bound: str = ""
    l1_peak: int | None = None
    reason: str = ""
    seconds: float = field(default=0.0, compare=False)      # wall time of the task
    cpu_seconds: float = field(default=0.0, compare=False)  # its thread's CPU time

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "cycles": self.cycles, "bound": self.bound,
                "l1_peak": self.l1_peak, "reason": self.reason, "seconds": self.seconds,
                "cpu_seconds": self.cpu_seconds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(data["status"], data["cycles"], data["bound"], data["l1_peak"],
                   data["reason"], data.get("seconds", 0.0), data.get("cpu_seconds", 0.0))


def profile_config(job: Job) -> Outcome:
    """Compile the config for the model's IR level (its L1 peak, whether a pass refused its
    options) and profile it on fresh copies of the inputs."""
    kernel = job.kernel.resolve()
    start, cpu = time.perf_counter(), time.thread_time()
    with _LOCK:
        try:
            outcome = _profile(kernel, job)
        except L1CapacityError as err:
            outcome = Outcome(L1_TOO_SMALL, reason=_first_line(err))
        except CompileError as err:
            outcome = Outcome(DOES_NOT_COMPILE, reason=_first_line(err))
        except LaunchError as err:
            outcome = Outcome(BAD_LAUNCH, reason=_first_line(err))
        except KernelError as err:
            outcome = Outcome(RUN_ERROR, reason=_first_line(err))
        except PtoError as err:
            outcome = Outcome(DOES_NOT_COMPILE, reason=f"{type(err).__name__}: {_first_line(err)}")
        except Exception as err:  # a pypto bug: listed (and not cached), the sweep goes on
            outcome = Outcome(INTERNAL, reason=f"{type(err).__name__}: {err} (a pypto bug, "
                                               f"please report it)")
    return Outcome(outcome.status, outcome.cycles, outcome.bound, outcome.l1_peak,
                   outcome.reason, time.perf_counter() - start, time.thread_time() - cpu)


def _profile(kernel: Any, job: Job) -> Outcome:
    from pypto.compiler import compile
    from pypto.profiling import profile

    with job.args.on_device() as args:
        # the compile `profile` does next, done first to read the L1 peak and the remarks
        ck = compile(kernel, args=args, block=job.block, pipeline=job.model_pipeline,
                     target=job.target)
        refusal = _refusal(ck, job.stages)
        peak = ck.l1_map().peak
        if refusal:
            return Outcome(REFUSED, l1_peak=peak, reason=refusal)
        prof = profile(kernel, grid=job.grid, block=job.block, args=args, model=job.model,
                       pipeline=job.model_pipeline, target=job.target)
        return Outcome(OK, int(prof.total_cycles), binding_resource(prof), peak)


def binding_resource(prof: Any) -> str:
    """What bounds the modelled time: HBM bandwidth (the roofline), or the busiest pipe."""
    if prof.roofline_cycles > prof.compute_cycles:
        return "HBM bandwidth"
    use = prof.utilization()
    pipe = max(use, key=lambda p: (use[p], p))
    return f"{pipe} {100 * use[pipe]:.0f}%"


def _refusal(ck: Any, stages: int | None) -> str:
    """Why pto-double-buffer did not give the config the stages it asks for ('' if it did)."""
    if stages is None or stages < 2:
        return ""
    from pypto.analysis.l1_liveness import SLOTS_ATTR
    from pypto.dialects import pto

    slots = [op.attributes[SLOTS_ATTR] for op in ck.module.walk()
             if isinstance(op, pto.AllocLocalOp) and SLOTS_ATTR in op.attributes]
    got = max((int(s.value.data) for s in slots), default=1)
    if got >= stages:
        return ""
    said = [r.message for r in ck.remarks if r.message.startswith("pto-double-buffer")
            and "slots for" not in r.message]
    if said:
        return "; ".join(said)
    return (f"pto-double-buffer found no pipelined loop to give {stages} stages (the kernel "
            f"runs single-buffered)")


def reference_outputs(job: Job) -> dict[int, np.ndarray]:
    """Run the reference config on the interpreter (as `pto.launch` of it would) on fresh
    copies of the inputs; the tensors it changed, by argument position."""
    kernel = job.kernel.resolve()
    with _LOCK:
        outputs = _run(kernel, job)
    inputs = job.args.values
    return {i: out for i, out in outputs.items() if out.tobytes() != inputs[i].data.tobytes()}


def check_config(job: Job, reference: Job, expected: dict[int, np.ndarray],
                 tolerances: dict[str, tuple[float, float]]) -> str:
    """Run `job` on the interpreter on fresh copies of the inputs and compare every tensor
    argument with the reference's (`expected`: what the reference changed; the others must
    keep their input contents). '' when they match, else the first differing element."""
    kernel = job.kernel.resolve()
    with _LOCK:
        try:
            outputs = _run(kernel, job)
        except PtoError as err:
            return f"fails on the interpreter: {_first_line(err)}"
    for i, got in outputs.items():
        want = expected.get(i, reference.args.values[i].data)
        problem = compare(got, want, tolerances, kernel.params[i], i, reference.config)
        if problem:
            return problem
    return ""


def _run(kernel: Any, job: Job) -> dict[int, np.ndarray]:
    from pypto.compiler import compile

    with job.args.on_device() as args:
        ck = compile(kernel, args=args, block=job.block, pipeline=job.launch_pipeline,
                     target=job.target)
        ck.execute(job.grid, job.block, args, "interpreter")  # the check runs on the oracle
        return read_back(args)


DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}
"""(rtol, atol) per float dtype, as `torch.testing.assert_close` chooses them, except float32's
rtol (1e-4, not 1.3e-6): configs that change a reduction's order (another tile_k) legitimately
round float32 sums differently by more than a few ulps (seen: 3e-5 relative over K=128). Integers
and booleans must be equal."""


def compare(got: np.ndarray, want: np.ndarray, tolerances: dict[str, tuple[float, float]],
            param: str, position: int, reference: dict[str, Any]) -> str:
    """'' when `got` matches `want`, else the first differing element, both values and how
    many differ."""
    if _is_float(got):
        rtol, atol = tolerances.get(got.dtype.name, DEFAULT_TOLERANCES["float32"])
        g, w = got.astype(np.float64), want.astype(np.float64)
        close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        rule = f" (rtol={rtol:g}, atol={atol:g})"
    else:
        close = got == want
        rule = ""
    if close.all():
        return ""
    bad = np.flatnonzero(~close)
    first = int(bad[0])
    return (f"tensor '{param}' (argument {position}) element {first} is {_scalar(got, first)!r}, "
            f"the reference config {reference} gives {_scalar(want, first)!r}; {bad.size} of {got.size} "
            f"elements differ{rule}")


def _scalar(a: np.ndarray, i: int) -> Any:
    return float(a[i]) if _is_float(a) else a[i].item()


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
