"""Constant lane ranges for runs of tree steps (docs/native.md#unrolled-trees).

After `tree_unroll.py` a tree's steps are phases whose guards compare the lane with constants
(`tid < 16`, `lane < 4`). Their fast lane loops still take their bounds from the launch's block
dimensions, run-time values: LLVM then vectorises a loop of unknown length (a main vector loop,
an epilogue, a scalar remainder testing the guard per lane; for `lane < s`, one such loop per
warp). For a launch of the compiled block shape the admitted lanes are known at compile time:
`constant_lanes` gives them, and the grid function (phase_codegen.py) runs such a run of phases,
when every range check of the run passes and the launch has that shape, as lane loops of
constant bounds — in the same order as the phases' own loops (phase after phase, each over its
lanes in the interpreter's lane order), so nothing but the loops' bounds changes.

A phase qualifies when

- the kernel was compiled for a 1-D block of `lanes` lanes;
- its guards admit only `x < u` or `lane_id < u` with `u` a constant (x the lane's
  `local_id(0)`; phase_merge.py reads the guards): the ranges below are a superset of the
  admitted lanes, and the fast lane function still tests its guards;
- it admits at most a warp's lanes in each warp (`x < u` with `u <= 32`, or `lane_id < u`):
  the longer steps' loops vectorise well as they are, and given constant bounds too they were
  measured slower (block_sum 0.21 -> 0.27 ms);
- it holds no `if` or loop: a constant short lane loop is unrolled by LLVM before it is
  vectorised, and a data-dependent branch per lane (argmin's `if b < a ...`) then stays a
  branch — measured 0.7 -> 1.1 ms for argmin block, against vectorised masked stores.

A grid function with such a run is marked `GATHER_FREE_ATTR`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from pypto.backend.native.phase_merge import ONE, WARP, _admitted, _Forms

GATHER_FREE_ATTR = "pto.native_gather_free"
"""On a grid function with such a run: LLVM compiles it preferring no vector gathers and
scatters (jit.py). A run's steps across warps (`lane < s` for s <= 4: a few lanes 32 elements
apart in each of 8 warps) are otherwise SLP-vectorised into gathers and scatters, which cost
more than the scalar code on the measuring machine (warp_sync_sum 0.83 -> 0.25 ms)."""

MAX_LOOPS = 64
"""Lane loops (phases times warps) of the longest run given constant bounds."""

Lanes = list[tuple[int, int]]
"""The x ranges [start, end) holding the lanes a phase admits, in lane order."""


def constant_lanes(ops: Iterable[Operation], guards: tuple[tuple[SSAValue, bool], ...],
                   uniform: Callable[[SSAValue], bool], lanes: int) -> Lanes | None:
    """The lanes a phase of a 1-D block of `lanes` lanes admits as constant ranges (a superset),
    when it qualifies (see the module doc), else None."""
    if any(isinstance(o, scf.IfOp | scf.ForOp | scf.WhileOp) for top in ops for o in top.walk()):
        return None
    admitted = _admitted(guards, uniform, _Forms(uniform))
    if admitted is None or set(admitted[1]) - {ONE}:
        return None  # (no lane guard, or not a constant bound)
    kind, u = admitted[0], max(admitted[1].get(ONE, 0), 0)
    if kind == "x":
        return [(0, min(u, lanes))] if u <= WARP else None
    return [(w, min(lanes, w + min(u, WARP))) for w in range(0, lanes, WARP)]
