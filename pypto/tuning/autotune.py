"""`pto.autotune` (docs/autotune.md): configs ranked by the cost model, checked on the interpreter.

The sweep, step by step (docs/autotune.md):

1. Every config is turned into a `Job` in this process: its kernel-parameter values bound into
   the launch arguments, its pass options written into the pass pipelines, its grid and block
   computed (they may be callables of the config) and checked. The tensor arguments are copied
   to the host once (`pypto.tuning.shipping`): jobs carry those copies, never device tensors.
2. Jobs whose result is in the disk cache are not run. The others are profiled by
   `pypto.tuning.worker.profile_config` — here, one after another (`executor=None`), or on any
   `concurrent.futures.Executor` (threads, processes, a Dask `Client.get_executor()`).
3. The valid configs are ranked by modelled cycles (ties: the earlier config). The first valid
   config in the given order is the *reference*. The winner (`check="winner"`; every valid
   config with `check="all"`) runs on the interpreter, as its `launch_args` would launch it, on
   copies of the same inputs, and every tensor argument is compared with the reference's: a
   config whose results differ by more than the tolerances and the rounding bound of a K-term
   sum is rejected ("wrong results", naming the first differing element) and the next best is
   checked (docs/autotune.md#the-interpreter-check).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pypto.backend.launch_shape import LaunchShape
from pypto.backend.targets import Target, resolve_target
from pypto.compiler import DEFAULT_PIPELINE
from pypto.errors import LaunchError, PtoError, UsageError
from pypto.frontend.kernel import Kernel
from pypto.profiling import model_pipeline
from pypto.tuning.cache import DiskCache, default_cache_dir, digest, pypto_digest, target_digest
from pypto.tuning.result import Record, TuneResult, TuneStats
from pypto.tuning.shipping import HostArgs, KernelRef, TensorArg, kernel_fingerprint, snapshot
from pypto.tuning.worker import (
    BAD_LAUNCH,
    DEFAULT_TOLERANCES,
    DOES_NOT_COMPILE,
    INTERNAL,
    WRONG,
    Job,
    Outcome,
    check_config,
    profile_config,
    reference_outputs,
)

PASS_OPTION_ALIASES = {"stages": ("pto-double-buffer", "stages")}
"""Config keys that set a pass option (`stages` -> `pto-double-buffer{stages=N}`). Any option
of a pass in the pipeline can also be set as `"pass-name.option"`."""

CHECKS = ("winner", "all")


def autotune(kernel: Kernel, configs: Iterable[Mapping[str, Any]], *, grid: Any, block: Any,
             args: Sequence[Any], model: str = "fused", check: str = "winner",
             executor: cf.Executor | None = None, cache: bool | str | Path = True,
             target: Target | str | None = None, rtol: float | None = None,
             atol: float | None = None, reduction: int | None = None,
             progress: bool | None = None) -> TuneResult:
    """Profile `kernel` under every config, rank by modelled cycles, check on the interpreter.

    `configs`: dicts binding kernel parameters (`{"tile_m": 128, ...}`: compile-time sizes or
    any scalar parameter) and pass options (`"stages": 3` -> `pto-double-buffer{stages=3}`;
    `"pass-name.option": value` for any pass of the pipeline). `args`: the launch arguments —
    either the parameters the configs do not bind, in order, or all of them (the configs'
    values then replace theirs). `grid`, `block`: as for `pto.launch`, or callables of the
    config returning one. `model`: the cost model that ranks ("fused" or "table").
    `check="winner"` runs the winner on the interpreter against the first valid config (the
    reference) on the same inputs; `check="all"` every valid config. Float results compare
    within `rtol` / `atol` (default per dtype, as `torch.testing.assert_close`) or within the
    rounding bound of a `reduction`-term sum (default: the largest integer argument; see
    docs/autotune.md#the-interpreter-check), others equal.
    `executor`: None (here, one after another) or any `concurrent.futures.Executor`; the
    result is the same whatever runs it. `cache`: True (the user cache directory, or
    `$PYPTO_CACHE_DIR`), a directory, or False. `progress`: a progress bar (tqdm) — None shows
    it on a terminal only. The tensors in `args` are only read (copied once, see
    docs/autotune.md); no config writes them.

    Returns a `TuneResult` (`.config`, `.cycles`, `.launch_args`, `.table()`, `.plot(path)`).
    Raises `PtoError` with the table when no config is valid.
    """
    started = time.perf_counter()
    if not isinstance(kernel, Kernel):
        raise UsageError(f"pto.autotune expects a @pto.kernel function, got {kernel!r}")
    from pypto.backend.cost_model import MODELS, ModelError

    if model not in MODELS:
        raise ModelError(f"unknown cost model {model!r}; models: {', '.join(MODELS)}")
    if check not in CHECKS:
        raise UsageError(f"pto.autotune: check must be one of {', '.join(map(repr, CHECKS))}, "
                         f"got {check!r}")
    if executor is not None and not isinstance(executor, cf.Executor) and \
            not callable(getattr(executor, "submit", None)):
        raise UsageError(f"pto.autotune: executor must be None or a concurrent.futures."
                         f"Executor (for Dask: client.get_executor()), got {executor!r}")
    config_list = _configs(kernel, configs)
    resolved = resolve_target(target)
    store = _store(cache)
    tolerances = _tolerances(rtol, atol)
    if reduction is not None and (isinstance(reduction, bool) or not isinstance(reduction, int)
                                  or reduction < 1):
        raise UsageError(f"pto.autotune: reduction must be a positive int (the length K of the "
                         f"longest sum the kernel computes), got {reduction!r}")

    bound = _bound_params(kernel, config_list)
    full = _full_args(kernel, args, bound)
    base = snapshot(kernel, full, skip=_UNBOUND)
    ref = KernelRef.of(kernel)
    common = {
        "kernel": kernel_fingerprint(kernel), "model": model, "target": target_digest(resolved),
        "pypto": pypto_digest(),
        "tensors": _tensor_key(base),
    }

    records: dict[int, Record] = {}
    jobs: dict[int, Job] = {}
    keys: dict[int, str] = {}
    for index, config in enumerate(config_list):
        job = _job(kernel, ref, index, config, base, grid, block, model, resolved)
        if isinstance(job, Record):  # rejected before anything runs (a bad launch shape)
            records[index] = job
        else:
            jobs[index] = job
            keys[index] = digest("profile", common, _job_key(job))
    profiled = _profile_all(kernel, jobs, keys, store, executor, progress, len(config_list))
    records.update(profiled.records)
    done = [records[i] for i in range(len(config_list))]
    valid = [r for r in done if r.ok]
    if not valid:
        _no_valid_config(kernel, done)
    checks = _Checks(executor, store, jobs, keys, valid[0], tolerances, reduction)
    done, winner = checks.pick(done, valid, check)
    reference = done[valid[0].index]
    win_job = jobs[winner.index]
    launch_args = {
        "grid": win_job.grid, "block": win_job.block,
        "args": tuple(winner.config[p] if v is _UNBOUND else v
                      for p, v in zip(kernel.params, _user_args(full, args))),
        "pipeline": win_job.launch_pipeline,
    }
    stats = TuneStats(configs=len(done), profiled=profiled.ran, cached=profiled.cached,
                      checks=checks.count, seconds=time.perf_counter() - started,
                      task_seconds=profiled.seconds, task_cpu_seconds=profiled.cpu_seconds,
                      check_seconds=checks.seconds)
    return TuneResult(kernel, done, winner, reference, launch_args, stats, model)


# --- configs and arguments ----------------------------------------------------------------------

class _Unbound:
    def __repr__(self) -> str:
        return "<bound by the config>"


_UNBOUND: Any = _Unbound()


def _configs(kernel: Kernel, configs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(configs, Mapping) or not isinstance(configs, Iterable):
        raise UsageError(f"pto.autotune of kernel '{kernel.name}': configs must be a list of "
                         f"dicts such as [{{'tile_m': 64, 'stages': 2}}, ...], got "
                         f"{type(configs).__name__}")
    out = []
    for i, config in enumerate(configs):
        if not isinstance(config, Mapping):
            raise UsageError(f"pto.autotune of kernel '{kernel.name}': config {i} is "
                             f"{type(config).__name__} {config!r}, not a dict")
        clean = {}
        for key, value in config.items():
            if not isinstance(key, str):
                raise UsageError(f"pto.autotune: config {i} has a key {key!r} that is not a "
                                 f"string")
            if isinstance(value, np.generic):
                value = value.item()
            if not isinstance(value, bool | int | float):
                raise UsageError(f"pto.autotune: config {i} sets {key!r} to "
                                 f"{type(value).__name__} {value!r}; config values are ints, "
                                 f"floats or bools")
            clean[key] = value
        out.append(clean)
    if not out:
        raise UsageError(f"pto.autotune of kernel '{kernel.name}': configs is empty; give at "
                         f"least one config")
    params = set(kernel.params)
    for i, config in enumerate(out):
        for key in config:
            if key in params or key in PASS_OPTION_ALIASES or "." in key:
                continue
            raise UsageError(f"pto.autotune of kernel '{kernel.name}': config {i} has the key "
                             f"{key!r}, which is neither a parameter of the kernel "
                             f"({', '.join(kernel.params)}) nor a pass option "
                             f"({', '.join(PASS_OPTION_ALIASES)}, or 'pass-name.option')")
    return out


def _bound_params(kernel: Kernel, configs: list[dict[str, Any]]) -> list[str]:
    """The kernel parameters the configs bind, in parameter order."""
    named = {k for c in configs for k in c if k in kernel.params}
    return [p for p in kernel.params if p in named]


def _full_args(kernel: Kernel, args: Sequence[Any], bound: list[str]) -> list[Any]:
    """The launch arguments with `_UNBOUND` where a config binds the parameter."""
    if not isinstance(args, tuple | list):
        raise LaunchError(f"pto.autotune of kernel '{kernel.name}': args must be a tuple of the "
                          f"launch arguments, got {type(args).__name__}")
    n, free = kernel.num_params, [p for p in kernel.params if p not in bound]
    if len(args) == n:
        return [_UNBOUND if p in bound else a for p, a in zip(kernel.params, args)]
    if len(args) == len(free):
        given = iter(args)
        return [_UNBOUND if p in bound else next(given) for p in kernel.params]
    raise LaunchError(f"pto.autotune of kernel '{kernel.name}': args has {len(args)} values; "
                      f"give the {len(free)} parameters the configs do not bind "
                      f"({', '.join(free) or 'none'}) or all {n} ({', '.join(kernel.params)})")


def _user_args(full: list[Any], args: Sequence[Any]) -> list[Any]:
    """The user's own argument objects, at their parameter positions (`_UNBOUND` elsewhere)."""
    if len(args) == len(full):
        return [_UNBOUND if f is _UNBOUND else a for f, a in zip(full, args)]
    given = iter(args)
    return [_UNBOUND if f is _UNBOUND else next(given) for f in full]


def _tensor_key(base: list[Any]) -> list[Any]:
    """Per tensor argument: its contents' digest and the first position holding the same
    tensor (aliased arguments run differently from equal copies)."""
    digests: dict[int, str] = {}
    first: dict[int, int] = {}
    out = []
    for i, v in enumerate(base):
        if isinstance(v, TensorArg):
            if id(v) not in digests:
                digests[id(v)], first[id(v)] = v.digest(), i
            out.append([i, digests[id(v)], first[id(v)]])
    return out


def _tolerances(rtol: float | None, atol: float | None) -> dict[str, tuple[float, float]]:
    out = dict(DEFAULT_TOLERANCES)
    if rtol is not None or atol is not None:
        for name, (r, a) in out.items():
            out[name] = (r if rtol is None else float(rtol), a if atol is None else float(atol))
    return out


def _store(cache: bool | str | Path) -> DiskCache | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        return DiskCache(default_cache_dir())
    if isinstance(cache, str | Path):
        return DiskCache(Path(cache).expanduser())
    raise UsageError(f"pto.autotune: cache must be True, False or a directory, got {cache!r}")


# --- one job per config -------------------------------------------------------------------------

def _job(kernel: Kernel, ref: KernelRef, index: int, config: dict[str, Any], base: list[Any],
         grid: Any, block: Any, model: str, target: Target) -> Job | Record:
    """The config's job, or its record when it is rejected before anything runs."""
    def rejected(status: str, reason: str, grid3: Any = None, block3: Any = None) -> Record:
        return Record(index, config, grid3, block3, status, None, "", None, "", reason)

    try:
        shape = LaunchShape.of(_dims(grid, config, "grid"), _dims(block, config, "block"),
                               kernel=kernel.name, target=target)
        grid3, block3 = shape.grid, shape.block
    except LaunchError as err:
        return rejected(BAD_LAUNCH, str(err))
    options = {}
    for key, value in config.items():
        if key in PASS_OPTION_ALIASES:
            options[PASS_OPTION_ALIASES[key]] = value
        elif "." in key and key not in kernel.params:
            pass_name, _, option = key.partition(".")
            options[(pass_name, option)] = value
    try:
        launch_pipeline = with_options(DEFAULT_PIPELINE, options)
        costed = with_options(model_pipeline(model, target), options)
    except UsageError:
        raise
    except (PtoError, ValueError, TypeError) as err:
        return rejected(DOES_NOT_COMPILE, f"pass options {options}: {err}", grid3, block3)
    values = [config[p] if v is _UNBOUND else v for p, v in zip(kernel.params, base)]
    stages = options.get(("pto-double-buffer", "stages"))
    return Job(index, ref, config, grid3, block3, HostArgs(tuple(values)), launch_pipeline,
               costed, stages, model, target)


def _dims(value: Any, config: dict[str, Any], what: str) -> Any:
    """`value`, or what it gives for `config` when it is a function of the config (the
    `LaunchShape` checks it)."""
    if callable(value):
        try:
            value = value(dict(config))
        except Exception as err:
            raise LaunchError(f"{what}({config}) raised {type(err).__name__}: {err}") from None
    return value


def with_options(pipeline: str, options: dict[tuple[str, str], Any]) -> str:
    """`pipeline` with pass options set (`{("pto-double-buffer", "stages"): 3}`), printed back
    by xDSL; `UsageError` for a pass not in the pipeline or an option it does not have."""
    if not options:
        return pipeline
    return _with_options(pipeline, tuple(sorted(options.items(), key=repr)))


@functools.lru_cache(maxsize=256)
def _with_options(pipeline: str, options: tuple[tuple[tuple[str, str], Any], ...]) -> str:
    """`with_options`, memoised: a sweep's configs share a few option sets."""
    from pypto.passes import parse_pipeline

    passes = parse_pipeline(pipeline)
    for (name, option), value in options:
        field = option.replace("-", "_")
        found = [i for i, p in enumerate(passes) if p.name == name]
        if not found:
            raise UsageError(f"pto.autotune: a config sets '{name}.{option}', but the pipeline "
                             f"'{pipeline}' has no pass '{name}'")
        for i in found:
            names = [f.name for f in dataclasses.fields(passes[i])]
            if field not in names:
                raise UsageError(f"pto.autotune: pass '{name}' has no option '{option}' "
                                 f"(options: {', '.join(n.replace('_', '-') for n in names)})")
            passes[i] = dataclasses.replace(passes[i], **{field: value})
    return ",".join(str(p.spec()) for p in passes)


def _job_key(job: Job) -> dict[str, Any]:
    """What distinguishes one config's profile from another's (besides `common`)."""
    scalars = {i: [type(v).__name__, v] for i, v in enumerate(job.args.values)
               if not isinstance(v, TensorArg)}
    return {"config": job.config, "grid": job.grid, "block": job.block, "scalars": scalars,
            "launch": job.launch_pipeline, "costed": job.model_pipeline}


def _record(job: Job, outcome: Outcome, cached: bool = False) -> Record:
    return Record(job.index, job.config, job.grid, job.block, outcome.status, outcome.cycles,
                  outcome.bound, outcome.l1_peak, "", outcome.reason, cached,
                  0.0 if cached else outcome.seconds)


def _no_valid_config(kernel: Kernel, records: list[Record]) -> None:
    from pypto.tuning.result import Table

    table = Table(r.row() for r in records)
    raise PtoError(f"pto.autotune of kernel '{kernel.name}': none of the {len(records)} configs "
                   f"is valid (each one failed, see the reasons below); fix the kernel or "
                   f"give other configs\n{table}")


# --- running tasks ------------------------------------------------------------------------------

@dataclasses.dataclass
class _Profiled:
    records: dict[int, Record] = dataclasses.field(default_factory=dict)
    ran: int = 0
    cached: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def _profile_all(kernel: Kernel, jobs: dict[int, Job], keys: dict[int, str],
                 store: DiskCache | None, executor: cf.Executor | None, progress: bool | None,
                 total: int) -> _Profiled:
    """Every job's record: from the cache, or profiled on the executor (and then cached)."""
    out = _Profiled()
    todo = []
    for index, job in jobs.items():
        hit = store.get(keys[index]) if store else None
        if hit is not None:
            out.records[index] = _record(job, Outcome.from_json(hit), cached=True)
            out.cached += 1
        else:
            todo.append(job)
    bar = _progress_bar(progress, total, f"autotune {kernel.name}")
    if bar is not None:
        bar.update(total - len(todo))
    try:
        for job, outcome in _run_all(executor, profile_config, [(j,) for j in todo], bar):
            out.ran += 1
            out.seconds += outcome.seconds
            out.cpu_seconds += outcome.cpu_seconds
            if store and outcome.status != INTERNAL:  # a pypto bug is not a result to keep
                store.put(keys[job.index], outcome.to_json())
            out.records[job.index] = _record(job, outcome)
    finally:
        if bar is not None:
            bar.close()
    return out


def _run_all(executor: cf.Executor | None, fn: Callable[..., Any],
             calls: list[tuple[Any, ...]], bar: Any = None) -> Iterable[tuple[Any, Any]]:
    """(first argument, result) of `fn(*call)` for every call: here in order, or on the
    executor as they complete. A task that raises stops the sweep (the remaining tasks are
    cancelled): the worker turns every config-level failure into a result, so an exception is
    a setup problem (the kernel cannot be found in the worker, the executor broke)."""
    if executor is None:
        for call in calls:
            result = fn(*call)
            if bar is not None:
                bar.update(1)
            yield call[0], result
        return
    futures = {executor.submit(fn, *call): call for call in calls}
    try:
        for future in cf.as_completed(futures):
            try:
                result = future.result()
            except PtoError:
                raise
            except Exception as err:
                raise PtoError(f"pto.autotune: a task failed on the executor {executor!r}: "
                               f"{type(err).__name__}: {err}") from err
            if bar is not None:
                bar.update(1)
            yield futures[future][0], result
    finally:
        for future in futures:
            future.cancel()


def _progress_bar(enabled: bool | None, total: int, desc: str) -> Any:
    """A tqdm bar (None: only on a terminal, as tqdm decides), or None without tqdm."""
    if enabled is False or (enabled is None and not _is_terminal(sys.stderr)):
        return None  # (without importing tqdm: ~0.3 s)
    try:
        from tqdm import tqdm
    except ImportError:
        if enabled:
            raise UsageError("pto.autotune(progress=True) needs tqdm: pip install "
                             "'pypto[progress]' (or pip install tqdm)") from None
        return None
    return tqdm(total=total, desc=desc, unit="config", disable=None if enabled is None else False,
                leave=False)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Checks:
    """Interpreter checks against the reference, run through the executor, cached on disk."""

    def __init__(self, executor: cf.Executor | None, store: DiskCache | None,
                 jobs: dict[int, Job], keys: dict[int, str], reference: Record,
                 tolerances: dict[str, tuple[float, float]], reduction: int | None = None):
        self.executor = executor
        self.reduction = reduction
        self.store = store
        self.jobs = jobs
        self.keys = keys
        self.reference = reference
        self.tolerances = tolerances
        self.failures: dict[int, str] = {}
        self.passed: set[int] = set()
        self.count = 0
        self.seconds = 0.0
        self._expected: dict[int, np.ndarray] | None = None

    def pick(self, done: list[Record], valid: list[Record],
             check: str) -> tuple[list[Record], Record]:
        """Check the winner (the next best while it fails) or, with "all", every valid
        config; the records with their checks, and the winner."""
        if check == "all":
            self.run(valid[1:])
        else:
            for candidate in sorted(valid, key=lambda r: (r.cycles, r.index)):
                if candidate is self.reference:
                    break
                self.run([candidate])
                if candidate.index not in self.failures:
                    break
        done = [self.apply(r) for r in done]
        survivors = sorted((r for r in done if r.ok), key=lambda r: (r.cycles, r.index))
        return done, survivors[0]  # the reference always survives: it is its own check

    def _key(self, index: int) -> str:
        return digest("check", self.keys[index], self.keys[self.reference.index],
                      self.tolerances, self.reduction, "rounding-bound-1")

    def run(self, candidates: list[Record]) -> None:
        todo = []
        for r in candidates:
            hit = self.store.get(self._key(r.index)) if self.store else None
            if hit is not None and isinstance(hit.get("mismatch"), str):
                self._note(r.index, hit["mismatch"])
            else:
                todo.append(r.index)
        if not todo:
            return
        start = time.perf_counter()
        ref_job = self.jobs[self.reference.index]
        if self._expected is None:
            ((_, self._expected),) = list(_run_all(self.executor, reference_outputs,
                                                   [(ref_job,)]))
        calls = [(self.jobs[i], ref_job, self._expected, self.tolerances, self.reduction)
                 for i in todo]
        for job, mismatch in _run_all(self.executor, check_config, calls):
            self.count += 1
            self._note(job.index, mismatch)
            if self.store:
                self.store.put(self._key(job.index), {"mismatch": mismatch})
        self.seconds += time.perf_counter() - start

    def _note(self, index: int, mismatch: str) -> None:
        if mismatch:
            self.failures[index] = mismatch
        else:
            self.passed.add(index)

    def apply(self, r: Record) -> Record:
        if r.index == self.reference.index:
            return dataclasses.replace(r, check="reference")
        if r.index in self.failures:
            return dataclasses.replace(r, status=WRONG, check="failed",
                                       reason=self.failures[r.index])
        if r.index in self.passed:
            return dataclasses.replace(r, check="passed")
        return r
