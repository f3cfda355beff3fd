"""The zoo's pipelined kernels (tests/kernels/pipelined.py) against NumPy, compiled with
`pto.compile`'s default pipeline (which double-buffers them), for several trip counts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import run_kernel
from tests.kernels.pipelined import PIPELINED


@pytest.mark.parametrize("name", sorted(PIPELINED))
@pytest.mark.parametrize("trips", [0, 1, 4])
def test_pipelined_kernel_matches_numpy(name, trips):
    case = PIPELINED[name](trips)
    out = run_kernel(case.kernel, case.grid, case.block, case.args)[case.output]
    if case.exact:
        np.testing.assert_array_equal(out, case.reference)
    else:
        np.testing.assert_allclose(out, case.reference, rtol=1e-4, atol=2e-6 * 16 * trips + 1e-6)
