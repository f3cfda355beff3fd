"""Small type predicates and descriptions shared by the frontend's modules."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import AnyFloat, IntegerType
from xdsl.ir import Attribute, SSAValue

from pypto import dtypes
from pypto.frontend.blame import describe_type, is_pointer


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data != 1


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _type_name(t: Attribute) -> str:
    try:
        return "pto." + dtypes.from_mlir(t).name
    except (TypeError, KeyError):
        return str(t)




def _describe_value(value: Any) -> str:
    if isinstance(value, SSAValue):
        if is_pointer(value.type):
            return describe_type(value.type)
        return f"a {_type_name(value.type)} value"
    return repr(value)


class NeedsConstexpr(Exception):
    """A compile-time value was needed from kernel parameters: specialise on them and retry."""

    def __init__(self, params: set[str]):
        super().__init__(f"specialise on {sorted(params)}")
        self.params = params
