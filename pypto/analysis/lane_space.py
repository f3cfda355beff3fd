"""The values `LaneModel` (pypto.analysis.lane_values) computes with: the lanes of a block
(`LaneSpace`), integer values over them (`Affine`: uniform terms plus a concrete part per
lane), three-valued conditions (`TriBool`), simulated loops (`Simulation`), and the limits of
the analysis."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from pypto.dialects import pto

MAX_TRIPS = 4096
"""Longest loop that is simulated; longer loops keep their counters symbolic."""

MAX_AGE = 8
"""How many iterations back a loop-carried async copy is told apart: ages 1 .. MAX_AGE - 1 are
exact (the copy of 1, 2, ... iterations ago), MAX_AGE means "that many or more". A copy issued
d iterations ahead (`pto-double-buffer{stages=d+1}`) is waited d iterations later, so the
slot it fills can only be proven free again with exact ages up to d."""

Env = Mapping[SSAValue, int]
"""Concrete values of loop counters / loop-carried integers for one evaluation."""

Term = Hashable
"""A symbolic uniform value: ("block_id", d), ("v", ssa_value) or a structural key."""

Instance = tuple[Operation, "scf.ForOp | None", int]
"""An execution of an async copy a token may stand for: (op, loop, age), see token_instances."""


# --------------------------------------------------------------------------------------------
# The lanes of a block
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaneSpace:
    """The lanes of one block: their local ids per dimension, linear id, warp and lane in warp.

    `exact_dims=False` means only the number of lanes is known (the pass's `block-size`), not
    its split into x/y/z: then a kernel that uses ids of dimensions 1 or 2 has unknown per-dim
    local ids (warp and lane ids, which depend on the linear id only, stay known).
    """

    shape: tuple[int, int, int]
    exact_dims: bool = True
    warp_size: int = pto.WARP_SIZE  # the target's (pypto.backend.targets), 32 by default

    @classmethod
    def of(cls, block: int | Sequence[int], *, exact_dims: bool | None = None,
           warp_size: int = pto.WARP_SIZE) -> LaneSpace:
        dims = [block] if isinstance(block, int) else list(block)
        if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d <= 0 for d in dims):
            raise ValueError(f"a block shape is 1 to 3 positive ints, got {block!r}")
        while len(dims) < 3:
            dims.append(1)
        exact = not isinstance(block, int) if exact_dims is None else exact_dims
        return cls((dims[0], dims[1], dims[2]), exact, warp_size)

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1] * self.shape[2]

    @cached_property
    def linear(self) -> np.ndarray:
        return np.arange(self.size, dtype=np.int64)

    @cached_property
    def warp(self) -> np.ndarray:
        return self.linear // self.warp_size

    @cached_property
    def lane(self) -> np.ndarray:
        return self.linear % self.warp_size

    def local_id(self, dim: int) -> np.ndarray:
        bx, by, _ = self.shape
        if dim == 0:
            return self.linear % bx
        if dim == 1:
            return (self.linear // bx) % by
        return self.linear // (bx * by)

    def block_dim(self, dim: int) -> int:
        return self.shape[dim]


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Affine:
    """`sum(coef * term for term, coef in terms) + lanes`: uniform unknowns plus a concrete part.

    `lanes` is an int64 NumPy array, 0-d when the concrete part is the same for every lane.
    """

    terms: frozenset[tuple[Term, int]]
    lanes: np.ndarray

    @staticmethod
    def const(value: int | np.ndarray) -> Affine:
        return Affine(frozenset(), np.asarray(value, dtype=np.int64))

    @property
    def concrete(self) -> bool:
        return not self.terms

    @property
    def scalar(self) -> int | None:
        """The value when it is one known integer for every lane."""
        if self.terms or self.lanes.ndim != 0:
            return None
        return int(self.lanes)

    def canon(self) -> tuple[frozenset[tuple[Term, int]], Any]:
        """A hashable identity of a uniform value (terms and constant part)."""
        lanes = int(self.lanes) if self.lanes.ndim == 0 else self.lanes.tobytes()
        return (self.terms, lanes)

    def scaled(self, k: int) -> Affine:
        if k == 0:
            return Affine.const(0)
        return Affine(frozenset((t, c * k) for t, c in self.terms), self.lanes * k)

    def __add__(self, other: Affine) -> Affine:
        coefs = dict(self.terms)
        for t, c in other.terms:
            coefs[t] = coefs.get(t, 0) + c
        return Affine(frozenset((t, c) for t, c in coefs.items() if c != 0),
                      self.lanes + other.lanes)

    def __neg__(self) -> Affine:
        return self.scaled(-1)

    def __sub__(self, other: Affine) -> Affine:
        return self + (-other)


@dataclass(frozen=True, eq=False)
class TriBool:
    """A condition per lane as two may-sets: lanes where it may hold, lanes where it may not.

    An exactly known condition has disjoint complementary sets; an unknown one (it depends on
    a parameter) may be either on every lane, which is what a sound "may this lane execute the
    access" needs.
    """

    may_true: np.ndarray
    may_false: np.ndarray

    @staticmethod
    def exact(values: np.ndarray) -> TriBool:
        v = np.asarray(values, dtype=bool)
        return TriBool(v, ~v)

    @staticmethod
    def unknown() -> TriBool:
        return TriBool(np.asarray(True), np.asarray(True))

    @property
    def is_exact(self) -> bool:
        return bool(np.all(self.may_true != self.may_false))

    def negated(self) -> TriBool:
        return TriBool(self.may_false, self.may_true)

    def and_(self, o: TriBool) -> TriBool:
        return TriBool(self.may_true & o.may_true, self.may_false | o.may_false)

    def or_(self, o: TriBool) -> TriBool:
        return TriBool(self.may_true | o.may_true, self.may_false & o.may_false)

    def xor(self, o: TriBool) -> TriBool:
        return TriBool((self.may_true & o.may_false) | (self.may_false & o.may_true),
                       (self.may_true & o.may_true) | (self.may_false & o.may_false))


@dataclass
class Simulation:
    """The iterations of a loop under one `Env` of its enclosing loops."""

    iterations: list[dict[SSAValue, int]]
    """Per iteration: the counter and every loop-carried integer that stayed known."""
    final: dict[SSAValue, int]
    """The loop's results that are known (the carried values after the last iteration)."""
