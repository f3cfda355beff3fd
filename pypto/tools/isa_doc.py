"""Generate the ISA reference, `docs/isa.md`, from the `pto` dialect.

The dialect is the single source of truth for the instruction set (docs/adding-an-op.md): every section of
the reference is read off an op or type class of `pypto/dialects/pto.py` -- the summary, prose and
`semantics:` / `syntax:` / `python:` / `example:` fields of its docstring, and its traits (the
pipe it issues on, the memory it reads and writes, whether it is a block collective; see
`pypto.dialects.traits`). This module only adds the grouping into sections and the
layout. Regenerate the file after changing the dialect:

    python -m pypto.tools.isa_doc > docs/isa.md

`tests/tools/test_isa_doc.py` fails when `docs/isa.md` differs from `render()`, and parses and
round-trips every example, so the reference can neither go stale nor show IR that does not parse.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation

from pypto.dialects import pto
from pypto.dialects.op_docs import DocEntry, parse_docstring
from pypto.dialects.traits import (
    Fence,
    declared_accesses,
    elementwise_reference,
    is_block_collective,
    pipe_of,
    warp_collective,
)

REGENERATE = "python -m pypto.tools.isa_doc > docs/isa.md"
"""The command that rewrites the reference (quoted by the staleness test)."""

GROUPS: tuple[tuple[str, str, tuple[type[IRDLOperation], ...]], ...] = (
    ("Ids",
     "Where a lane is in its block and grid (docs/language.md#instructions). All are int32 and per lane; "
     "`get_global_id(d) == get_block_id(d) * get_block_dim(d) + get_local_id(d)`.",
     (pto.GetGlobalIdOp, pto.GetLocalIdOp, pto.GetBlockIdOp, pto.GetBlockDimOp,
      pto.GetGridDimOp, pto.GetWarpIdOp, pto.GetLaneIdOp)),
    ("Lane memory",
     "One element per lane, through a pointer into HBM or L1 (an L1 buffer stands for a pointer "
     "to its first element).",
     (pto.AddPtrOp, pto.LoadOp, pto.StoreOp, pto.FmaOp, pto.AtomicAddOp)),
    ("Arithmetic",
     "Scalar arithmetic is `arith`/`math`; pto adds what they lack: `pto.fmod` and the "
     "elementwise functions (every op with the `Elementwise` trait is listed here).",
     (pto.FmodOp, *(op for op in pto.PTO_OPS if elementwise_reference(op) is not None))),
    ("L1 and tile instructions",
     "Tile instructions are executed once per block, cooperatively by its lanes, and must sit "
     "in uniform control flow (`pto-verify-barriers` reports one under a lane-dependent "
     "condition); they are block-level collectives. `alloc_local` is a static declaration, "
     "allowed anywhere. Sizes are compile-time values.",
     (pto.AllocLocalOp, pto.AsyncLoadOp, pto.AsyncStoreOp, pto.TileStoreOp, pto.WaitOp,
      pto.WaitAllOp, pto.FillOp, pto.MmaOp)),
    ("Tile vector instructions",
     "The PTO instruction set's tile operations (docs/language.md#tile-vector-instructions): "
     "each works on whole L1 tiles of a static `rows x cols` shape (`pto.alloc_tile`), once "
     "per block, on the vector pipe, in uniform control flow. Results are exact as the lane "
     "ops' (rounded once); reductions sum in a fixed pairwise order. Each is costed per "
     "256-byte repeat (docs/cost-model.md#tile-vector-instructions).",
     pto.TILE_VECTOR_OPS),
    ("Synchronisation",
     "Barriers between the lanes of a warp or of a block. Waits for async copies are with the "
     "tile instructions above.",
     (pto.BarrierOp, pto.BarrierBlockOp)),
    ("Warp shuffles and votes",
     "The lanes of a warp exchange register values (docs/language.md#warp-shuffles-and-votes). "
     "Each is a warp collective: every lane of the warp executes it together, so it must sit in "
     "control flow uniform across the warp (`pto-verify-barriers` and the frontend report one "
     "under a condition that differs between a warp's lanes). They are not barriers: as CUDA's "
     "`__shfl_sync`, they order no memory.",
     pto.WARP_OPS),
    ("Control flow",
     "Structured control flow is `scf` (`scf.if`, `scf.for`, and `scf.while` for SIMT loops whose "
     "trip count may differ between lanes, see docs/language.md); pto adds the check of a "
     "SIMT loop's run-time step.",
     (pto.LoopStepOp,)),
    ("Pipelines",
     "A `with pto.pipeline()` block and its `with pl.stage(...)` blocks: regions that "
     "`pto-double-buffer` can overlap across loop iterations.",
     (pto.PipelineOp, pto.StageOp, pto.YieldOp)),
    ("Debug",
     "Output for debugging kernels.",
     (pto.PrintfOp,)),
)
"""The reference's sections: (title, introduction, ops). Presentation only: every op of
`pto.PTO_OPS` must appear exactly once (`render()` refuses otherwise)."""


@dataclass(frozen=True)
class Instruction:
    """One op's reference entry."""

    op: type[IRDLOperation]
    doc: DocEntry

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def pipe(self) -> str:
        return pipe_of(self.op)

    @property
    def is_tile(self) -> bool:
        return is_block_collective(self.op)

    @property
    def memory(self) -> str:
        """The op's declared memory accesses in words: "reads `src` (HBM), writes `dst` (L1)"."""
        names = [name for name, _ in self.op.get_irdl_definition().operands]
        parts = [f"{access.kind}s `{names[access.operand]}` ({_SPACE_WORDS[access.space]})"
                 for access in declared_accesses(self.op)]
        if self.op.get_trait(Fence) is not None:
            parts.append("orders all memory (a fence: no access moves across it)")
        return ", ".join(parts) or "none"

    @property
    def has_regions(self) -> bool:
        return bool(self.op.get_irdl_definition().regions)


