"""The cost model: modelled cycles of a launch from the executor's trace (docs/cost-model.md).

params.py (the numbers, from the target file) -> facts.py (what each op is) -> engine.py (one
block, event by event, within its share of HBM) -> launch.py (blocks over cores, the L2 rule on
footprint.py's footprints, HBM roofline) -> profile.py (what users
read), report.py (text) and chrome.py (Chrome / Perfetto trace). `pto.profile()` (pypto/
profiling.py) runs the kernel with the trace instrument and builds the Profile.
"""

from pypto.backend.cost_model.params import MODELS, ModelError, ModelParams
from pypto.backend.cost_model.profile import Profile, build_profile

__all__ = ["MODELS", "ModelError", "ModelParams", "Profile", "build_profile"]
