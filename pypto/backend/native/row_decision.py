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

from pypto.backend.native.lane_independence import LaunchCheck, Opaque
from pypto.backend.native.replay import written_params
from pypto.backend.native.row_order import ORDER_SLOT


def launch_check(kernel: func.FuncOp, block: tuple[int, int, int] | None) -> LaunchCheck | None:
    """The lane-independence proof of the written tensors of `kernel` (without phases, compiled
    for `block`) that decides per launch whether it may run in row order; None when the grid
    function has no row-order path (a block of one row: the orders are the same) or a written
    tensor's accesses cannot be modelled (then it never runs in row order)."""
    if block is None or block[1] * block[2] == 1:
        return None
    written = written_params(kernel)
    if not written:
        return None
    args = kernel.body.block.args
    try:
        return LaunchCheck(kernel, [args[i] for i in sorted(written)])
    except Opaque:
        return None


class Decision:
    """Per launch: may it run in row order? `LaunchCheck.refusal` memoised on the launch's
    grid, block and integer arguments by the generated launch code itself (a dict lookup,
    about 0.2 us, where the refusal's own memo builds its key from `bound`: 3.5 us)."""

    MEMO = 256

    def __init__(self, check: LaunchCheck):
        self.check = check
        self.memo: dict[tuple, int] = {}

    def decide(self, key: tuple, grid: Sequence[int], block: Sequence[int],
               bound: Sequence[object]) -> int:
        if len(self.memo) >= self.MEMO:
            self.memo.clear()
        value = 0 if self.check.refusal(grid, block, bound) else 1
        self.memo[key] = value
        return value

    def lines(self, names: Sequence[str], record: str) -> list[str]:
        """Lines of the generated launch function (`grid`, `block`, `bound` and the bound
        arguments `names` in scope; `record` the error record, `row_decision` this object,
        `row_memo` its memo) that write the decision in `record[ORDER_SLOT]`."""
        ints = [names[i] for i in self.check.scalar_index]
        key = f"(grid, block{''.join(', ' + n for n in ints)})"
        return [f"    row_key = {key}",
                "    row_ok = row_memo.get(row_key)",
                "    if row_ok is None:",
                "        row_ok = row_decision.decide(row_key, grid, block, bound)",
                f"    {record}[{ORDER_SLOT}] = row_ok"]
