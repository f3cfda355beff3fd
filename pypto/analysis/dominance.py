"""SSA dominance for pto IR: every use must come after its definition, in the same block or in
an enclosing one (structured control flow: single-block regions).

The pinned xDSL's verifier does not check it, so `.mlir` with a use before its definition (two
lines swapped) verified, and the interpreter then failed with an UnboundLocalError in generated
code (found by the fuzzer). pypto-opt checks it after parsing and `run_pipeline` after every
pass.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue


def first_dominance_violation(root: Operation) -> tuple[Operation, str] | None:
    """The first op (in program order) using a value that does not dominate it, and why."""
    visible: set[SSAValue] = set()
    for region in root.regions:
        for block in region.blocks:
            found = _check_block(block, visible, len(region.blocks) > 1)
            if found is not None:
                return found
    return None


def _check_block(block: Block, visible: set[SSAValue], cfg: bool) -> tuple[Operation, str] | None:
    added: list[SSAValue] = []
    try:
        for arg in block.args:
            visible.add(arg)
            added.append(arg)
        for op in block.ops:
            if not cfg:  # multi-block regions (branches) would need a real dominator tree
                for index, operand in enumerate(op.operands):
                    if operand not in visible:
                        what = (f"%{operand.name_hint}" if operand.name_hint else
                                f"operand #{index}")
                        return op, (f"{what} is used before it is defined (its definition "
                                    f"does not dominate this use)")
            for region in op.regions:
                for inner in region.blocks:
                    found = _check_block(inner, visible, cfg or len(region.blocks) > 1)
                    if found is not None:
                        return found
            for result in op.results:
                visible.add(result)
                added.append(result)
        return None
    finally:
        for value in added:
            visible.discard(value)
