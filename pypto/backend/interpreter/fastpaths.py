"""The switch that turns the interpreter's fast paths off, to check they change nothing."""

from __future__ import annotations

from pypto.errors import UsageError
from pypto.settings import read

FAST_PATHS_ENV = "PYPTO_FAST_PATHS"


class _FastPaths:
    """The switch for the interpreter's fast paths (contiguous slices for lane-affine accesses,
    arithmetic computed straight into the stored slice, the uncontended and integer shortcuts
    of atomic_add). Each fast path gives the same bits as the general path it skips; turning
    them off (`PYPTO_FAST_PATHS=0`, or `FAST_PATHS.on = False`) runs the general paths only,
    which is how tests check that claim."""

    def __init__(self) -> None:
        # read at import, which must not raise (a command line tool could not report it): a
        # value the setting does not take is kept and raised by `check`, at every compile
        self.error: UsageError | None = None
        try:
            self.on: bool = read(FAST_PATHS_ENV, True)
        except UsageError as error:
            self.on, self.error = True, error

    def check(self) -> None:
        """Raise the setting's `UsageError` if PYPTO_FAST_PATHS had a value it does not take
        when pypto was imported (pypto/settings.py)."""
        if self.error is not None:
            raise self.error


FAST_PATHS = _FastPaths()
