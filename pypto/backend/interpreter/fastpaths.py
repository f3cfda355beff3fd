"""The switch that turns the interpreter's fast paths off, to check they change nothing."""

from __future__ import annotations

import os

FAST_PATHS_ENV = "PYPTO_FAST_PATHS"


class _FastPaths:
    """The switch for the interpreter's fast paths (contiguous slices for lane-affine accesses,
    arithmetic computed straight into the stored slice, the uncontended and integer shortcuts
    of atomic_add). Each fast path gives the same bits as the general path it skips; turning
    them off (`PYPTO_FAST_PATHS=0`, or `FAST_PATHS.on = False`) runs the general paths only,
    which is how tests check that claim."""

    def __init__(self) -> None:
        self.on = os.environ.get(FAST_PATHS_ENV, "1").strip().lower() not in (
            "0", "false", "no", "off")


FAST_PATHS = _FastPaths()
