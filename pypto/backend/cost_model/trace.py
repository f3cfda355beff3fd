"""`CostTrace`: the trace the cost model records — the executor's `Trace` (instructions, active
lanes, tokens, and where block-uniform L1 pointers point), plus whatever the model needs beyond
it from the run.

There is one trace: `run_and_cost` (run.py) records it for `pto.profile`, `pypto-opt
--emit=cost|timeline|trace` and the debugger's timeline alike, so they cost the same events. A
field added here that derives from lane addresses must be covered by the block-class keys
(classes.py: addresses are keyed by their pattern over the lanes and their alignment).
"""

from __future__ import annotations

from pypto.backend.interpreter.instruments import Trace


class CostTrace(Trace):
    """The executor's `Trace`, recorded for the cost model (see the module docstring)."""
