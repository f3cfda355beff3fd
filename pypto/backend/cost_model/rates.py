"""How many cycles an instruction's work streams through its unit, from the target's geometry.

Small functions of the target's `[cost]` keys, each modelling one thing the hardware does (not
a figure fitted per case), used by the engine's `duration`:

- `cube_repeats`: the Cube computes whole fractals. An m x n x k MMA is padded to multiples of
  `cube_fractal_m` x `cube_fractal_n` x (`cube_fractal_k_bytes` / element size) — on Ascend a
  16 x 16 fractal of 32 bytes of K: 16 for fp16, 8 for fp32 — and the padded MACs stream at
  `cube_macs_per_cycle` (x `cube_fp32_rate` for 32-bit inputs).
- `vector_repeats`: the Vector unit works in repeats of `vector_repeat_bytes`, each taking
  `vector_cycles_per_repeat` cycles; a partial last repeat (the tail) costs a whole one.
- `copy_repeats`: a copy streams `mte_bytes_per_cycle`, or `mte_l1_bytes_per_cycle` when it
  fills a Cube operand (GM->L1, another path than GM->UB on Ascend; 0: the same rate).

The head of each (the start-up before the first repeat) is the instruction's latency in the
model's table (`[cost.<model>.latency]`, `[cost.default_latency]`): duration = latency +
repeats - 1.
"""

from __future__ import annotations

import math

from pypto.backend.cost_model.params import ModelParams


def _padded(size: int, tile: int) -> int:
    return -(-size // tile) * tile if tile > 1 else size


def cube_repeats(shape: tuple[int, int, int], elem_bytes: int, fp32: bool,
                 p: ModelParams) -> int:
    """Cycles the Cube streams an m x n x k MMA of `elem_bytes` inputs for."""
    m, n, k = shape
    k_tile = p.cube_fractal_k_bytes // elem_bytes if p.cube_fractal_k_bytes else 1
    macs = _padded(m, p.cube_fractal_m) * _padded(n, p.cube_fractal_n) * _padded(k, k_tile)
    rate = p.cube_macs_per_cycle * (p.cube_fp32_rate if fp32 else 1.0)
    return max(1, math.ceil(macs / rate))


def vector_repeats(work_bytes: int, p: ModelParams) -> int:
    """Cycles the Vector unit streams `work_bytes` for: whole repeats, the tail rounded up."""
    return max(1, math.ceil(work_bytes / p.vector_repeat_bytes)) * p.vector_cycles_per_repeat


def copy_repeats(nbytes: int, p: ModelParams, to_cube: bool = False) -> int:
    """Cycles a copy streams `nbytes` through its MTE pipe for; `to_cube`: the copy fills an
    MMA operand (the GM->L1 path, `mte_l1_bytes_per_cycle` when the target sets it)."""
    rate = p.mte_l1_bytes_per_cycle if to_cube and p.mte_l1_bytes_per_cycle else \
        p.mte_bytes_per_cycle
    return max(1, math.ceil(nbytes / rate))
