"""Emitters of the warp shuffles and votes (`pto.shfl*`, `pto.ballot`, `pto.vote_*`): calls of
warp_ops.py's `shuffle` and `vote` on the lane vector. A part of `codegen.KernelCodegen`
(`gen.warps`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

if TYPE_CHECKING:
    from pypto.backend.interpreter.codegen_regions import CodegenAPI


class WarpEmitters:
    """`op_pto_shfl*`, `op_pto_ballot`, `op_pto_vote_*` (looked up by op name): a part of
    `codegen.KernelCodegen` (`gen.warps`)."""

    def __init__(self, gen: CodegenAPI) -> None:
        self.gen = gen  # the kernel's codegen, which holds this part

    def _shuffle(self, op: Operation, mode: str) -> None:
        value, lane = (self.gen.name(x) for x in op.operands)
        array = op.results[0] not in self.gen.an.uniform
        gen = self.gen
        gen.emit(f"{gen.name(op.results[0])} = _warp_shuffle(_ctx, {mode!r}, {value}, {lane}, "
                 f"_m, {gen.site(op)}, {array})")

    def op_pto_shfl(self, op: Operation) -> None:
        self._shuffle(op, "idx")

    def op_pto_shfl_up(self, op: Operation) -> None:
        self._shuffle(op, "up")

    def op_pto_shfl_down(self, op: Operation) -> None:
        self._shuffle(op, "down")

    def op_pto_shfl_xor(self, op: Operation) -> None:
        self._shuffle(op, "xor")

    def _vote(self, op: Operation, kind: str) -> None:
        self.gen.emit(f"{self.gen.name(op.results[0])} = _warp_vote(_ctx, {kind!r}, "
                      f"{self.gen.name(op.operands[0])}, _m, {self.gen.site(op)})")

    def op_pto_ballot(self, op: Operation) -> None:
        self._vote(op, "ballot")

    def op_pto_vote_any(self, op: Operation) -> None:
        self._vote(op, "any")

    def op_pto_vote_all(self, op: Operation) -> None:
        self._vote(op, "all")
