"""Strided loops under a lane guard interchanged too (`if i < n: for k in range(iters): ...`).

interchange.py runs a top-level strided loop iteration by iteration over the block's lanes (a
leading `pto.barrier_block` in a native-only copy: docs/native.md#strided-loops-interchanged).
A generator written as CUDA authors write one puts that loop under the launch's tail guard:

    i = get_global_id()
    if i < n:
        x = load(seeds + i)
        for k in range(iters):
            x = step(x)
            store(out + k * n + i, x)     # coalesced across lanes, strided across iterations

Lane by lane, each lane's `iters` stores land `n` elements apart (a power of two: one cache
set for all of them) and LLVM vectorises nothing. A `barrier_block` cannot go there: under a
lane-dependent condition the phase plan refuses it (on the device it would deadlock). The
ordering is all that is wanted, and a *warp* barrier under a guard is a cut the phase plan
accepts (each phase of the guarded loop's body then runs on the lanes whose guard holds, the
lane values the loop carries in spill slots: docs/native.md#phases). So this pass puts a
`pto.barrier` at the start of each such loop: an `scf.for` with uniform bounds and a strided
HBM access (interchange.py's test), reached from the kernel's top level through the *then*
branches of `scf.if`s only, in a kernel with no barrier, L1 or collective of its own (the
warp barrier is then the only cut: no other lane exchange it could reorder).

Exact for the reason interchange.py is: a barrier only orders; the support check proves the
lanes do not communicate through HBM within the launch (lane_independence.py), and the order it
gives (iteration-major, lanes inside) is the interpreter's own. Like interchange.py's copy it
is used only when the support check and the phase plan accept it.
"""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Block, Operation

from pypto.backend.native.interchange import _strided, _substitute, _uniform_bounds
from pypto.backend.native.lane_independence import IndexForms
from pypto.backend.native.phases import COLLECTIVES
from pypto.backend.native.while_phases import ORDER_ONLY_ATTR
from pypto.dialects import pto

_BLOCK_LEVEL = (pto.BarrierOp, pto.BarrierBlockOp, pto.AllocLocalOp, *COLLECTIVES)


def _guarded_loops(block: Block, forms: IndexForms, depth: int) -> list[tuple[int, ...]]:
    """Paths (op indices through then-blocks) to the strided loops under `if`s in `block`."""
    found: list[tuple[int, ...]] = []
    for index, op in enumerate(block.ops):
        if depth and isinstance(op, scf.ForOp):
            if _uniform_bounds(forms, op) and _strided(forms, op):
                found.append((index,))
        elif isinstance(op, scf.IfOp) and op.true_region.blocks:
            found += [(index, *path) for path in
                      _guarded_loops(op.true_region.blocks[0], forms, depth + 1)]
    return found


def _follow(block: Block, path: tuple[int, ...]) -> Operation:
    op = list(block.ops)[path[0]]
    if len(path) == 1:
        return op
    assert isinstance(op, scf.IfOp)
    return _follow(op.true_region.blocks[0], path[1:])


def interchange_guarded_loops(kernel: func.FuncOp) -> func.FuncOp:
    """A copy of `kernel` whose strided loops under lane guards start with a warp barrier (see
    the module doc), or `kernel` itself when it has none or already has block-level code."""
    if any(isinstance(op, _BLOCK_LEVEL) or op.name in ("pto.reduce", "pto.reduce_arg")
           for op in kernel.walk()):
        return kernel
    paths = _guarded_loops(kernel.body.block, IndexForms(kernel), 0)
    if not paths:
        return kernel
    copy = kernel.clone()
    for path in paths:
        loop = _follow(copy.body.block, path)
        assert isinstance(loop, scf.ForOp)
        loop = _substitute(loop)
        body: Block = loop.body.block
        order = pto.BarrierOp()
        order.attributes[ORDER_ONLY_ATTR] = UnitAttr()  # (not checked: while_phases.py)
        body.insert_op_before(order, body.first_op)
    return copy
