"""What the cost model needs to know about each op of a kernel, computed once per op id.

The executor's trace says *which* ops ran, in which order, on how many lanes; the IR says what
each one is: its kind and pipe (declared on the op), the SSA values it reads and defines, the L1
buffers it reads and writes (followed through pointer arithmetic and pipeline stages to their
`pto.alloc_local`), its HBM bytes, and its work (bytes copied, multiply-accumulates).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from pypto import dtypes
from pypto.backend.interpreter.instruments import location_of
from pypto.dialects.traits import pipe_of
from pypto.dialects import npu, pto

ANY_L1 = "L1"
"""Buffer key of an L1 address whose buffer cannot be told statically (conflicts with all)."""

# ops that are structure or declarations, not instructions: no time, no dispatch slot
_STRUCTURE = (scf.IfOp, scf.ForOp, scf.YieldOp, func.ReturnOp, func.FuncOp, pto.PipelineOp,
              pto.StageOp, pto.YieldOp, pto.AllocLocalOp, arith.ConstantOp)

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


def kind_of(op: Operation) -> str:
    declared = getattr(op, "KIND", "")
    if declared:
        return declared
    return op.name.split(".", 1)[1].upper()


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
    seen = 0
    value = address
    while seen < 64:
        seen += 1
        owner = value.owner
        if isinstance(owner, pto.AllocLocalOp):
            return owner.result
        if isinstance(owner, pto.AddPtrOp):
            value = owner.ptr
            continue
        if isinstance(owner, pto.StageOp | pto.PipelineOp):
            index = list(owner.results).index(value)
            value = owner.regions[0].block.last_op.operands[index]
            continue
        return ANY_L1
    return ANY_L1


def tensor_of(address: SSAValue) -> int | None:
    """The kernel parameter an HBM address is derived from (through pointer arithmetic)."""
    value = address
    for _ in range(64):
        owner = value.owner
        if isinstance(owner, pto.AddPtrOp):
            value = owner.ptr
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


def constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _bytes_of(t: object) -> int:
    try:
        return dtypes.np_dtype_of(t).itemsize
    except Exception:  # noqa: BLE001
        return 4


def _copy_extent(op: Operation, side: str) -> int | None:
    """Elements a bulk copy covers on one side: rows x stride (the last row its length)."""
    dst, src, nbytes, rows, src_stride, dst_stride = op.operands[:6]
    elem = _bytes_of(pto.element_type_of(dst.type))
    total, n_rows = constant_int(nbytes), constant_int(rows)
    stride = constant_int(dst_stride if side == "dst" else src_stride)
    if total is None or n_rows is None or stride is None or n_rows <= 0:
        return None
    row = total // elem // n_rows
    return (n_rows - 1) * stride + row


def _copy_bytes(nbytes: SSAValue, dst: SSAValue) -> int:
    known = constant_int(nbytes)
    if known is not None:
        return known
    t = dst.type  # unknown at compile time: the whole destination buffer (an upper bound)
    if isinstance(t, pto.L1BufferType):
        return t.size * _bytes_of(t.element_type)
    return 0


def facts_of(op_id: int, op: Operation, varying: set[SSAValue] | None = None) -> OpFacts:
    """`varying`: the kernel's lane-varying values; arithmetic on uniform values runs on the
    scalar unit, on varying ones on the vector unit."""
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
    lane_ops = (pto.LoadOp, pto.StoreOp, pto.FmaOp, pto.AtomicAddOp, npu.LoadOp, npu.StoreOp,
                npu.FmaOp)
    if isinstance(op, lane_ops):
        address = op.operands[1] if isinstance(op, pto.StoreOp | npu.StoreOp) else op.operands[0]
        elem = _bytes_of(pto.element_type_of(address.type))
        reads_memory = isinstance(op, pto.LoadOp | npu.LoadOp | pto.AtomicAddOp)
        writes_memory = not isinstance(op, pto.LoadOp | npu.LoadOp) or False
        if _space(address) == "global":
            hbm = elem * (2 if isinstance(op, pto.AtomicAddOp) else 1)
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
    elif isinstance(op, pto.FillOp):
        elem = _bytes_of(pto.element_type_of(op.dst.type))
        count = constant_int(op.count)
        l1_writes.append(l1_ref(op.dst, count))
        copy = (count if count is not None else 0) * elem
    elif isinstance(op, pto.AsyncLoadOp | pto.AsyncStoreOp | pto.TileStoreOp | npu.CopyInOp |
                    npu.CopyOutOp):
        dst, src = op.operands[0], op.operands[1]
        copy = _copy_bytes(op.operands[2], dst if _space(dst) == "local" else src)
        hbm = 0
        if _space(dst) == "local":
            l1_writes.append(l1_ref(dst, _copy_extent(op, "dst")))
        if _space(src) == "local":
            l1_reads.append(l1_ref(src, _copy_extent(op, "src")))
        tensor = tensor_of(src if _space(src) == "global" else dst)
        if isinstance(op, pto.TileStoreOp):
            blocking = BLOCKING_SYNC_COPY
    elif isinstance(op, pto.MmaOp | npu.MmaOp | npu.LoadMmaOp):
        m, n, k = op.shape
        macs = m * n * k
        elem = _bytes_of(pto.element_type_of(op.a.type))
        fp32 = elem >= 4
        l1_reads.extend([l1_ref(op.c, m * n), l1_ref(op.a, m * k), l1_ref(op.b, k * n)])
        l1_writes.append(l1_ref(op.c, m * n))
        if isinstance(op, npu.LoadMmaOp):
            copy = _copy_bytes(op.nbytes, op.loaded)
            l1_writes.append(l1_ref(op.loaded, m * k if op.operand.data == "a" else k * n))
            tensor = tensor_of(op.src)
    elif isinstance(op, pto.WaitOp | pto.WaitAllOp | npu.WaitFlagOp | npu.WaitFlagAllOp):
        blocking = BLOCKING_WAIT
    elif isinstance(op, pto.BarrierBlockOp | pto.BarrierOp | npu.PipeBarrierOp |
                    npu.WarpBarrierOp):
        blocking = BLOCKING_BARRIER
    elif op.results:
        elem = _bytes_of(op.results[0].type)
    free = isinstance(op, _STRUCTURE) or isinstance(op, npu.SetFlagOp)
    return OpFacts(op_id, op.name, kind, pipe, location_of(op), free,
                   tuple(op.operands), tuple(op.results), tuple(l1_reads), tuple(l1_writes),
                   elem, hbm, copy, macs, fp32, blocking, tensor,
                   tuple(op.shape) if macs else None)


def kernel_of(op: Operation) -> func.FuncOp | None:
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op


def varying_of(op: Operation) -> set[SSAValue] | None:
    """The lane-varying values of the kernel holding `op` (block ids are uniform in a block)."""
    from pypto.analysis.uniformity import varying_values

    kernel = kernel_of(op)
    return None if kernel is None else varying_values(kernel, block_ids_uniform=True)


def table_facts(ops: Iterable[tuple[int, Operation]]) -> dict[int, OpFacts]:
    ops = list(ops)
    varying = varying_of(ops[0][1]) if ops else None
    return {op_id: facts_of(op_id, op, varying) for op_id, op in ops}


def copy_kinds() -> Sequence[str]:
    return ("ASYNC_LOAD", "ASYNC_STORE", "TILE_STORE", "COPY_IN", "COPY_OUT")
