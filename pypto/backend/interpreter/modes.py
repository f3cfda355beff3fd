"""The interpreter's execution modes (docs/interpreter.md, "Execution modes"): how many lanes one
lane vector holds. The planner, the strategies and codegen choose by them."""

from __future__ import annotations

GRID = "grid"
"""Mode: one lane vector holds every lane of the launch (no L1, no barriers)."""
BLOCK = "block"
"""Mode: one lane vector per block, all warps in lockstep."""
WARP = "warp"
"""Mode: one lane vector per warp; the kernel is a generator that yields at block-level sync
points (barrier_block, tile instructions) so a scheduler can interleave warps."""
BATCH = "batch"
"""Mode: one lane vector holds several whole blocks that run in lockstep, each with its own
copy of every L1 buffer (kernels whose block-level instructions are barriers, fills and
allocations in control flow uniform across the whole vector)."""
