"""Run a compiled kernel: choose the execution mode, bind arguments, iterate over lane vectors.

Modes (see docs/interpreter.md):
- grid mode: a kernel without L1 or barriers is one big lane vector covering the whole launch
  (split into chunks of whole blocks to bound memory). Blocks cannot observe each other, so this
  is exact.
- block mode: one lane vector per block, warps in lockstep; barriers check that every lane of
  their scope reached them (else `DeadlockError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func

from pypto import dtypes
from pypto.backend.interpreter.codegen import BLOCK, GRID, GeneratedKernel, _walk, generate
from pypto.backend.interpreter.lanes import Buffer, LaneContext
from pypto.dialects import pto
from pypto.errors import KernelError, LaunchError, TensorFreedError

GRID_CHUNK_LANES = 1 << 22
"""Largest lane vector in grid mode; bigger launches run in several chunks of whole blocks."""

_BLOCK_MODE_OPS = (pto.BarrierOp, pto.BarrierBlockOp, pto.TileOp)


def _needs_block_mode(op: Any) -> bool:
    """Ops whose meaning involves the block: barriers, L1, tile instructions."""
    if isinstance(op, _BLOCK_MODE_OPS):
        return True
    return any(isinstance(v.type, pto.L1BufferType) or
               isinstance(v.type, pto.PtrType) and v.type.space == "local"
               for v in op.results)


class Executable:
    """The executable form of one kernel specialisation (code generated lazily per mode)."""

    def __init__(self, kernel: func.FuncOp, *, target: Any = None,
                 check_uninitialized: bool = False):
        from pypto.backend.targets import resolve_target

        self.func = kernel
        self.target = resolve_target(target)
        self.check_uninitialized = check_uninitialized
        self.name = kernel.sym_name.data
        self.param_names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.body.block.args)]
        self.param_types = list(kernel.function_type.inputs.data)
        self.mode = BLOCK if any(_needs_block_mode(op)
                                 for op in _walk(kernel.body.block.ops)) else GRID
        self._variants: dict[tuple[str, bool], GeneratedKernel] = {}

    def variant(self, one_d: bool) -> GeneratedKernel:
        key = (self.mode, one_d)
        gen = self._variants.get(key)
        if gen is None:
            gen = generate(self.func, self.mode, one_d)
            self._variants[key] = gen
        return gen

    def bind(self, args: Sequence[Any]) -> list[Any]:
        """Turn launch arguments into what generated code expects (Buffers, typed scalars)."""
        if len(args) != len(self.param_types):
            raise LaunchError(f"kernel '{self.name}' takes {len(self.param_types)} arguments "
                              f"({', '.join(self.param_names)}), got {len(args)}")
        bound: list[Any] = []
        for name, t, value in zip(self.param_names, self.param_types, args):
            if isinstance(t, pto.PtrType):
                if getattr(value, "freed", False):
                    raise TensorFreedError(f"argument '{name}' of kernel '{self.name}' is a freed "
                                           f"tensor")
                data = getattr(value, "data", None)
                if not isinstance(data, np.ndarray):
                    raise LaunchError(f"argument '{name}' of kernel '{self.name}' must be a device "
                                      f"tensor (pto.alloc_tensor), got {type(value).__name__}")
                want = dtypes.np_dtype_of(t.element_type)
                if data.dtype != want:
                    raise LaunchError(f"argument '{name}' of kernel '{self.name}' was compiled for "
                                      f"{want} tensors, got a {data.dtype} tensor")
                bound.append(Buffer(data, name, "global"))
            else:
                npd = dtypes.np_dtype_of(t)
                if isinstance(value, bool | np.bool_) and npd != np.bool_:
                    raise LaunchError(f"argument '{name}' of kernel '{self.name}' expects "
                                      f"{npd}, got a bool")
                try:
                    converted = npd.type(value)
                    if npd.kind in "iu" and int(converted) != int(value):
                        raise OverflowError
                except (OverflowError, ValueError, TypeError):
                    raise LaunchError(f"argument '{name}' of kernel '{self.name}' must be "
                                      f"{npd}, got {value!r}") from None
                bound.append(converted)
        return bound

    def run(self, grid: tuple[int, int, int], block: tuple[int, int, int],
            args: Sequence[Any]) -> None:
        bound = self.bind(args)
        one_d = grid[1] * grid[2] == 1 and block[1] * block[2] == 1
        gen = self.variant(one_d)
        block_lanes = block[0] * block[1] * block[2]
        n_blocks = grid[0] * grid[1] * grid[2]
        if gen.mode == GRID:
            blocks_per_chunk = max(1, GRID_CHUNK_LANES // block_lanes)
        else:
            blocks_per_chunk = 1
        with np.errstate(all="ignore"):
            for first_block in range(0, n_blocks, blocks_per_chunk):
                count = min(blocks_per_chunk, n_blocks - first_block) * block_lanes
                ctx = LaneContext(kernel=self.name, grid=grid, block=block,
                                  first_lane=first_block * block_lanes, count=count,
                                  sites=gen.sites, l1_bytes=self.target.l1_bytes,
                                  check_uninitialized=self.check_uninitialized)
                try:
                    gen.fn(ctx, bound)
                except KernelError:
                    raise
                except (IndexError, ValueError, TypeError) as exc:  # pragma: no cover - bug net
                    raise KernelError(f"internal interpreter error: {exc!r}; please report it "
                                      f"with the kernel", kernel=self.name) from exc
