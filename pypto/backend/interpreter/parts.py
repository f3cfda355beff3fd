"""The small typed protocols between the lane context (lanes.py) and the parts it holds.

A lane context is one lane vector; it holds its parts instead of inheriting them
(docs/interpreter.md#the-lane-context-and-its-parts): `ctx.memory` (`Memory`, tiles.py),
`ctx.lanes` (`LaneAccess`, lane_memory.py), `ctx.tiles` (`Tiles`, tile_unit.py) and `ctx.races`
(`races.Races`, races.py). Each protocol is what the rest of the interpreter (generated code, the
strategies' run-time parts, the other parts) may ask of that part; `Vector` is what the parts may
ask of their context. Nothing else is shared: a part that needs more asks for a new member here.
tests/backend/interpreter/test_parts.py checks that the classes provide them.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pypto.backend.interpreter.races import Races

Mask = Any  # None | False | np.ndarray[bool] (lanes.py)


@runtime_checkable
class Vector(Protocol):
    """What the parts ask of their lane context: its shape, its sites and how to report an
    error, the plan's decisions, and the parts they work with."""

    kernel: str
    sites: list[Any]
    count: int
    block: tuple[int, int, int]
    block_lanes: int
    local_base: int
    warp_size: int
    layout: Any
    check_uninitialized: bool
    race_check: bool
    decisions: dict[type, Any]
    cache: Any
    counters: dict[str, int]
    row_width: int
    memory: Memory
    lanes: LaneAccess
    races: Races

    def fail(self, message: str, site_index: int, cls: Any = ...) -> Any: ...

    def describe_lane(self, pos: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]: ...

    def block_of_element(self, buf: Any, idx: int) -> tuple[int, int, int]: ...

    def block_base(self, stride: int) -> Any: ...

    def lanes_and_warps(self, mask: Any) -> tuple[Any, Any]: ...

    def local_id(self, dim: int) -> Any: ...

    def masked(self, key: str, array: Any, mask: Any) -> Any: ...

    def sparse(self, mask: Any) -> bool: ...


@runtime_checkable
class Memory(Protocol):
    """The block state and the bulk copies (`ctx.memory`, tiles.BlockMemory)."""

    l1_buffers: dict[int, Any]
    inflight: Any  # tiles.CopyState
    counters: dict[str, int]
    arenas: list[Any]

    def alloc_local(self, key: int, mask: Mask, site: int) -> Any: ...

    def copy(self, kind: str, dst_b: Any, dst_o: Any, src_b: Any, src_o: Any, nbytes: Any,
             rows: Any, src_stride: Any, dst_stride: Any, mask: Mask, site: int) -> Any: ...

    def wait(self, token: Any, mask: Mask, site: int) -> None: ...

    def wait_all(self, mask: Mask, site: int) -> None: ...

    def adopt_block_memory(self, state: tuple[dict[int, Any], list[Any]]) -> None: ...

    def settle(self, span: Any = None, hbm: Any = None) -> None: ...

    def settle_l1(self) -> None: ...

    def require_all_lanes(self, mask: Mask, site: int, what: str) -> None: ...

    def per_block(self, v: Any, site: int, what: str) -> Any: ...

    def region(self, buf: Any, base: Any, rows: int, row_len: int, stride: int, site: int,
               what: str, block: int = 0) -> tuple[Any, Any]: ...

    def check_region(self, buf: Any, region: Any, site: int, access: str) -> None: ...

    def mark_init(self, buf: Any, region: Any) -> None: ...

    def oob_region(self, buf: Any, address: int, site: int, what: str,
                   block_index: int = 0) -> Any: ...

    def hazard_in_flight(self, buf: Any, token: int, site: int, access: str) -> None: ...

    def neighbour(self, buf: Any, address: int) -> str: ...


@runtime_checkable
class LaneAccess(Protocol):
    """The lanes' general loads, stores and atomics and their checks (`ctx.lanes`,
    lane_memory.LaneMemory)."""

    def load(self, buf: Any, off: Any, mask: Mask, site: int) -> Any: ...

    def store(self, buf: Any, off: Any, value: Any, mask: Mask, site: int) -> None: ...

    def atomic_add(self, buf: Any, off: Any, value: Any, mask: Mask, site: int,
                   need_old: bool = True) -> Any: ...

    def atomic_rmw(self, kind: str, buf: Any, off: Any, value: Any, compare: Any, mask: Mask,
                   site: int) -> Any: ...

    def checked(self, buf: Any, off: Any, mask: Mask, site: int) -> Any: ...

    def check_read(self, buf: Any, idx: Any, mask: Mask, site: int,
                   race: bool = True) -> None: ...

    def check_write(self, buf: Any, idx: Any, mask: Mask, site: int,
                    race: bool = True) -> None: ...

    def oob(self, buf: Any, offsets: Any, mask: Mask, site_index: int) -> Any: ...


@runtime_checkable
class Tiles(Protocol):
    """The tile compute instructions on the block's tiles (`ctx.tiles`, tile_unit.TileUnit)."""

    def fill(self, dst_b: Any, dst_o: Any, value: Any, count: Any, mask: Mask,
             site: int) -> None: ...

    def mma(self, c_b: Any, c_o: Any, a_b: Any, a_o: Any, b_b: Any, b_o: Any, m: int, n: int,
            k: int, mask: Mask, site: int) -> None: ...

    def tile_vector(self, name: str, tiles: tuple[tuple[int, int, int], ...],
                    addrs: tuple[Any, ...], scalar: Any, props: dict[str, str], mask: Mask,
                    site: int) -> None: ...


__all__ = ["LaneAccess", "Memory", "Races", "Tiles", "Vector"]
