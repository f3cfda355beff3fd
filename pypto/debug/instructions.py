"""What the debugger counts as an instruction, what it calls it, and where it came from.

`step()` moves by *PTO instruction*: an op of the `pto` / `npu` dialect that does memory or
compute work (LOAD, STORE, FMA, MMA, the copies, waits, barriers, PRINTF, the npu flags).
Address arithmetic and bookkeeping — ids, `addptr`, `alloc_local` declarations, pipeline and
stage regions, `arith` on lane values, `scf` structure — runs in between without stopping,
which is why the article's first `step()` prints a LOAD.
"""

from __future__ import annotations

from pypto.backend.interpreter.instruments import OpInfo
from pypto.dialects import traits


def is_instruction(info: OpInfo) -> bool:
    """A PTO (or npu) instruction, declared so by its `InstructionKind` trait: what `step()`
    counts."""
    return traits.is_instruction(info.op)


def kind_of(info: OpInfo) -> str:
    """LOAD, STORE, FMA, MMA, COPY_IN, ... (`InstructionKind`)."""
    return info.kind


def position(info: OpInfo) -> tuple[str, int]:
    """(file, line) of an op's Python source."""
    return info.location.rsplit(":", 2)[0], info.line or 0


__all__ = ["is_instruction", "kind_of", "position"]
