"""The numbers a cost model uses, read from the target file (never typed in code).

`ModelParams.of(target, "table" | "fused")` gathers the model's latency table (`[cost.<model>]`),
the per-pipe default latencies and the throughputs (`[cost]`), and the machine (cores, clock,
HBM bandwidth) into one object the engine reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pypto.backend.targets import Target
from pypto.errors import PtoError

MODELS = ("table", "fused")
PIPES = ("SCALAR", "VECTOR", "CUBE", "MTE_IN", "MTE_OUT")
HBM = "HBM"
RESOURCES = PIPES + (HBM,)
"""The pipes, and the chip's HBM bandwidth as the timeline, trace and bubbles show it."""


class ModelError(PtoError, ValueError):
    """An unknown model name or a target file whose cost tables are unusable."""


@dataclass(frozen=True)
class ModelParams:
    model: str
    level: str                       # "pto" or "npu": the IR level the model costs
    source: str                      # where its latency table comes from (the file says)
    target: Target
    latency: dict[str, int] = field(default_factory=dict)
    default_latency: dict[str, int] = field(default_factory=dict)
    dispatch_width: int = 1
    cube_macs_per_cycle: float = 4096.0
    cube_fp32_rate: float = 0.5
    mte_bytes_per_cycle: float = 128.0
    l2_bytes: int = 0
    # [cost.launch]: what a launch and each block cost before any instruction runs
    launch_cycles: int = 0
    block_cycles: int = 0
    # [cost.memory]: latency by memory level and the geometry contention is counted in
    hbm_latency: int = 0
    l1_latency: int = 0
    sector_bytes: int = 32
    l1_banks: int = 32
    l1_bank_bytes: int = 4
    atomic_cycles: int = 0
    # geometry of the units (rates.py): the Cube's fractal, the Vector unit's repeat
    cube_fractal_m: int = 1
    cube_fractal_n: int = 1
    cube_fractal_k_bytes: int = 0        # 0: K is not padded
    vector_repeat_bytes: int = 256
    vector_cycles_per_repeat: int = 1
    # [cost.vector_classes]: a tile vector instruction's head and cycles per repeat, by its
    # class (simple, transcendental, reduction, conversion); a class not listed is costed as
    # any vector instruction (the VECTOR head, vector_cycles_per_repeat)
    vector_classes: dict[str, tuple[int, int]] = field(default_factory=dict)

    @staticmethod
    def of(target: Target, model: str) -> ModelParams:
        if model not in MODELS:
            raise ModelError(f"unknown cost model {model!r}; models: {', '.join(MODELS)} "
                             f"('table': the simulator's latency table at the pto level, "
                             f"'fused': the firmware's view at the npu level)")
        cost = target.section("cost")
        table = target.section("cost", model)
        if not table:
            raise ModelError(f"target {target.described} has no [cost.{model}] table")
        defaults = dict(target.section("cost", "default_latency"))
        missing = [p for p in PIPES if p not in defaults]
        if missing:
            raise ModelError(f"target {target.described}: [cost.default_latency] lacks "
                             f"{', '.join(missing)}")

        def number(key: str, default: Any) -> Any:
            value = cost.get(key, default)
            if not isinstance(value, int | float) or value <= 0:
                raise ModelError(f"target {target.described}: [cost] {key} must be a positive "
                                 f"number, got {value!r}")
            return value

        launch = target.section("cost", "launch")
        memory = target.section("cost", "memory")

        def count(table: dict[str, Any], section: str, key: str, *, positive: bool = False) -> int:
            value = table.get(key, 0)
            if not isinstance(value, int) or value < (1 if positive else 0):
                kind = "a positive" if positive else "a non-negative"
                raise ModelError(f"target {target.described}: [cost.{section}] {key} must be "
                                 f"{kind} integer, got {value!r}")
            return value

        return ModelParams(
            model=model, level=str(table.get("level", "pto")),
            source=str(table.get("source", "")), target=target,
            latency={str(k).upper(): int(v) for k, v in table.get("latency", {}).items()},
            default_latency={k: int(v) for k, v in defaults.items()},
            dispatch_width=int(number("dispatch_width", 1)),
            cube_macs_per_cycle=float(number("cube_macs_per_cycle", 4096)),
            cube_fp32_rate=float(number("cube_fp32_rate", 0.5)),
            mte_bytes_per_cycle=float(number("mte_bytes_per_cycle", 128)),
            l2_bytes=int(cost.get("l2_bytes", 0)),
            launch_cycles=count(launch, "launch", "launch_cycles"),
            block_cycles=count(launch, "launch", "block_cycles"),
            hbm_latency=count(memory, "memory", "hbm_latency"),
            l1_latency=count(memory, "memory", "l1_latency"),
            sector_bytes=count({"sector_bytes": 32, **memory}, "memory", "sector_bytes",
                               positive=True),
            l1_banks=count({"l1_banks": 32, **memory}, "memory", "l1_banks", positive=True),
            l1_bank_bytes=count({"l1_bank_bytes": 4, **memory}, "memory", "l1_bank_bytes",
                                positive=True),
            atomic_cycles=count(memory, "memory", "atomic_cycles"),
            cube_fractal_m=int(number("cube_fractal_m", 1)),
            cube_fractal_n=int(number("cube_fractal_n", 1)),
            cube_fractal_k_bytes=int(cost.get("cube_fractal_k_bytes", 0)),
            # (`vector_bytes_per_cycle`, the key's older name, still reads)
            vector_repeat_bytes=int(number("vector_repeat_bytes",
                                           number("vector_bytes_per_cycle", 256))),
            vector_cycles_per_repeat=int(number("vector_cycles_per_repeat", 1)),
            vector_classes=_vector_classes(target),
        )

    def vector_class(self, name: str | None) -> tuple[int, int] | None:
        """(head, cycles per repeat) of a tile vector instruction's class, if the target
        gives them (docs/cost-model.md#tile-vector-instructions)."""
        return None if name is None else self.vector_classes.get(name)

    @property
    def warp_size(self) -> int:
        return int(self.target.warp_size)

    def memory_latency(self, space: str | None) -> int:
        """Cycles from a lane access's issue until its data is there, beyond the instruction's
        own latency: HBM farther than L1."""
        return self.hbm_latency if space == "global" else self.l1_latency

    @property
    def vector_bytes_per_cycle(self) -> float:
        """The Vector unit's peak: a repeat's bytes over its cycles."""
        return self.vector_repeat_bytes / self.vector_cycles_per_repeat

    def latency_of(self, kind: str, pipe: str) -> int:
        return self.latency.get(kind, self.default_latency.get(pipe, 1))

    @property
    def header(self) -> str:
        """The line every output starts with: modelled, by which model, from which target."""
        return (f"modelled by the pypto cost model (not measured): model '{self.model}' "
                f"({self.source or self.level + ' level'}), target {self.target.described}")


def _vector_classes(target: Target) -> dict[str, tuple[int, int]]:
    """`[cost.vector_classes]`: class = { head = H, cycles_per_repeat = S }."""
    from pypto.dialects.traits import VECTOR_CLASSES

    out: dict[str, tuple[int, int]] = {}
    for name, entry in target.section("cost", "vector_classes").items():
        if name not in VECTOR_CLASSES:
            raise ModelError(f"target {target.described}: [cost.vector_classes] has no class "
                             f"{name!r}; classes: {', '.join(VECTOR_CLASSES)}")
        head = entry.get("head") if isinstance(entry, dict) else None
        slope = entry.get("cycles_per_repeat") if isinstance(entry, dict) else None
        if not isinstance(head, int) or head < 0 or not isinstance(slope, int) or slope <= 0:
            raise ModelError(f"target {target.described}: [cost.vector_classes] {name} must "
                             f"be {{ head = <cycles >= 0>, cycles_per_repeat = <cycles > 0> }}, "
                             f"got {entry!r}")
        out[name] = (head, slope)
    return out
