"""Every fast path of the interpreter gives the bits of the general path it skips.

The kernel zoo (tests/kernels/zoo.py, timed by bench/zoo.py: every kernel of tests/kernels/ and examples/, at small sizes)
runs with the fast paths on and off (`pypto.backend.interpreter.fastpaths.FAST_PATHS`), in
lockstep and under every warp schedule; each run is checked against NumPy by the zoo's own
check, and the two runs' outputs must be equal bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from pypto.backend.interpreter.fastpaths import FAST_PATHS

from tests.kernels import zoo

CASES = zoo.cases("tiny")
SCHEDULES = [None, "in_order", "reverse", "random:7"]


@pytest.fixture
def fast_paths_switch():
    saved = FAST_PATHS.on
    yield FAST_PATHS
    FAST_PATHS.on = saved


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: s or "lockstep")
@pytest.mark.parametrize("case", CASES, ids=[c.name.split(" ")[0] for c in CASES])
def test_fast_and_general_paths_agree(case, schedule, fast_paths_switch):
    outs = {}
    for on in (True, False):
        fast_paths_switch.on = on
        outs[on], _ = zoo.run_once(case, np.random.default_rng(7), schedule=schedule)
    for name in outs[True]:
        a = np.ascontiguousarray(outs[True][name])
        b = np.ascontiguousarray(outs[False][name])
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), name
