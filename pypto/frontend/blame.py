"""Which launch argument a type error comes from (docs/language.md#errors: errors that blame the right thing).

A kernel is specialised on the types of its launch arguments, so a wrong argument (a float where
a pointer is used, swapped arguments, an int32 tensor given to a float kernel) shows up as a type
error somewhere in the body, far from its cause. When a type error involves a value whose type
comes from a parameter, the message names that parameter and the launch argument that gave it the
type — `parameter 'b' is float32 because launch argument 1 was the float 1.5` — so the user looks
at the launch, not at the line. A value "comes from" a parameter when walking its definition
backwards (through any op) reaches the parameter, and the parameter's type explains the value's:
the same type, or a pointer to it (`pto.load(a + i)` is int32 because `a` points to int32).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from xdsl.ir import Attribute, BlockArgument, Block, SSAValue

from pypto import dtypes
from pypto.dialects import pto

_WALK_LIMIT = 10_000
"""Definitions visited per blamed value at most (a type error is rare; the walk stays cheap)."""


def describe_type(t: Attribute) -> str:
    """`float32`, `a pointer to float32`, `an L1 buffer of float16`."""
    if isinstance(t, pto.PtrType):
        return f"a pointer to {describe_type(t.element_type)}"
    if isinstance(t, pto.L1BufferType):
        return f"an L1 buffer of {describe_type(t.element_type)}"
    try:
        return dtypes.from_mlir(t).name
    except (TypeError, KeyError):
        return str(t)


def is_pointer(t: Attribute) -> bool:
    return isinstance(t, pto.PtrType | pto.L1BufferType)


def describe_argument(value: Any) -> str:
    """How a launch argument is named in a message: `the float 1.5`, `a float32 tensor`."""
    if isinstance(value, bool):
        return f"the bool {value}"
    if isinstance(value, int):
        return f"the int {value}"
    if isinstance(value, float):
        return f"the float {value!r}"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "nbytes") and hasattr(value, "freed"):
        return f"{_article(dtypes.as_dtype(dtype).name)} {dtypes.as_dtype(dtype).name} tensor"
    if dtype is not None and hasattr(value, "item"):
        return f"the NumPy {value.dtype} {value.item()!r}"
    return f"a {type(value).__name__}"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def parameters_of(value: SSAValue, function_block: Block) -> list[BlockArgument]:
    """The kernel parameters `value` is computed from, in parameter order."""
    found: set[BlockArgument] = set()
    stack = [value]
    seen: set[SSAValue] = set()
    while stack and len(seen) < _WALK_LIMIT:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if v.owner is function_block:
                found.add(v)
            continue
        stack.extend(v.owner.operands)
    return sorted(found, key=lambda arg: arg.index)


def _explains(param_type: Attribute, value_type: Attribute) -> bool:
    if param_type == value_type:
        return True
    return is_pointer(param_type) and param_type.element_type == value_type  # type: ignore


def blame(values: Sequence[Any], function_block: Block | None, params: Sequence[str],
          launch_args: Sequence[Any] | None) -> list[str]:
    """Sentences naming the parameters whose launch arguments gave `values` their types:
    `parameter 'b' is float32 because launch argument 1 was the float 1.5`."""
    if function_block is None or launch_args is None:
        return []
    sentences: list[str] = []
    for value in values:
        if not isinstance(value, SSAValue):
            continue
        for arg in parameters_of(value, function_block):
            if not _explains(arg.type, value.type) or arg.index >= len(launch_args):
                continue
            name = params[arg.index] if arg.index < len(params) else f"#{arg.index}"
            sentence = (f"parameter '{name}' is {describe_type(arg.type)} because launch "
                        f"argument {arg.index} was {describe_argument(launch_args[arg.index])}")
            if sentence not in sentences:
                sentences.append(sentence)
    return sentences


_POINTER_CALLS = frozenset({"load", "store", "atomic_add", "atomic_max", "atomic_min",
                            "atomic_and", "atomic_or", "atomic_xor", "atomic_exch",
                            "atomic_cas"})
"""`pto.<name>(p + i, ...)`: calls whose first argument is an address."""


def pointer_use(tree: ast.AST, name: str) -> ast.AST | None:
    """The first place the kernel source uses parameter `name` as a pointer — `name[i]`, or
    `name` / `name + i` as the address of `pto.load` / `pto.store` / an atomic — or None."""
    def is_name(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    def is_address(node: ast.AST) -> bool:
        return is_name(node) or isinstance(node, ast.BinOp) and \
            isinstance(node.op, ast.Add | ast.Sub) and (is_name(node.left) or is_name(node.right))

    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_name(node.value):
            found.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _POINTER_CALLS and node.args and is_address(node.args[0]):
            found.append(node)
    return min(found, key=lambda n: (n.lineno, n.col_offset)) if found else None


def scalar_used_as_pointer(values: Sequence[Any], function_block: Block | None,
                           params: Sequence[str], launch_args: Sequence[Any] | None,
                           tree: ast.AST) -> tuple[str, ast.AST] | None:
    """When a type error's values come from a parameter whose launch argument is a number
    although the kernel uses the parameter as a pointer: the sentence that says so (`parameter
    'b' is used as a pointer but launch argument 1 is the float 1.5`) and the use's node."""
    if function_block is None or launch_args is None:
        return None
    for value in values:
        if not isinstance(value, SSAValue):
            continue
        for arg in parameters_of(value, function_block):
            if arg.index >= len(launch_args) or arg.index >= len(params) or \
                    not isinstance(launch_args[arg.index], bool | int | float):
                continue
            use = pointer_use(tree, params[arg.index])
            if use is not None:
                return (f"parameter '{params[arg.index]}' is used as a pointer but launch "
                        f"argument {arg.index} is {describe_argument(launch_args[arg.index])}: "
                        f"pass a device tensor (pto.tensor(array)) or a NumPy array there",
                        use)
    return None
