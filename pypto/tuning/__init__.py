"""`pto.autotune` (docs/autotune.md): configs of a kernel ranked by the cost model, the winner checked
on the interpreter, the sweep run on any `concurrent.futures.Executor` and cached on disk.

autotune.py (the sweep) -> shipping.py (what crosses to workers, by value) -> worker.py (the
tasks) -> cache.py (the disk cache) -> result.py / plot.py (what users read). docs/autotune.md.
"""

from pypto.tuning.autotune import autotune
from pypto.tuning.cache import CACHE_ENV, default_cache_dir
from pypto.tuning.result import Record, Table, TuneResult, TuneStats

__all__ = ["autotune", "TuneResult", "Record", "Table", "TuneStats", "CACHE_ENV",
           "default_cache_dir"]
