"""Run a compiled kernel: choose the execution mode, bind arguments, iterate over lane vectors.

Modes (see docs/interpreter.md):
- grid mode: a kernel without L1 or barriers is one big lane vector covering the whole launch
  (split into chunks of whole blocks to bound memory). Blocks cannot observe each other, so this
  is exact.
- block mode: one lane vector per block, warps in lockstep; barriers check that every lane of
  their scope reached them (else `DeadlockError`).
- warp mode (when a warp schedule is requested): one lane vector per warp; warps run one after
  another between block-level synchronisation points in the order the schedule gives, so a
  `pto.barrier()` orders only its own warp, as on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MethodType
from typing import Any

import numpy as np
from xdsl.dialects import func, scf

from pypto import dtypes
from pypto.analysis.uniformity import divergent_condition, varying_values
from pypto.backend.interpreter.codegen import (
    BATCH,
    BLOCK,
    GRID,
    SYNC_TILE,
    WARP,
    GeneratedKernel,
    _walk,
    generate,
)
from pypto.backend.interpreter.fastpaths import FAST_PATHS
from pypto.backend.interpreter.instruments import Instrument, OpTable
from pypto.backend.interpreter.caches import RunCache
from pypto.backend.interpreter.l1 import L1Layout
from pypto.backend.interpreter.strategies import tail1d
from pypto.backend.interpreter.lanes import (Buffer, LaneContext, mask_and_cached,
                                             mask_andnot_cached, ramp_compare)
from pypto.backend.targets import resolve_target
from pypto.dialects import pto
from pypto.dialects.traits import accesses_space, is_block_collective, sync_scope
from pypto.errors import DeadlockError, KernelError, LaunchError, TensorFreedError

GRID_CHUNK_LANES = 1 << 22
"""Largest lane vector in grid mode; bigger launches run in several chunks of whole blocks."""

BATCH_CHUNK_LANES = 1 << 16
"""Largest lane vector in batch mode (several blocks in lockstep, each with its own L1)..."""

BATCH_CHUNK_LANES_1D = 1 << 17
"""...with 1-D blocks, whose block-local accesses and lane windows (codegen) leave less work per
lane, so Python's cost per vector weighs more: measured, the block reduction is fastest with
2^17 lanes, the 2-D transpose and tiled stencil (gathers of int64 addresses) with 2^16."""

BATCH_CHUNK_L1_BYTES = 1 << 24
"""...and the most L1 its blocks may hold together (their arenas lie side by side)."""

def batchable(kernel: func.FuncOp) -> bool:
    """Can blocks run side by side in one lane vector? Yes when every loop has bounds uniform
    across blocks and every block-level instruction (barrier_block and the tile instructions)
    sits in control flow uniform across blocks, so that all blocks of the vector execute the
    same sequence of them (tile instructions then act on every block's tiles at once)."""
    varying = varying_values(kernel, block_ids_uniform=False)
    for op in _walk(kernel.body.block.ops):
        if isinstance(op, scf.ForOp) and (op.lb in varying or op.ub in varying):
            return False
        if is_block_collective(op):
            parent = op.parent_op()
            while parent is not None and not isinstance(parent, func.FuncOp):
                if divergent_condition(parent, varying) is not None:
                    return False
                parent = parent.parent_op()
    return True

SCHEDULES = ("in_order", "reverse", "random:SEED")

_CHUNKS_MEMO = 64
"""A launch shape's lane vectors are memoised when there are at most this many."""

_SHAPES_MEMO = 16
"""At most this many launch shapes are memoised per Executable (then the memo starts over)."""

def _whole_grid_rows(per_chunk: int, grid: tuple[int, int, int]) -> int:
    """Blocks per chunk of a 2-D / 3-D grid, rounded down to whole rows of the grid (whole
    planes when a chunk holds more than one): each chunk's blocks are then a sub-box of the
    grid, so planned accesses see a box (views.py) instead of taking the general path."""
    row = grid[0] * grid[1] if per_chunk >= grid[0] * grid[1] else grid[0]
    if grid[1] * grid[2] > 1 and per_chunk > row:
        return per_chunk - per_chunk % row
    return per_chunk


def _take(free: list[Any]) -> Any:
    """A finished vector's L1 from the pool, or None when another thread took the last one
    first (list.pop is atomic)."""
    try:
        return free.pop()
    except IndexError:
        return None


_new_object = object.__new__
_init_context = LaneContext.__init__

_PTR, _I32, _SCALAR = "ptr", "i32", "scalar"
"""Kinds of parameters in a bind plan."""

_INT32 = np.int32


def _fp_state_access() -> tuple[Any, Any]:
    """NumPy's floating-point error state (the context variable `np.errstate` sets) and the
    function that derives a state from the current one, or (None, None) when this NumPy does
    not have them (then `np.errstate` itself is used)."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

        _make_extobj(all="ignore")
        return _extobj_contextvar, _make_extobj
    except Exception:  # noqa: BLE001 - another NumPy layout: fall back to the public API
        return None, None


_FP_STATE, _MAKE_FP_STATE = _fp_state_access()
_IGNORING: tuple[Any, Any] = (None, None)  # (state it was derived from, "ignore all" state)


def _ignore_fp_errors(update_only: bool = False) -> Any:
    """`np.errstate(all="ignore").__enter__()` for the generated code (an overflowing lane is
    the kernel's business, not a NumPy warning), for ~0.15 us instead of ~0.8 us: the "ignore"
    state derived from the current one is kept while the current one does not change. Returns
    what `_restore_fp_errors` needs. `update_only`: only bring the memo up to date (the
    cached launch in `Executable.run` does the rest inline)."""
    if _FP_STATE is None:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    global _IGNORING
    current = _FP_STATE.get()
    memo = _IGNORING  # one tuple, replaced whole: threads never see half an update
    if memo[0] is not current:
        memo = _IGNORING = (current, _MAKE_FP_STATE(all="ignore"))
    if update_only:
        return None
    return _FP_STATE.set(memo[1])


def _restore_fp_errors(token: Any) -> None:
    if _FP_STATE is None:
        token.__exit__(None, None, None)
    else:
        _FP_STATE.reset(token)


def _needs_block_mode(op: Any) -> bool:
    """Ops whose meaning involves the block: barriers, L1, block collectives."""
    if is_block_collective(op) or sync_scope(op) is not None:
        return True
    return any(isinstance(v.type, pto.L1BufferType) or
               isinstance(v.type, pto.PtrType) and v.type.space == "local"
               for v in op.results)


def _has_lane_l1_access(kernel: func.FuncOp) -> bool:
    """Does a lane instruction (not a block collective) access L1?"""
    return any(not is_block_collective(op) and accesses_space(op, "local")
               for op in _walk(kernel.body.block.ops))


def parse_schedule(schedule: str | None) -> tuple[str, int] | None:
    """`None` (lockstep), `"in_order"`, `"reverse"` or `"random:SEED"`."""
    if schedule is None:
        return None
    if schedule in ("in_order", "reverse"):
        return (schedule, 0)
    if isinstance(schedule, str) and schedule.startswith("random:"):
        try:
            return ("random", int(schedule.split(":", 1)[1]))
        except ValueError:
            pass
    raise ValueError(f"unknown warp schedule {schedule!r}; use one of: {', '.join(SCHEDULES)} "
                     f"(or None for lockstep execution)")


class Executable:
    """The executable form of one kernel specialisation (code generated lazily per mode)."""

    def __init__(self, kernel: func.FuncOp, *, target: Any = None,
                 check_uninitialized: bool = False, schedule: str | None = None,
                 race_check: bool = True, batch_blocks: bool = True,
                 fast_paths: bool | None = None):
        if fast_paths is None:
            FAST_PATHS.check()  # PYPTO_FAST_PATHS's value, read at import (fastpaths.py)
        self.func = kernel
        self.fast_paths = fast_paths
        """Generate the fast paths (fastpaths.py) or not; None: the process's `FAST_PATHS`
        switch. The schedule coster's trial runs turn them off: each gives the bits and the
        trace of the general path, and planning them costs more than they save in one traced
        block."""
        self.target = resolve_target(target)
        self.check_uninitialized = check_uninitialized
        # Races are between lane accesses: a kernel that touches L1 only through tile
        # instructions (block collectives) has nothing to check.
        self.race_check = race_check and _has_lane_l1_access(kernel)
        self.schedule = parse_schedule(schedule)
        self.name = kernel.sym_name.data
        self.layout = L1Layout.of(kernel, self.target)
        self.param_names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)]
        self.param_types = list(kernel.function_type.inputs.data)
        block_level = any(_needs_block_mode(op) for op in _walk(kernel.body.block.ops))
        if not block_level:
            self.mode = GRID  # warps cannot communicate without L1 or barriers: nothing to order
        elif self.schedule is not None:
            self.mode = WARP
        else:
            self.mode = BATCH if batch_blocks and batchable(kernel) else BLOCK
        self._variants: dict[tuple[str, bool, bool, bool], GeneratedKernel] = {}
        # facts about the shared masks of this kernel's launches (caches.py); launches from
        # several threads share them, as they share the arena pool below (taken by list.pop,
        # atomic: two threads never get one arena)
        self.cache = RunCache()
        # L1 of finished lane vectors by (vector length, lanes per block), reused by the next ones (tiles.py
        # adopt_block_memory); a run that raised leaves its L1 out
        self._arenas: dict[tuple[int, int], list[Any]] = {}
        self._chunks: dict[tuple[tuple[int, int, int], tuple[int, int, int], bool],
                           tuple[GeneratedKernel, list[tuple[int, int]]]] = {}
        """Per launch shape seen (grid, block) in grid/batch/block mode: the generated code and
        the lane vectors (first lane, count) to run; a cached launch goes straight to them."""

    def variant(self, one_d: bool, instrumented: bool = False) -> GeneratedKernel:
        """The generated code for a launch shape (`one_d`: 1-D grid and block), with hooks
        for instruments or without (the plain variant has none)."""
        fast = FAST_PATHS.on if self.fast_paths is None else self.fast_paths
        key = (self.mode, one_d, instrumented, fast)  # fast paths off: no plans
        gen = self._variants.get(key)
        if gen is None:
            gen = generate(self.func, self.mode, one_d, instrumented, fast)
            # branches on shared masks decide their outcome once per Executable; its masks
            # and ramps are the Executable's (caches.py)
            space = gen.fn.__globals__
            space["_mask_and"] = MethodType(mask_and_cached, self.cache)
            space["_mask_andnot"] = MethodType(mask_andnot_cached, self.cache)
            space["_ramp_cmp"] = MethodType(ramp_compare, self.cache)
            self._variants[key] = gen
        return gen

    @property
    def op_table(self) -> OpTable:
        """Op id -> op, location, pipe of this kernel (the ids instruments report)."""
        return self.variant(True).op_table

    def bind(self, args: Sequence[Any]) -> list[Any]:
        """Turn launch arguments into what generated code expects (Buffers, typed scalars)."""
        if len(args) != len(self.param_types):
            raise LaunchError(f"kernel '{self.name}' takes {len(self.param_types)} arguments "
                              f"({', '.join(self.param_names)}), got {len(args)}")
        binder = self._binder
        if binder is None:
            binder = self._binder = self._make_binder()
        return binder(args)

    _binder: Any = None
    _arity = -1  # the number of parameters, once the binder exists

    def _make_binder(self) -> Any:
        """`bind` for this kernel's parameters, as straight-line Python made once: per
        pointer the Buffer its tensor keeps for the parameter (`Tensor.views`) when its
        dtype is the parameter's, per int32 scalar a Python int in range; anything else
        through `_bind_one`, the general checks (a loop over the parameters cost ~1 us of a
        small cached launch)."""
        plan = self._bind_plan
        if plan is None:
            plan = self._bind_plan = self._make_bind_plan()
        names = [f"a{i}" for i in range(len(plan))]
        lines = [f"def bind(args):", f"    {', '.join(names)}{',' if len(names) == 1 else ''}"
                 f" = args" if names else "    pass"]
        space: dict[str, Any] = {"_one": self._bind_one, "_I32": _INT32, "_dict": dict}
        for i, (kind, name, npd) in enumerate(plan):
            space[f"p{i}"] = plan[i]
            if kind is _PTR:
                space[f"d{i}"] = npd
                lines += [f"    v = getattr(a{i}, 'views', None)",
                          f"    b{i} = v.get({name!r}) if type(v) is _dict else None",
                          f"    if b{i} is None or b{i}.data.dtype is not d{i}:",
                          f"        b{i} = _one(p{i}, a{i})"]
            elif kind is _I32:
                lines += [f"    b{i} = _I32(a{i}) if type(a{i}) is int and "
                          f"-2147483648 <= a{i} < 2147483648 else _one(p{i}, a{i})"]
            else:
                lines += [f"    b{i} = _one(p{i}, a{i})"]
        lines.append(f"    return [{', '.join(f'b{i}' for i in range(len(plan)))}]")
        exec(compile("\n".join(lines) + "\n", f"<pto bind {self.name}>", "exec"), space)
        self._arity = len(plan)
        return space["bind"]

    def _bind_one(self, entry: tuple[str, str, np.dtype], value: Any) -> Any:
        """One argument bound with every check (`bind`'s general case)."""
        kind, name, npd = entry
        if kind is _PTR:
            # a device tensor keeps the Buffer made for it (by parameter name) in `views`
            # while it is alive (emptied when freed: then the checks below run and raise)
            views = getattr(value, "views", None)
            buf = views.get(name) if type(views) is dict else None
            if buf is not None and (buf.data.dtype is npd or buf.data.dtype == npd):
                return buf
            if getattr(value, "freed", False):
                raise TensorFreedError(f"argument '{name}' of kernel '{self.name}' is a freed "
                                       f"tensor")
            data = getattr(value, "data", None)
            if not isinstance(data, np.ndarray):
                raise LaunchError(f"argument '{name}' of kernel '{self.name}' must be a device "
                                  f"tensor (pto.alloc_tensor), got {type(value).__name__}")
            if data.dtype is not npd and data.dtype != npd:
                raise LaunchError(f"argument '{name}' of kernel '{self.name}' was compiled for "
                                  f"{npd} tensors, got a {data.dtype} tensor")
            buf = Buffer(data, name, "global")
            if type(views) is dict:
                views[name] = buf
            return buf
        if kind is _I32 and type(value) is int and -(2**31) <= value < 2**31:
            return _INT32(value)  # the common int scalar: exact, nothing to check
        return self._bind_scalar(name, npd, value)

    _bind_plan: list[tuple[str, str, np.dtype]] | None = None

    def _make_bind_plan(self) -> list[tuple[str, str, np.dtype]]:
        """Per parameter: its kind (pointer, int32 scalar, other scalar), name and NumPy dtype
        (of the pointee for a pointer); computed once, at the first launch."""
        plan = []
        for name, t in zip(self.param_names, self.param_types):
            if isinstance(t, pto.PtrType):
                plan.append((_PTR, name, dtypes.np_dtype_of(t.element_type)))
            else:
                npd = dtypes.np_dtype_of(t)
                plan.append((_I32 if npd == np.int32 else _SCALAR, name, npd))
        return plan

    def _bind_scalar(self, name: str, npd: np.dtype, value: Any) -> Any:
        """A scalar argument converted to its parameter's type; `LaunchError` when it does not
        fit (an int that overflows, a bool for a non-bool parameter, not a number)."""
        if isinstance(value, bool | np.bool_) and npd != np.bool_:
            raise LaunchError(f"argument '{name}' of kernel '{self.name}' expects "
                              f"{npd}, got a bool")
        try:
            converted = npd.type(value)
            if npd.kind in "iu" and int(converted) != int(value):
                raise OverflowError
        except (OverflowError, ValueError, TypeError):
            raise LaunchError(f"argument '{name}' of kernel '{self.name}' must be "
                              f"{npd}, got {value!r}") from None
        return converted

    def run(self, grid: tuple[int, int, int], block: tuple[int, int, int],
            args: Sequence[Any], instrument: Instrument | None = None,
            blocks: Sequence[int] | None = None) -> None:
        """Execute one launch. `instrument` (see instruments.py) watches every op; without
        one the plain generated code runs. `blocks` (linear block ids) runs only those blocks
        of the launch, each as its own lane vector with the ids it has in the whole grid (the
        debugger's focus on one block); None runs every block.

        `grid` / `block` are a checked `LaunchShape`'s triples: every entry point that runs a
        kernel makes its shape where the user's grid / block come in (docs/runtime.md#launch-shape)
        and nothing here checks them again."""
        chunks = self._chunks.get((grid, block, FAST_PATHS.on))
        binder = self._binder  # self.bind(args), inline once the binder exists
        bound = binder(args) if binder is not None and len(args) == self._arity else \
            self.bind(args)
        if instrument is None and blocks is None:
            if chunks is not None:  # a launch shape seen before: straight to the kernel
                gen = chunks[0]
                if _FP_STATE is not None:  # _ignore_fp_errors, inline
                    memo = _IGNORING
                    if memo[0] is not _FP_STATE.get():
                        _ignore_fp_errors(True)
                        memo = _IGNORING
                    token = _FP_STATE.set(memo[1])
                else:
                    token = _ignore_fp_errors()
                try:
                    pool = self._arenas
                    sites, decisions = gen.sites, gen.decisions
                    vectors = chunks[1] if not gen.tail_bounds else \
                        tail1d.cut(gen.tail_bounds[0], chunks[1], bound, grid, block)
                    for first_lane, count in vectors:  # _run_vector and _context, inline
                        # (__init__ called as a function: a class call with keywords would
                        # build a dict of them, ~10 % of a small cached launch)
                        ctx = _new_object(LaneContext)
                        _init_context(ctx, kernel=self.name, grid=grid, block=block,
                                      first_lane=first_lane, count=count, sites=sites,
                                      target=self.target, layout=self.layout,
                                      check_uninitialized=self.check_uninitialized,
                                      race_check=self.race_check, cache=self.cache)
                        ctx.decisions = decisions  # the strategies the variant's plan decided
                        shape = (count, ctx.block_lanes)  # (the pool's key: _run_vector)
                        free = pool.get(shape)
                        if free:
                            state = _take(free)
                            if state is not None:
                                ctx.memory.adopt_block_memory(state)
                        gen.fn(ctx, bound)
                        memory = ctx.__dict__.get("memory")  # (made at first use: lanes.py)
                        if memory is not None and memory.arenas:
                            pool.setdefault(shape, []).append((memory.l1_buffers, memory.arenas))
                except KernelError:
                    raise
                except (IndexError, ValueError, TypeError, AttributeError) as exc:  # pragma: no cover
                    raise self._internal_error(exc) from exc
                finally:
                    if _FP_STATE is not None:
                        _FP_STATE.reset(token)
                    else:
                        _restore_fp_errors(token)
                return
        one_d = grid[1] * grid[2] == 1 and block[1] * block[2] == 1
        gen = self.variant(one_d, instrument is not None)
        block_lanes = block[0] * block[1] * block[2]
        n_blocks = grid[0] * grid[1] * grid[2]
        if blocks is not None and any(not 0 <= b < n_blocks for b in blocks):
            raise LaunchError(f"blocks {list(blocks)} are not all inside the grid {grid} "
                              f"({n_blocks} blocks, linear ids 0..{n_blocks - 1})")
        if instrument is not None:
            instrument.begin(gen.op_table, grid, block)
        with np.errstate(all="ignore"):
            try:
                if gen.mode == WARP:
                    for b in range(n_blocks) if blocks is None else blocks:
                        self._run_block_by_warps(gen, grid, block, b, bound, instrument)
                    return
                if blocks is not None:
                    for b in blocks:
                        gen.fn(self._context(gen, grid, block, b * block_lanes, block_lanes,
                                             instrument=instrument), bound)
                    return
                per_chunk = self._per_chunk(gen, grid, block)
                if instrument is None and n_blocks <= per_chunk * _CHUNKS_MEMO:
                    self._remember_chunks(grid, block, gen, per_chunk)
                pool = self._arenas if instrument is None else None
                vectors = [(first_block * block_lanes,
                            min(per_chunk, n_blocks - first_block) * block_lanes)
                           for first_block in range(0, n_blocks, per_chunk)]
                if gen.tail_bounds:
                    vectors = tail1d.cut(gen.tail_bounds[0], vectors, bound, grid, block)
                for first_lane, count in vectors:
                    ctx = self._context(gen, grid, block, first_lane, count,
                                        instrument=instrument)
                    self._run_vector(gen, ctx, bound, pool)
            except KernelError:
                raise
            except (IndexError, ValueError, TypeError, AttributeError) as exc:  # pragma: no cover
                raise self._internal_error(exc) from exc
            finally:
                if instrument is not None:
                    instrument.end()

    @staticmethod
    def _run_vector(gen: GeneratedKernel, ctx: LaneContext, bound: list[Any],
                    pool: dict[tuple[int, int], list[Any]] | None) -> None:
        """Run one lane vector; with a `pool`, on the L1 of a finished vector of its length
        (tiles.py adopt_block_memory), and give its own L1 back to the pool afterwards."""
        shape = (ctx.count, ctx.block_lanes)  # (an arena holds count / block_lanes blocks:
        if pool is not None:                   # 8 blocks of 32 lanes are not 4 of 64)
            free = pool.get(shape)
            if free:
                state = _take(free)
                if state is not None:
                    ctx.memory.adopt_block_memory(state)
        gen.fn(ctx, bound)
        memory = ctx.__dict__.get("memory")  # (made at first use: lanes.py)
        if pool is not None and memory is not None and memory.arenas:
            pool.setdefault(shape, []).append((memory.l1_buffers, memory.arenas))

    def _per_chunk(self, gen: GeneratedKernel, grid: tuple[int, int, int],
                   block: tuple[int, int, int]) -> int:
        """Whole blocks per lane vector of a launch run by `gen` (not in warp mode)."""
        block_lanes = block[0] * block[1] * block[2]
        lanes = (gen.vector_lanes or GRID_CHUNK_LANES) if gen.mode == GRID else \
            BATCH_CHUNK_LANES_1D if block[1] * block[2] == 1 else BATCH_CHUNK_LANES
        per_chunk = 1 if gen.mode == BLOCK else max(1, lanes // block_lanes)
        if gen.mode == BATCH and self.layout.extent:
            per_chunk = max(1, min(per_chunk, BATCH_CHUNK_L1_BYTES // self.layout.extent))
        return _whole_grid_rows(per_chunk, grid)

    def lane_vectors(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                     bound: Sequence[Any]) -> list[tuple[int, int]] | None:
        """The lane vectors (first linear lane, count) a plain `run` of this launch runs one
        after another, each in lockstep (None in warp mode: warps interleave by the
        schedule). `bound`: the launch's arguments as `bind` returns them. The native
        backend's printf orders its lines by them (pypto/backend/native/printf.py)."""
        if self.mode == WARP:
            return None
        one_d = grid[1] * grid[2] == 1 and block[1] * block[2] == 1
        gen = self.variant(one_d, False)
        block_lanes = block[0] * block[1] * block[2]
        n_blocks = grid[0] * grid[1] * grid[2]
        per_chunk = self._per_chunk(gen, grid, block)
        vectors = [(first_block * block_lanes,
                    min(per_chunk, n_blocks - first_block) * block_lanes)
                   for first_block in range(0, n_blocks, per_chunk)]
        if gen.tail_bounds:
            vectors = tail1d.cut(gen.tail_bounds[0], vectors, list(bound), grid, block)
        return vectors

    def _remember_chunks(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                         gen: GeneratedKernel, per_chunk: int) -> None:
        """Memoise the lane vectors of this launch shape for the next launches (few shapes,
        few vectors each: a grid of millions of blocks in block mode is not memoised)."""
        block_lanes = block[0] * block[1] * block[2]
        n_blocks = grid[0] * grid[1] * grid[2]
        if len(self._chunks) >= _SHAPES_MEMO:
            self._chunks.clear()
        self._chunks[(grid, block, FAST_PATHS.on)] = (gen, [
            (first_block * block_lanes, min(per_chunk, n_blocks - first_block) * block_lanes)
            for first_block in range(0, n_blocks, per_chunk)])

    def _internal_error(self, exc: Exception) -> KernelError:
        return KernelError(f"internal interpreter error: {exc!r}; please report it with the "
                           f"kernel", kernel=self.name)

    def _context(self, gen: GeneratedKernel, grid: tuple[int, int, int],
                 block: tuple[int, int, int], first_lane: int, count: int,
                 share: LaneContext | None = None, warp: int | None = None,
                 instrument: Instrument | None = None) -> LaneContext:
        ctx = LaneContext(kernel=self.name, grid=grid, block=block, first_lane=first_lane,
                          count=count, sites=gen.sites, target=self.target, layout=self.layout,
                          check_uninitialized=self.check_uninitialized, share_block_with=share,
                          race_check=self.race_check, warp_index=warp, cache=self.cache)
        ctx.ins = instrument
        ctx.decisions = gen.decisions  # the strategies the variant's plan decided
        return ctx

    # warp mode --------------------------------------------------------------------------------

    def _order(self, warps: list[int], rng: np.random.Generator | None) -> list[int]:
        assert self.schedule is not None
        kind = self.schedule[0]
        if kind == "in_order":
            return warps
        if kind == "reverse":
            return warps[::-1]
        assert rng is not None
        return [warps[i] for i in rng.permutation(len(warps))]

    def _run_block_by_warps(self, gen: GeneratedKernel, grid: tuple[int, int, int],
                            block: tuple[int, int, int], b: int, bound: list[Any],
                            instrument: Instrument | None) -> None:
        assert self.schedule is not None
        block_lanes = block[0] * block[1] * block[2]
        warp_size = self.target.warp_size
        n_warps = (block_lanes + warp_size - 1) // warp_size
        first = b * block_lanes
        ctxs: list[LaneContext] = []
        for w in range(n_warps):
            count = min(warp_size, block_lanes - w * warp_size)
            ctxs.append(self._context(gen, grid, block, first + w * warp_size, count,
                                      ctxs[0] if ctxs else None, w, instrument))
        rng = np.random.default_rng([self.schedule[1], b]) if self.schedule[0] == "random" \
            else None
        # Without any block-level sync point the kernel is a plain function: calling it runs the
        # warp to completion, so the calls themselves follow the schedule.
        runs: list[Any] = [None] * n_warps
        for w in self._order(list(range(n_warps)), rng):
            runs[w] = gen.fn(ctxs[w], bound)
        if not all(hasattr(r, "send") for r in runs):
            return
        waiting: dict[int, tuple[int, int, Any]] = {}
        done: set[int] = set()
        reply: dict[int, Any] = {w: None for w in range(n_warps)}
        started = False
        while True:
            runnable = [w for w in range(n_warps) if w not in waiting and w not in done]
            for w in self._order(runnable, rng):
                try:
                    event = runs[w].send(reply[w]) if started or reply[w] is not None \
                        else next(runs[w])
                    waiting[w] = event
                except StopIteration:
                    done.add(w)
            started = True
            if not waiting:
                return
            if done:
                self._deadlock(gen, ctxs, waiting, done, "finished without reaching it")
            sites = {(kind, site) for kind, site, _ in waiting.values()}
            if len(sites) > 1:
                self._deadlock(gen, ctxs, waiting, set(), "wait at a different one")
            (kind, site), = sites
            result = None
            if kind == SYNC_TILE:
                result = waiting[min(waiting)][2]()  # executed once for the whole block
            else:
                ctxs[0].counters["epoch"] += 1  # the block barrier orders all warps
            reply = {w: result for w in waiting}
            waiting.clear()

    def _deadlock(self, gen: GeneratedKernel, ctxs: list[LaneContext],
                  waiting: dict[int, tuple[int, int, Any]], done: set[int], what: str) -> None:
        kind, site, _ = waiting[min(waiting)]
        s = gen.sites[site]
        block, _ = ctxs[0].describe_lane(0)
        at = sorted(w for w, e in waiting.items() if e[:2] == (kind, site))
        others = sorted(done) if done else sorted(set(waiting) - set(at))
        raise DeadlockError(
            f"deadlock in block {block}: warps {at} wait at pto.{s.op} but warps {others} "
            f"{what}; every warp of the block must reach the same block-level barrier or tile "
            f"instruction", kernel=self.name, location=s.location, called_from=s.called_from)
