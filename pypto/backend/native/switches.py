"""The native backend's code-shaping switches, as part of the disk cache key.

Several modules of this backend carry a module-level `ENABLED` flag that selects between two
ways of compiling the same kernel (a loop nest or a call into the interpreter's definition,
a fused sorting network or the plain phases, ...): tests turn them off to check that both
ways give the interpreter's bits. Object code compiled one way must then never be read back
from the disk cache for the other (docs/native.md#the-cache). Rather than list the flags in
jit.py by hand (a new one would be forgotten), the key names every loaded module of this
package whose `ENABLED` is off; with every switch on (the product's only state) the part is
constant, so a module imported later cannot change the key of a kernel.
"""

from __future__ import annotations

import sys

PACKAGE = "pypto.backend.native."


def cache_key() -> str:
    """The part of the disk cache key the switches decide: the modules switched off."""
    off = sorted(name[len(PACKAGE):] for name, module in list(sys.modules.items())
                 if name.startswith(PACKAGE) and getattr(module, "ENABLED", True) is False)
    return f"switched off: {','.join(off)}"


__all__ = ["cache_key"]
