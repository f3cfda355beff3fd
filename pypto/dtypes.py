"""Element types of the kernel language and their three faces: NumPy, MLIR, and the user's name.

One table (`_TABLE`) is the single source of truth; everything else is derived from it.
NumPy dtypes (and `np.float32`-style scalar types) are accepted wherever a `DType` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
)
from xdsl.ir import Attribute

from pypto.errors import UsageError


@dataclass(frozen=True)
class DType:
    """A kernel element type (`pto.float32`, ...)."""

    name: str
    np_dtype: np.dtype
    kind: str  # "float" | "int" | "bool"
    bits: int

    def mlir(self) -> Attribute:
        return _TO_MLIR[self.name]()

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    def __repr__(self) -> str:
        return f"pto.{self.name}"


float32 = DType("float32", np.dtype(np.float32), "float", 32)
float16 = DType("float16", np.dtype(np.float16), "float", 16)
bfloat16 = DType("bfloat16", np.dtype(ml_dtypes.bfloat16), "float", 16)
float64 = DType("float64", np.dtype(np.float64), "float", 64)
int32 = DType("int32", np.dtype(np.int32), "int", 32)
int64 = DType("int64", np.dtype(np.int64), "int", 64)
bool_ = DType("bool_", np.dtype(np.bool_), "bool", 1)

_TABLE: tuple[DType, ...] = (float32, float16, bfloat16, float64, int32, int64, bool_)

_TO_MLIR = {
    "float32": Float32Type,
    "float16": Float16Type,
    "bfloat16": BFloat16Type,
    "float64": Float64Type,
    "int32": lambda: IntegerType(32),
    "int64": lambda: IntegerType(64),
    "bool_": lambda: IntegerType(1),
}

_BY_NP = {d.np_dtype: d for d in _TABLE}


def as_dtype(value: Any) -> DType:
    """Normalise a user-supplied dtype (a `DType`, NumPy dtype or scalar type, or a name)."""
    if isinstance(value, DType):
        return value
    try:
        npd = np.dtype(value)
    except (TypeError, ValueError, SyntaxError, OverflowError) as exc:
        # NumPy parses some strings as struct specs: "1,,2" is a SyntaxError, "(2**70,)f4" an
        # OverflowError; none of them is a dtype name

        raise UsageError(f"{value!r} is not a dtype; use one of "
                        f"{', '.join('pto.' + d.name for d in _TABLE)}") from exc
    if npd not in _BY_NP:
        raise UsageError(f"dtype {npd} is not supported by pypto; use one of "
                        f"{', '.join('pto.' + d.name for d in _TABLE)}")
    return _BY_NP[npd]


def from_mlir(attr: Attribute) -> DType:
    """The `DType` of an MLIR scalar type."""
    if isinstance(attr, Float32Type):
        return float32
    if isinstance(attr, Float16Type):
        return float16
    if isinstance(attr, BFloat16Type):
        return bfloat16
    if isinstance(attr, Float64Type):
        return float64
    if isinstance(attr, IntegerType):
        width = attr.width.data
        found = {1: bool_, 32: int32, 64: int64}.get(width)
        if found is not None:
            return found
    raise TypeError(f"no pypto dtype for MLIR type {attr}")


def np_dtype_of(attr: Attribute) -> np.dtype:
    return from_mlir(attr).np_dtype