_SPACE_WORDS = {"global": "HBM", "local": "L1", "any": "HBM or L1"}


def types() -> list[tuple[type[Attribute], DocEntry]]:
    """Every type of the dialect, in registration order, with its docstring."""
    return [(attr, parse_docstring(attr.__doc__)) for attr in pto.PTO.attributes]


def sections() -> list[tuple[str, str, list[Instruction]]]:
    """The groups of `GROUPS` with their instructions; checks they cover `PTO_OPS` exactly."""
    grouped = [op for _, _, ops in GROUPS for op in ops]
    missing = [op.name for op in pto.PTO_OPS if op not in grouped]
    extra = [op.name for op in grouped if op not in pto.PTO_OPS]
    twice = sorted({op.name for op in grouped if grouped.count(op) > 1})
    if missing or extra or twice:
        raise ValueError(
            "pypto.tools.isa_doc.GROUPS must list every op of pto.PTO_OPS exactly once: "
            f"missing {missing}, not in PTO_OPS {extra}, listed twice {twice}")
    return [(title, intro, [Instruction(op, parse_docstring(op.__doc__)) for op in ops])
            for title, intro, ops in GROUPS]


def examples() -> list[tuple[str, str]]:
    """(op name, example IR) for every op that has an example."""
    return [(inst.name, inst.doc.example) for _, _, insts in sections() for inst in insts
            if inst.doc.example]


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _render_type(attr: type[Attribute], doc: DocEntry) -> list[str]:
    out = [f"### `!{attr.name}`", "", doc.summary, ""]
    if doc.semantics:
        out += [f"**Semantics:** {doc.semantics}", ""]
    if doc.syntax:
        out.append(f"- **IR syntax:** {doc.syntax}")
    if doc.python:
        out.append(f"- **Python:** {doc.python}")
    return out + [""]


def _render_instruction(inst: Instruction) -> list[str]:
    if inst.is_tile:
        tile = "yes: executed once per block, by all its lanes together; must be in uniform " \
               "control flow"
    elif warp_collective(inst.op) is not None:
        tile = "no: a warp collective, executed by all the lanes of a warp together; must be " \
               "in control flow uniform across the warp"
    elif inst.has_regions:
        tile = "no: a region op; each op in its region follows its own rule"
    else:
        tile = "no: executed by every active lane"
    out = [f"### `{inst.name}`", "", inst.doc.summary, ""]
    out += [f"- **Python:** {inst.doc.python or '(none)'}",
            f"- **IR syntax:** {inst.doc.syntax or '(none)'}",
            f"- **Pipe:** {inst.pipe}",
            f"- **Memory:** {inst.memory}",
            f"- **Block collective:** {tile}",
            ""]
    if inst.doc.semantics:
        out += [f"**Semantics:** {inst.doc.semantics}", ""]
    if inst.doc.example:
        out += ["**Example:**", "", "```mlir", inst.doc.example, "```", ""]
    return out


def render() -> str:
    """The whole reference, `docs/isa.md`, as Markdown."""
    groups = sections()
    out = [
        "# PTO instruction set reference",
        "",
        f"<!-- GENERATED from pypto/dialects/pto.py by `{REGENERATE}`. Do not edit by hand: "
        "change the op's docstring and regenerate. -->",
        "",
        "One section per instruction of the `pto` dialect, the virtual ISA that `@pto.kernel` "
        "functions lower to (docs/language.md). Scalar values are per lane (SPMD, as in CUDA); "
        "arithmetic is `arith` / `math`, control flow `scf`, kernels are `func.func` ops marked "
        "`attributes {pto.kernel}`. Every op carries the Python source location it came from "
        "(`loc(\"k.py\":12:8)`, shown by `pypto-opt --mlir-print-debuginfo`).",
        "",
        "*Pipe* is the unit the instruction issues on (SCALAR, VECTOR, CUBE, MTE_IN, MTE_OUT): "
        "instructions of different pipes overlap, each pipe runs in order. *Block collectives* "
        "(the tile instructions and `pto.barrier_block`) are executed once per block, by all "
        "its lanes together, and must be in uniform control flow. Both are traits of the op "
        "(`pypto/dialects/traits.py`).",
        "",
        "| instruction | Python | pipe | block collective |",
        "|---|---|---|---|",
    ]
    for _, _, insts in groups:
        for inst in insts:
            out.append(f"| [`{inst.name}`](#{_anchor(inst.name)}) | "
                       f"{_cell(inst.doc.python or '')} | {inst.pipe} | "
                       f"{'yes' if inst.is_tile else ''} |")
    out += ["", "## Types", ""]
    for attr, doc in types():
        out += _render_type(attr, doc)
    for title, intro, insts in groups:
        out += [f"## {title}", "", intro, ""]
        for inst in insts:
            out += _render_instruction(inst)
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
