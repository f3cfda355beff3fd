"""Whether a launch may run in row order (row_order.py): decided in Python at each launch.

The grid function of a kernel with a row-order path reads the verdict from the error record's
`row_order.ORDER_SLOT`; the launch code `jit.NativeKernel` generates writes it there before the
call: 1 when lane_independence.py's proof passes for every written tensor on this launch's
shape and integer arguments (no two lanes touch one element, one of them writing), else 0.
Kept apart from row_order.py, which the lowering imports, so that the lowering does not import
the replay's analyses. docs/native.md#row-order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType

from pypto.backend.native.lane_independence import LaunchCheck, Opaque
from pypto.backend.native.replay import written_params
from pypto.backend.native.row_order import ORDER_SLOT


def decision(kernel: func.FuncOp, block: tuple[int, int, int] | None) -> Decision | None:
    """The per-launch decision for `kernel` (without phases, compiled for `block`), or None
    when its grid function has no row-order path (a block of one row: the orders are the
    same) or it writes no tensor."""
    if block is None or block[1] * block[2] == 1:
        return None
    written = written_params(kernel)
    if not written:
        return None
    return Decision(kernel, sorted(written))


class Decision:
    """Per launch: may it run in row order? lane_independence.py's `LaunchCheck` over the
    written tensors, built at the first launch (1-2 ms: not paid by a load from the disk
    cache that never launches), its `refusal` memoised on the launch's grid, block and
    integer arguments by the generated launch code itself (a dict lookup, about 0.2 us, where
    the refusal's own memo builds its key from `bound`: 3.5 us). A written tensor whose
    accesses the proof cannot model: never row order."""

    MEMO = 256

    def __init__(self, kernel: func.FuncOp, written: Sequence[int]):
        self.kernel = kernel
        self.written = written
        self.check: LaunchCheck | None | bool = False  # (False: not built yet)
        self.memo: dict[tuple, int] = {}
        self.scalar_index = [i for i, a in enumerate(kernel.body.block.args)
                             if isinstance(a.type, IntegerType)]  # (LaunchCheck's key)

    def decide(self, key: tuple, grid: Sequence[int], block: Sequence[int],
               bound: Sequence[object]) -> int:
        if self.check is False:
            args = self.kernel.body.block.args
            try:
                self.check = LaunchCheck(self.kernel, [args[i] for i in self.written])
            except Opaque:
                self.check = None
        if len(self.memo) >= self.MEMO:
            self.memo.clear()
        value = 0 if self.check is None or self.check.refusal(grid, block, bound) else 1
        self.memo[key] = value
        return value

    def lines(self, names: Sequence[str], record: str) -> list[str]:
        """Lines of the generated launch function (`grid`, `block`, `bound` and the bound
        arguments `names` in scope; `record` the error record, `row_decision` this object,
        `row_memo` its memo) that write the decision in `record[ORDER_SLOT]`."""
        ints = [names[i] for i in self.scalar_index]
        key = f"(grid, block{''.join(', ' + n for n in ints)})"
        return [f"    row_key = {key}",
                "    row_ok = row_memo.get(row_key)",
                "    if row_ok is None:",
                "        row_ok = row_decision.decide(row_key, grid, block, bound)",
                f"    {record}[{ORDER_SLOT}] = row_ok"]
