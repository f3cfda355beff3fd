"""Emitters of block-level instructions: L1 declarations, bulk copies (with the per-block
addresses the plan decides: strategies/planned_view.py `BlockAddress`), waits, fills, mma,
tile vector instructions (their geometry from the `TileVector` trait), atomics (the `atomics`
kind's arguments) and printf. In warp mode each block-level instruction is a sync point the
scheduler runs once per block (`tile`). A mixin of `codegen.KernelCodegen`."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from pypto.backend.interpreter.codegen_regions import SYNC_TILE, CodegenAPI
from pypto.backend.interpreter.modes import WARP
from pypto.backend.interpreter.strategies import atomics
from pypto.dialects import pto
from pypto.dialects.traits import tile_vector


class TileEmitters(CodegenAPI):
    """`op_*` emitters of L1 and tile instructions (looked up by op name)."""

    def op_pto_alloc_local(self, op: pto.AllocLocalOp) -> None:
        n = self.name(op.result)
        s = self.site(op)
        # keyed by op id: the static L1 layout (l1.py) places each alloc_local
        self.tile(f"{n}_b", f"_ctx.memory.alloc_local({self.table.id_of(op)}, _m, {s})", s)
        self.emit(f"{n} = _I64_0")

    def tile(self, target: str | None, call: str, s: int) -> None:
        """A block-level instruction: executed once per block.

        In warp mode every warp stops at it; the scheduler runs `call` once when all warps have
        arrived and sends its result back to each warp.
        """
        prefix = f"{target} = " if target else ""
        if self.mode != WARP or call.startswith("_ctx.memory.alloc_local("):
            self.emit(prefix + call)  # alloc_local is a static declaration, not a sync point
            return
        self.emit(f"_tile_entry(_ctx, _m, {s})")
        if self.instrumented:
            call = f"_ins.tile({self.current_id}, _ctx, _m, lambda: {call})"
        self.emit(f"{prefix}(yield ({SYNC_TILE}, {s}, lambda: {call}))")

    def _addr(self, v: SSAValue) -> str:
        return f"{self.name(v)}_b, {self.name(v)}"

    def op_pto_async_load(self, op: pto.AsyncLoadOp) -> None:
        self._copy(op, "async_load")

    def op_pto_async_store(self, op: pto.AsyncStoreOp) -> None:
        self._copy(op, "async_store")

    def op_pto_tile_store(self, op: pto.TileStoreOp) -> None:
        self._copy(op, "tile_store")

    def _copy(self, op: Operation, kind: str) -> None:
        dst, src, nbytes, rows, ss, ds = op.operands
        args = ", ".join(self.name(v) for v in (nbytes, rows, ss, ds))
        target = self.name(op.results[0]) if op.results else None
        s = self.site(op)
        addrs = []
        per_block = self.decided(op, "copy_address")  # each block's offset from the forms
        for index, v in ((0, dst), (1, src)):
            addr = per_block.copy_address(self, op, index) if per_block is not None else None
            addrs.append(addr if addr is not None else self._addr(v))
        self.tile(target, f"_ctx.memory.copy({kind!r}, {addrs[0]}, {addrs[1]}, {args}, _m, {s})", s)

    def op_pto_wait(self, op: pto.WaitOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.memory.wait({self.name(op.token)}, _m, {s})", s)

    def op_pto_wait_all(self, op: pto.WaitAllOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.memory.wait_all(_m, {s})", s)

    def op_pto_fill(self, op: pto.FillOp) -> None:
        s = self.site(op)
        self.tile(None, f"_ctx.tiles.fill({self._addr(op.dst)}, {self.name(op.value)}, "
                        f"{self.name(op.count)}, _m, {s})", s)

    def op_pto_mma(self, op: pto.MmaOp) -> None:
        m, n, k = op.shape
        s = self.site(op)
        self.tile(None, f"_ctx.tiles.mma({self._addr(op.c)}, {self._addr(op.a)}, {self._addr(op.b)}, "
                        f"{m}, {n}, {k}, _m, {s})", s)

    def tile_vector_op(self, op: Operation) -> None:
        """A tile vector instruction (`TileVector` trait): `_ctx.tile_vector` with each
        address operand's tile geometry from the trait (tile_ops.py runs it)."""
        trait = tile_vector(op)
        assert trait is not None
        tiles = trait.tiles(op, lambda v: None)
        geometry = tuple((t.rows, t.row_len, t.stride) for _, t in sorted(tiles.items())
                         if t is not None)
        addrs = ", ".join(f"({self._addr(op.operands[i])})" for i in sorted(tiles))
        scalars = [self.name(op.operands[i]) for i, role in enumerate(trait.roles)
                   if role == "value"]
        props = {k: v.data for k, v in op.properties.items() if isinstance(v, StringAttr)}
        s = self.site(op)
        name = op.name.removeprefix("pto.")
        self.tile(None, f"_ctx.tiles.tile_vector({name!r}, {geometry!r}, ({addrs},), "
                        f"{scalars[0] if scalars else None}, {props!r}, _m, {s})", s)

    def op_pto_atomic_add(self, op: pto.AtomicAddOp) -> None:
        extra = atomics.call_arguments(self.an.decision(op, atomics.Decision))  # strategies/
        self.emit(f"{self.name(op.result)} = _ctx.lanes.atomic_add({self._addr(op.ptr)}, "
                  f"{self.name(op.value)}, _m, {self.site(op)}{extra})")

    def atomic_rmw(self, op: Operation, kind: str) -> None:
        """`pto.atomic_<kind>`: its operands are the address, [the compared value,] the value."""
        ptr, *rest = op.operands
        compare = self.name(rest[0]) if len(rest) == 2 else None
        self.emit(f"{self.name(op.results[0])} = _ctx.lanes.atomic_rmw({kind!r}, {self._addr(ptr)}, "
                  f"{self.name(rest[-1])}, {compare}, _m, {self.site(op)})")

    def op_pto_printf(self, op: pto.PrintfOp) -> None:
        values = ", ".join(self.name(v) for v in op.values)
        self.emit(f"_printf(_ctx, {op.format.data!r}, ({values}{',' if op.values else ''}), _m, "
                  f"{self.site(op)})")
