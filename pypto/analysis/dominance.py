"""SSA dominance for pto IR: every use must come after its definition, in the same block or in
an enclosing one (structured control flow: single-block regions).

The pinned xDSL's verifier does not check it, so `.mlir` with a use before its definition (two
lines swapped) verified, and the interpreter then failed with an UnboundLocalError in generated
code (found by the fuzzer). pypto-opt checks it after parsing and `run_pipeline` after every
pass.

The same walk rejects an `scf.for` whose step is the constant 0 (MLIR's verifier requires a
positive constant step; xDSL 0.74's does not check it): the loop would never end.
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
            if op.name == "scf.for" and _constant_int(op.operands[2]) == 0:
                return op, "constant step operand must not be 0 (the loop would never end)"
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


def _constant_int(value: SSAValue) -> int | None:
    """The integer of an `arith.constant` result, else None."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.name == "arith.constant":
        attr = owner.properties.get("value")
        if attr is None:
            attr = owner.attributes.get("value")
        number = getattr(attr, "value", None)
        data = getattr(number, "data", None)
        if isinstance(data, int):
            return data
    return None
