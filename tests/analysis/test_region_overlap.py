"""`region_conflict` between two tile regions (an in-flight copy and a tile instruction) names
exactly the elements both cover, found by binary search in their sorted offsets rather than a
hashed intersection (the barrier check pairs every copy with every access). Checked against
NumPy's `intersect1d` of the regions' elements over generated row patterns and offsets, and the
alias analysis's row patterns against NumPy's `unique` of every row's elements."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import i32
from xdsl.ir import Block

from pypto.analysis.alias import _rows
from pypto.analysis.l1_access import Footprint, _copy_pattern, region_conflict
from pypto.analysis.lane_space import Affine, LaneSpace

ROOT = frozenset({Block(arg_types=[i32]).args[0]})
SPACE = LaneSpace.of(32)
patterns = st.tuples(st.integers(1, 12), st.integers(1, 40), st.integers(0, 60))


def _reference(rows: int, row_elems: int, stride: int) -> np.ndarray:
    starts = np.arange(rows, dtype=np.int64) * stride
    return np.unique((starts[:, None] + np.arange(row_elems, dtype=np.int64)[None, :]).ravel())


@settings(max_examples=300, deadline=None)
@given(x=patterns, y=patterns, ox=st.integers(0, 400), oy=st.integers(0, 400))
def test_two_regions_conflict_on_exactly_their_common_elements(x, y, ox, oy):
    ex, ey = _copy_pattern(*x), _copy_pattern(*y)
    assert ex is not None and ey is not None
    fr = Footprint(ROOT, Affine.const(ox), elements=ex)
    fo = Footprint(ROOT, Affine.const(oy), elements=ey)
    found = region_conflict(SPACE, fr, fo, ("the copy", "the mma"))
    common = np.intersect1d(_reference(*x) + ox, _reference(*y) + oy)
    if common.size == 0:
        assert found is None
    else:
        assert found is not None and found.exact
        np.testing.assert_array_equal(found.addresses, common)


@given(pattern=patterns)
def test_row_patterns_are_every_rows_elements_sorted_once(pattern):
    np.testing.assert_array_equal(_copy_pattern(*pattern), _reference(*pattern))
    np.testing.assert_array_equal(_rows(*pattern), _reference(*pattern))
