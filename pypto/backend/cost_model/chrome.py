"""`Profile.to_chrome_trace()`: the modelled launch as Chrome trace / Perfetto JSON.

One process per modelled AI core, one thread (track) per pipe; every instruction of every block
is a complete event (`ph: "X"`, microseconds = cycles / clock) whose args carry the op, the
Python source line, the block and the active lanes. Blocks run back to back on their core, so
slices on a track never overlap. The trace's metadata names the model and the target: the
times are modelled, not measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.backend.cost_model.params import HBM, PIPES, RESOURCES

if TYPE_CHECKING:
    from pypto.backend.cost_model.profile import Profile


def chrome_trace(prof: Profile, path: str | Path | None, *, max_slices: int) -> dict[str, Any]:
    us_per_cycle = 1e-3 / prof.params.target.clock_ghz
    lr = prof.launch
    cores = prof.params.target.ai_cores
    events: list[dict[str, Any]] = []
    for core in range(lr.cores_used):
        events.append({"ph": "M", "name": "process_name", "pid": core,
                       "args": {"name": f"AI core {core} (modelled)"}})
        for tid, pipe in enumerate(RESOURCES):
            events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": tid,
                           "args": {"name": pipe}})
    truncated = False
    count = 0
    if lr.launch_cycles:
        events.append({"ph": "X", "name": "LAUNCH", "cat": "launch", "pid": 0,
                       "tid": PIPES.index("SCALAR"), "ts": 0.0,
                       "dur": lr.launch_cycles * us_per_cycle,
                       "args": {"op": "launch", "source": prof.kernel,
                                "cycles": lr.launch_cycles,
                                "note": "the launch's fixed cost ([cost.launch])"}})
    block_cycles = prof.params.block_cycles
    for c in lr.classes:
        slices = c.schedule.slices
        for b in c.blocks:
            if count + len(slices) > max_slices:
                truncated = True
                break
            base = int(lr.block_start[b]) + block_cycles
            core = int(lr.block_core[b]) if lr.block_core is not None else b % cores
            last = max((sl.end for sl in slices), default=0)
            if c.schedule.cycles > last:  # its stores (loads) still landing: memory latency
                events.append({
                    "ph": "X", "name": "MEM_DRAIN", "cat": HBM, "pid": core,
                    "tid": RESOURCES.index(HBM), "ts": (base + last) * us_per_cycle,
                    "dur": (c.schedule.cycles - last) * us_per_cycle,
                    "args": {"op": "mem_drain", "source": prof.kernel, "block": b,
                             "cycles": c.schedule.cycles - last,
                             "cause": "memory latency: accesses still landing"}})
            wait = int(lr.block_wait[b]) if lr.block_wait is not None else 0
            if wait > 0:  # the block waits for its share of HBM: the binding resource
                events.append({
                    "ph": "X", "name": "HBM_WAIT", "cat": HBM, "pid": core,
                    "tid": RESOURCES.index(HBM), "ts": (base + c.schedule.cycles) * us_per_cycle,
                    "dur": wait * us_per_cycle,
                    "args": {"op": "hbm_wait", "source": prof.kernel, "block": b,
                             "cycles": wait, "cause": "HBM bandwidth"}})
            for s in slices:
                f = prof.facts[s.op_id]
                events.append({
                    "ph": "X", "name": f.kind, "cat": s.pipe, "pid": core,
                    "tid": RESOURCES.index(s.pipe), "ts": (base + s.start) * us_per_cycle,
                    "dur": (s.end - s.start) * us_per_cycle,
                    "args": {"op": f.name, "source": f.source, "block": b, "lanes": s.lanes,
                             "cycles": s.end - s.start,
                             **({"hbm_share_cycles": s.hbm_extra} if s.hbm_extra else {})}})
            count += len(slices)
    trace = {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "note": prof.header,
            "kernel": prof.kernel, "grid": list(prof.grid), "block": list(prof.block),
            "total_cycles": prof.total_cycles, "compute_cycles": prof.compute_cycles,
            "hbm_roofline_cycles": prof.roofline_cycles,
            "truncated": (f"only the first {count} slices (max_slices={max_slices})"
                          if truncated else ""),
        },
    }
    if path is not None:
        Path(path).write_text(json.dumps(trace))
    return trace


def validate_chrome_trace(trace: dict[str, Any]) -> list[str]:
    """Problems of a trace (schema, overlapping slices on one track); [] when valid."""
    problems: list[str] = []
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        return ["traceEvents must be a list"]
    tracks: dict[tuple[Any, Any], list[tuple[float, float, str]]] = {}
    for e in events:
        if e.get("ph") == "M":
            continue
        if e.get("ph") != "X":
            problems.append(f"unexpected phase {e.get('ph')!r}")
            continue
        for key, kind in (("name", str), ("ts", (int, float)), ("dur", (int, float)),
                          ("pid", int), ("tid", int), ("args", dict)):
            if not isinstance(e.get(key), kind):
                problems.append(f"event {e.get('name')!r} lacks a valid {key!r}")
        if problems:
            return problems
        if e["dur"] <= 0:
            problems.append(f"slice {e['name']} has no duration")
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"],
                                                            e["name"]))
    for (pid, tid), spans in tracks.items():
        spans.sort()
        for (s0, e0, n0), (s1, _, n1) in zip(spans, spans[1:]):
            if s1 < e0 - 1e-9:
                problems.append(f"core {pid} track {tid}: {n1} starts at {s1} inside {n0} "
                                f"(ends {e0})")
                break
    return problems
