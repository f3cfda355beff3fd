"""`store(select(c, x, load p), p)` kept a plain store: a `freeze` on the reloaded value.

A select that stores an element's new value or its old one back (tree_selects.py,
exchange_selects.py: argmin block's `vals[tid] = select(c, b, a)` with `a = vals[tid]`) is,
vectorised, `store(vselect(m, x, load p), p)`. LLVM's x86 back end turns that into a masked
store (a SelectionDAG combine, LLVM 20). The next step's loads of those elements then wait
until the masked store reaches the cache: a load cannot take its data from a masked store
(argmin block: each tree step's first loads were its hot spots, docs/native.md#speed). A
`freeze` between the load and the select hides the pattern from the combine (it matches a
load operand only) and changes nothing else: freezing a value that is neither `undef` nor
`poison` — a load of initialised memory, as every L1 and HBM element is here — is that
value, bit for bit, and the optimiser keeps the `freeze` (a load is not known to be neither).

`freeze_reloads` inserts it, in the llvmlite module the lowering made (jit.py), wherever a
`select`'s false operand is a `load` of the pointer the select's result is stored to (in
the same function: tree_selects.py puts the stores under the step's condition, a block of
their own). llvmlite's IR builder has no `freeze`: the instruction is written generically.
"""

from __future__ import annotations

from typing import Any

ENABLED = True
"""Off: the back end's masked stores stay (for measuring; the cache key follows the source)."""


def freeze_reloads(module: Any) -> int:
    """Insert the `freeze`s (see the module doc) into `module` (an llvmlite `ir.Module`);
    returns how many."""
    from llvmlite import ir

    if not ENABLED:
        return 0
    count = 0
    for fn in module.functions:
        stored = {(id(i.operands[0]), _address(i.operands[1])) for block in fn.blocks
                  for i in block.instructions if isinstance(i, ir.StoreInstr)}
        for block in fn.blocks:
            for inst in list(block.instructions):
                if not isinstance(inst, ir.SelectInstr):
                    continue
                old = inst.operands[2]
                if not isinstance(old, ir.LoadInstr) or \
                        (id(inst), _address(old.operands[0])) not in stored:
                    continue
                frozen = ir.Instruction(block, old.type, "freeze", [old])
                block.instructions.insert(block.instructions.index(inst), frozen)
                inst.replace_usage(old, frozen)
                count += 1
    return count


def _address(pointer: Any) -> object:
    """A key equal for two pointers computed alike: the lowering makes an address (a
    `getelementptr` of the same operands) at each access."""
    from llvmlite import ir

    if isinstance(pointer, ir.GEPInstr):
        return str(pointer).split("=", 1)[1]  # (operands by their unique names)
    return id(pointer)
