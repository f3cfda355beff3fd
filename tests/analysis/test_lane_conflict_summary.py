"""`lanes_conflict` rejects most pairs through per-footprint summaries (distinct offsets with
the warps touching each, computed once per footprint: the barrier walk pairs every access with
every open one). Checked against a brute-force reference over every pair of lanes: lanes of
different warps, both active, one element."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i32
from xdsl.ir import Block

from pypto.analysis.l1_access import Footprint, lanes_conflict
from pypto.analysis.lane_space import Affine, LaneSpace


def _brute(space: LaneSpace, ax: np.ndarray, mx: np.ndarray, ay: np.ndarray,
           my: np.ndarray) -> bool:
    w = space.warp
    same = ax[:, None] == ay[None, :]
    other = w[:, None] != w[None, :]
    return bool((same & other & mx[:, None] & my[None, :]).any())


def test_summary_path_agrees_with_every_lane_pair():
    rng = np.random.default_rng(7)
    root = frozenset({Block(arg_types=[i32]).args[0]})
    for trial in range(400):
        space = LaneSpace.of(int(rng.choice([32, 64, 96, 128])))
        n = space.size
        spread = int(rng.choice([4, 32, n, 4 * n]))
        # warp-private slots (the warp reduction's pattern), shared slots, or random ones
        kind = trial % 3
        if kind == 0:
            ax = space.warp * 32 + rng.integers(0, 32, n)
            ay = space.warp * 32 + rng.integers(0, 32, n)
        elif kind == 1:
            ax = rng.integers(0, spread, n)
            ay = rng.integers(0, spread, n)
        else:
            ax = space.linear.astype(np.int64).copy()
            ay = (space.linear + int(rng.integers(-40, 40))).astype(np.int64)
        mx = rng.random(n) < rng.random()
        my = rng.random(n) < rng.random()
        fx = Footprint(root, Affine(frozenset(), ax.astype(np.int64)), mx)
        fy = Footprint(root, Affine(frozenset(), ay.astype(np.int64)), my)
        found = lanes_conflict(space, fx, fy)
        expected = _brute(space, ax, mx, ay, my)
        assert (found is not None) == expected, (trial, kind)
        if found is not None:
            assert found.exact
            hit = set(found.addresses.tolist())
            assert hit and hit <= set(ax[mx].tolist()) & set(ay[my].tolist())
        # the summaries are cached on the footprints: asking again gives the same answer
        assert (lanes_conflict(space, fx, fy) is not None) == expected
