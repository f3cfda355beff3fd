"""What the cost model needs to know about each op of a kernel, computed once per op id.

The executor's trace says *which* ops ran, in which order, on how many lanes; the IR says what
each one is: its kind and pipe (declared on the op), the SSA values it reads and defines, the L1
buffers it reads and writes (followed through pointer arithmetic and pipeline stages to their
`pto.alloc_local`), its HBM bytes, and its work (bytes copied, multiply-accumulates).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.dialects import arith, func, scf
from xdsl.ir import Block, Operation, SSAValue

from pypto import dtypes
from pypto.analysis.ir_utils import constant_int, kernel_of, root_alloc
from pypto.diagnostics import op_location
from pypto.dialects import pto
from pypto.dialects.traits import (
    Tile,
    copies_synchronously,
    declared_accesses,
    declares_buffer,
    element_bytes,
    forwards_yield,
    is_block_collective,
    kind_of,
    offset_base,
    pipe_of,
    signals_completion,
    sync_scope,
    tile_footprint,
    tile_vector,
    vector_work_bytes,
    waits_on,
)

ANY_L1 = "L1"
"""Buffer key of an L1 address whose buffer cannot be told statically (conflicts with all)."""

# foreign ops that are structure, not instructions: no time, no dispatch slot (pto's declare
# it: `ForwardsYield`, `DeclaresBuffer`)
_STRUCTURE = (scf.IfOp, scf.ForOp, scf.WhileOp, scf.ConditionOp, scf.YieldOp, func.ReturnOp,
              func.FuncOp, arith.ConstantOp)

BLOCKING_WAIT = "wait"
BLOCKING_BARRIER = "barrier"
BLOCKING_SYNC_COPY = "sync_copy"


@dataclass(frozen=True)
class OpFacts:
    op_id: int
    name: str                     # "pto.load"
    kind: str                     # "LOAD", "MMA", "LOAD_MMA", "ADDF", ...
    pipe: str
    source: str                   # Python file:line:col
    free: bool                    # structure / declaration: not simulated
    reads: tuple[SSAValue, ...]   # SSA operands
    writes: tuple[SSAValue, ...]  # SSA results
    l1_reads: tuple[L1Ref, ...]   # L1 regions read / written (resolved at simulation time)
    l1_writes: tuple[L1Ref, ...]
    elem_bytes: int               # element size of a lane instruction's data
    hbm_bytes_per_lane: int       # lane access to HBM: bytes per active lane
    copy_bytes: int               # bulk copy (or the fused load): bytes moved
    macs: int                     # m * n * k of an MMA
    cube_fp32: bool               # MMA on 32-bit inputs (the Cube's slower rate)
    blocking: str | None          # wait / barrier / sync_copy: stalls the front end
    tensor: int | None = None     # kernel parameter (tensor) its HBM bytes belong to
    mma_shape: tuple[int, int, int] | None = None  # (m, n, k) of an MMA (elem_bytes: its A's)
    address: SSAValue | None = None   # a lane memory instruction's address
    space: str | None = None      # ... and its memory level: "global" (HBM) or "local" (L1)
    uniform_address: bool = False # every lane of the block on one address (a broadcast)
    atomic: bool = False          # a read-modify-write (same-address lanes serialise)
    loads: bool = False           # its result is data read from memory (ready after latency)
    vector_class: str | None = None  # a tile vector instruction's cost class (VECTOR_CLASSES)
    to_cube: bool = False         # a copy into an MMA operand's buffer (the GM->L1 path)
    fold: str | None = None       # the lane rule (docs/cost-model.md#the-lane-rule): FOLD_OPERAND,
                                  # an L1 lane load that is its consumers' operand fetch;
                                  # FOLD_RESULT, an L1 lane store that is its producer's write


FOLD_OPERAND = "operand"
FOLD_RESULT = "result"


@dataclass(frozen=True)
class L1Ref:
    """An L1 access: the buffer (`alloc_local` result, or ANY_L1), the address value (to look
    up its run-time offset) and how many elements from there it covers (None: unknown, the
    whole buffer)."""

    buffer: object
    address: SSAValue | None
    extent: int | None


def l1_ref(address: SSAValue, extent: int | None = None) -> L1Ref:
    buffer = buffer_of(address)
    return L1Ref(buffer, address if buffer is not ANY_L1 else None, extent)


def buffer_of(address: SSAValue) -> object:
    """The `pto.alloc_local` result an L1 address points into, or ANY_L1."""
    root = root_alloc(address)
    return ANY_L1 if root is None else root


def tensor_of(address: SSAValue) -> int | None:
    """The kernel parameter an HBM address is derived from (through pointer arithmetic)."""
    value = address
    for _ in range(64):
        owner = value.owner
        base = offset_base(owner) if isinstance(owner, Operation) else None
        if base is not None:
            value = base
            continue
        if isinstance(owner, Block) and isinstance(owner.parent_op(), func.FuncOp):
            return value.index
        return None
    return None


def _space(value: SSAValue) -> str | None:
    try:
        return pto.memory_space_of(value.type)
    except Exception:  # noqa: BLE001 - not an address
        return None


_BYTES: dict[object, int] = {}
"""`_bytes_of` by type (types are immutable, hashable attributes): a type pypto has no dtype
for (`index`, a pointer) would otherwise format its error message on every op it types."""


def _bytes_of(t: object) -> int:
    found = _BYTES.get(t)
    if found is None:
        try:
            found = dtypes.np_dtype_of(t).itemsize  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001
            found = 4
        _BYTES[t] = found
    return found


def _extent(tile: Tile | None) -> int | None:
    """Elements from a tile's first to one past its last; None when not known statically."""
    return None if tile is None else tile.extent


def _copy_bytes(nbytes: SSAValue, dst: SSAValue) -> int:
    known = constant_int(nbytes)
    if known is not None:
        return known
    t = dst.type  # unknown at compile time: the whole destination buffer (an upper bound)
    if isinstance(t, pto.L1BufferType):
        return t.size * _bytes_of(t.element_type)
    return 0


def _is_structure(op: Operation) -> bool:
    """Structure, declarations and a copy's completion signal: no time, no dispatch slot."""
    return (isinstance(op, _STRUCTURE) or forwards_yield(op) or declares_buffer(op)
            or signals_completion(op))


def cube_buffers(op: Operation) -> set[object]:
    """The `pto.alloc_local` results an MMA of the kernel holding `op` reads as its A or B:
    a copy into one of them takes the GM->L1 path (`mte_l1_bytes_per_cycle`)."""
    kernel = kernel_of(op)
    if kernel is None:
        return set()
    out: set[object] = set()
    for inner in kernel.walk():
        if getattr(inner, "shape", None) is not None and tile_footprint(inner, constant_int) \
                is not None and len(inner.operands) >= 3:
            out.update(buffer_of(inner.operands[i]) for i in (1, 2))
    out.discard(ANY_L1)
    return out


def facts_of(op_id: int, op: Operation, varying: set[SSAValue] | None = None,
             cube: set[object] | None = None) -> OpFacts:
    """`varying`: the kernel's lane-varying values; arithmetic on uniform values runs on the
    scalar unit, on varying ones on the vector unit. `cube`: `cube_buffers` of the kernel."""
    kind = kind_of(op)
    pipe = pipe_of(op)
    if varying is not None and op.name.split(".", 1)[0] in ("arith", "math") and \
            not any(r in varying for r in op.results):
        pipe = "SCALAR"
    l1_reads: list[object] = []
    l1_writes: list[object] = []
    elem = 4
    hbm = 0
    copy = 0
    macs = 0
    fp32 = False
    blocking: str | None = None
    tensor: int | None = None
    address: SSAValue | None = None
    space: str | None = None
    atomic = loads = to_cube = False
    accesses = declared_accesses(op)
    footprint = tile_footprint(op, constant_int)
    waits = waits_on(op)
    if accesses and footprint is None and not is_block_collective(op):
        # a lane instruction: one element per active lane through its address operand
        address = op.operands[accesses[0].operand]
        elem = element_bytes(address)
        space = _space(address)
        reads_memory = any(a.kind == "read" for a in accesses)
        writes_memory = any(a.kind == "write" for a in accesses)
        atomic = reads_memory and writes_memory  # a read-modify-write (pto.atomic_add)
        loads = reads_memory
        if _space(address) == "global":
            hbm = elem * (int(reads_memory) + int(writes_memory))
            tensor = tensor_of(address)
        else:
            key = L1Ref(buffer_of(address), None, None)  # per-lane addresses: the whole buffer
            if reads_memory:
                l1_reads.append(key)
            if writes_memory:
                l1_writes.append(key)
        slot = getattr(op, "slot", None)
        if slot is not None:
            l1_writes.append(L1Ref(buffer_of(slot), None, None))
    elif footprint is not None:
        # a tile instruction: the tiles of its L1 operands, bytes moved, multiply-accumulates
        shape = getattr(op, "shape", None)
        if shape is not None:  # an MMA: C += A @ B (operands 0, 1, 2), maybe with a fused load
            m, n, k = shape
            macs = m * n * k
            elem = element_bytes(op.operands[1])  # A's element
            fp32 = elem >= 4
            c = op.operands[0]
            l1_reads.extend(l1_ref(op.operands[i], _extent(footprint[i])) for i in (0, 1, 2))
            l1_writes.append(l1_ref(c, _extent(footprint[0])))
            loaded = getattr(op, "loaded", None)  # the operand a fused load writes
            if loaded is not None:
                index = list(op.operands).index(loaded)
                l1_writes.append(l1_ref(loaded, _extent(footprint[index])))
        else:  # a bulk copy or a fill: through their declared L1 accesses
            for access in accesses:
                address = op.operands[access.operand]
                if _space(address) == "local":
                    ref = l1_ref(address, _extent(footprint.get(access.operand)))
                    (l1_writes if access.kind == "write" else l1_reads).append(ref)
        hbm_side = next((op.operands[a.operand] for a in accesses if a.space == "global"),
                        None)
        if hbm_side is not None:  # a bulk copy (or a fused load): bytes moved, and whose
            l1_side = getattr(op, "loaded", None) or next(
                op.operands[a.operand] for a in accesses if a.space == "local")
            copy = _copy_bytes(op.nbytes, l1_side)  # type: ignore[attr-defined]
            tensor = tensor_of(hbm_side)
            reads_hbm = any(a.space == "global" and a.kind == "read" for a in accesses)
            to_cube = bool(macs) or (reads_hbm and cube is not None
                                     and buffer_of(l1_side) in cube)
        elif tile_vector(op) is not None:  # a tile vector instruction: its largest tile
            # streams through the vector unit (docs/cost-model.md#tile-vector-instructions)
            copy = vector_work_bytes(op)
            elem = element_bytes(op.operands[0])
        elif shape is None:  # a fill: its elements, written by the vector unit
            dst = op.operands[accesses[0].operand]
            elem = element_bytes(dst)
            tile = footprint.get(accesses[0].operand)
            copy = (tile.elements if tile is not None else 0) * elem
        if copies_synchronously(op):
            blocking = BLOCKING_SYNC_COPY
    elif waits is not None:
        blocking = BLOCKING_WAIT
    elif sync_scope(op) is not None:
        blocking = BLOCKING_BARRIER
    elif op.results:
        elem = _bytes_of(op.results[0].type)
    uniform = address is not None and varying is not None and address not in varying
    return OpFacts(op_id, op.name, kind, pipe, op_location(op), _is_structure(op),
                   tuple(op.operands), tuple(op.results), tuple(l1_reads), tuple(l1_writes),
                   elem, hbm, copy, macs, fp32, blocking, tensor,
                   tuple(op.shape) if macs else None,  # type: ignore[attr-defined]
                   address, space, uniform, atomic, loads,
                   (trait.cost_class if (trait := tile_vector(op)) is not None else None),
                   to_cube, fold_of(op, varying))


def _arithmetic(op: Operation, varying: set[SSAValue] | None) -> bool:
    """A lane arithmetic instruction on the vector unit: an `arith` / `math` op on lane-varying
    values that computes a number (not a compare: its i1 feeds control flow or a select)."""
    if op.name.split(".", 1)[0] not in ("arith", "math") or not op.results:
        return False
    if varying is not None and not any(r in varying for r in op.results):
        return False  # uniform: the scalar unit's
    return pipe_of(op) == "VECTOR" and not any(
        getattr(r.type, "width", None) is not None and r.type.width.data == 1  # type: ignore
        for r in op.results)


def _lane_l1(op: Operation) -> tuple[SSAValue, bool, bool] | None:
    """(address, reads, writes) of a non-atomic lane access to L1, else None."""
    accesses = declared_accesses(op)
    if not accesses or tile_footprint(op, constant_int) is not None or \
            is_block_collective(op) or getattr(op, "slot", None) is not None:
        return None
    address = op.operands[accesses[0].operand]
    reads = any(a.kind == "read" for a in accesses)
    writes = any(a.kind == "write" for a in accesses)
    if _space(address) != "local" or (reads and writes):
        return None
    return address, reads, writes


def fold_of(op: Operation, varying: set[SSAValue] | None) -> str | None:
    """The lane rule (docs/cost-model.md#the-lane-rule): an L1 lane load whose every use is a
    vector arithmetic op is those instructions' operand fetch; an L1 lane store of a vector
    arithmetic op's result, or of an L1 lane load's (a UB-to-UB copy), is that instruction's
    write to UB. Neither is an instruction of its own under the `fused` model."""
    lane = _lane_l1(op)
    if lane is None:
        return None
    address, reads, writes = lane
    if reads and len(op.results) == 1:
        uses = list(op.results[0].uses)
        if uses and all(_arithmetic(use.operation, varying) for use in uses):
            return FOLD_OPERAND
        return None
    if writes:
        values = [v for v in op.operands if v is not address]
        producer = values[0].owner if len(values) == 1 else None
        if isinstance(producer, Operation) and (
                _arithmetic(producer, varying) or
                ((lane := _lane_l1(producer)) is not None and lane[1]
                 and fold_of(producer, varying) is None)):
            return FOLD_RESULT
    return None


def varying_of(op: Operation) -> set[SSAValue] | None:
    """The lane-varying values of the kernel holding `op` (block ids are uniform in a block)."""
    from pypto.analysis.uniformity import varying_values

    kernel = kernel_of(op)
    return None if kernel is None else varying_values(kernel, block_ids_uniform=True)


def table_facts(ops: Iterable[tuple[int, Operation]]) -> dict[int, OpFacts]:
    ops = list(ops)
    varying = varying_of(ops[0][1]) if ops else None
    cube = cube_buffers(ops[0][1]) if ops else None
    return {op_id: facts_of(op_id, op, varying, cube) for op_id, op in ops}
