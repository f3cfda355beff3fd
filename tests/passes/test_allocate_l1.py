"""`pto-allocate-l1` and the L1 map: offsets the interpreter really uses, capacity errors, and
the map as text and as a picture.

The interpreter places each buffer at its `offset` in one byte array per block, so a wrong
placement is not hidden: two buffers made to overlap by hand change the results (or trip the
in-flight copy check), which is what a wrong reuse decision of the pass would do.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, i64

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.dialects import pto as dialect
from tests.conftest import from_device, to_device
from tests.kernels.pipelined import PIPELINED, Case


def buffers(ck: pto.CompiledKernel) -> dict[str, dialect.AllocLocalOp]:
    return {op.result.name_hint: op for op in ck.func.walk()
            if isinstance(op, dialect.AllocLocalOp)}


def launch(ck: pto.CompiledKernel, case: Case, device, tensors) -> np.ndarray:
    pto.launch(ck, grid=case.grid, block=case.block, args=device)
    return from_device(tensors)[case.output]


def overlapped(case: Case, pipeline: str | None, moved: str, onto: str):
    """Compile `case`, then put buffer `moved` at the offset of `onto` (a wrong allocation)."""
    device, tensors = to_device(case.args)
    ck = pto.compile(case.kernel, args=device, block=case.block, pipeline=pipeline)
    case.kernel.clear_cache()  # this compiled kernel is about to be broken: no one else gets it
    bufs = buffers(ck)
    assert bufs[moved].l1_offset != bufs[onto].l1_offset
    bufs[moved].properties["offset"] = IntegerAttr(bufs[onto].l1_offset, i64)
    ck.executable = Executable(ck.func, target=ck.target)
    return ck, device, tensors


def test_the_allocated_layout_is_the_one_that_runs():
    """The matmul's accumulator moved onto its A tile: the loads overwrite the partial sums
    and the result is wrong — silently, as on the device (no copy is in flight at the mma)."""
    case = PIPELINED["matmul_tile"](3)
    device, tensors = to_device(case.args)
    right = pto.compile(case.kernel, args=device, block=case.block, pipeline="pto-allocate-l1")
    np.testing.assert_allclose(launch(right, case, device, tensors), case.reference,
                               rtol=1e-4, atol=1e-3)
    ck, device, tensors = overlapped(case, "pto-allocate-l1", "C_tile", "A_tile")
    out = launch(ck, case, device, tensors)
    assert np.abs(out - case.reference).max() > 1.0


NO_FUSION = str(Path(__file__).resolve().parents[1] / "filecheck" / "passes" / "Inputs" /
                "fusion-none.toml")


def test_an_overlap_with_a_slot_in_flight_is_a_race_error():
    """Double-buffered (every load prefetched: a firmware without fusion), the same mistake
    puts the accumulator under the next slot's load, which is in flight during the mma."""
    case = PIPELINED["matmul_tile"](3)
    pipeline = (f'pto-double-buffer{{target="{NO_FUSION}"}},pto-allocate-l1,'
                f"pto-verify-barriers")
    ck, device, tensors = overlapped(case, pipeline, "C_tile", "A_tile")
    with pytest.raises(pto.RaceError, match="in flight"):
        launch(ck, case, device, tensors)


def test_offsets_are_aligned_and_disjoint_while_live():
    case = PIPELINED["pipelined_add"](2)
    device, _ = to_device(case.args)
    ck = pto.compile(case.kernel, args=device, block=case.block)
    spans = sorted((op.l1_offset, op.l1_offset + op.result.type.size * 4)
                   for op in buffers(ck).values())
    assert all(lo % ck.target.l1_align_bytes == 0 for lo, _ in spans)
    assert all(a_hi <= b_lo for (_, a_hi), (b_lo, _) in zip(spans, spans[1:]))


@pto.kernel
def two_phases(x, y):
    """Phase 1 uses `first`, phase 2 `second`; a block barrier separates them."""
    tid = pto.get_local_id()
    first = pto.alloc_local(256)
    pto.store(first + tid, pto.load(x + tid))
    pto.barrier_block()
    v = pto.load(first + (255 - tid))
    pto.barrier_block()
    second = pto.alloc_local(256)
    pto.store(second + tid, v * 2.0)
    pto.barrier_block()
    pto.store(y + tid, pto.load(second + (255 - tid)))


def test_buffers_of_separate_phases_share_bytes_and_stay_correct():
    x = np.arange(256, dtype=np.float32)
    device, tensors = to_device((x, np.zeros_like(x)))
    ck = pto.compile(two_phases, args=device, block=256)
    bufs = buffers(ck)
    assert bufs["first"].l1_offset == bufs["second"].l1_offset == 0
    assert "1024 bytes shared" in " ".join(r.message for r in ck.remarks)
    for schedule in (None, "reverse", "random:3"):
        ck = pto.compile(two_phases, args=device, block=256, schedule=schedule)
        pto.launch(ck, grid=1, block=256, args=device)
        np.testing.assert_array_equal(from_device(tensors)[1], x * 2)  # reversed twice
        device, tensors = to_device((x, np.zeros_like(x)))


@pto.kernel
def big_tiles(x, N: pto.constexpr):
    a = pto.alloc_local(N)
    b = pto.alloc_local(N)
    tid = pto.get_local_id()
    pto.store(a + tid, 1.0)
    pto.store(b + tid, 2.0)
    pto.store(x + tid, pto.load(a + tid) + pto.load(b + tid))


def test_capacity_error_names_buffers_sizes_and_peak():
    t = pto.alloc_tensor(1024)
    with pytest.raises(pto.L1CapacityError) as info:
        pto.compile(big_tiles, args=(t, 30000), block=256)
    text = str(info.value)
    assert "needs 240000 bytes of L1 (234.4 KiB) but the target has 196608 (192 KiB)" in text
    assert "'a' 120000 bytes at offset 0" in text and "'b' 120000 bytes at offset 120000" in text
    assert text.startswith(__file__)                      # at the Python line of 'b'
    pto.compile(big_tiles, args=(t, 20000), block=256)    # 160000 bytes: fits


def test_l1_map_text():
    case = PIPELINED["matmul_tile"](2)
    device, _ = to_device(case.args)
    text = str(pto.compile(case.kernel, args=device, block=case.block).l1_map())
    lines = text.splitlines()
    # pto-double-buffer chooses by the cost model (docs/passes.md#choosing-by-the-cost-model):
    # on the default target it prefetches both tiles, so A and B each get two slots
    assert lines[0] == ("L1 map of kernel 'matmul_tile': peak 49152 of 196608 bytes (25.0%), "
                        "3 buffers, align 32")
    rows = {line.split()[3]: line.split() for line in lines[2:5]}
    assert rows["C_tile"][:5] == ["0", "16384", "16384", "C_tile", "1"]
    assert rows["A_tile"][:5] == ["16384", "32768", "16384", "A_tile", "2"]
    assert rows["B_tile"][:5] == ["32768", "49152", "16384", "B_tile", "2"]
    assert all("pipeline_matmul.py:" in row[6] for row in rows.values())
    assert "most bytes live at once: 49152 (C_tile, A_tile, B_tile)" in text


def test_l1_map_of_an_unallocated_kernel_says_so():
    case = PIPELINED["pipelined_scale"](2)
    device, _ = to_device(case.args)
    text = str(pto.compile(case.kernel, args=device, block=case.block, pipeline="").l1_map())
    assert "not allocated" in text


def test_l1_map_svg(tmp_path):
    case = PIPELINED["matmul_tile"](2)
    device, _ = to_device(case.args)
    path = tmp_path / "l1.svg"
    svg = pto.compile(case.kernel, args=device, block=case.block).l1_map().to_svg(path)
    assert path.read_text() == svg
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in root.iter(f"{ns}title")]
    assert titles[0].startswith("C_tile: offset 0, 16384 bytes")
    assert any(t.startswith("A_tile: offset 16384") for t in titles)
    dashed = [line for line in root.iter(f"{ns}line") if line.get("stroke-dasharray")]
    assert len(dashed) == 2                    # one slot boundary in each of A's and B's double buffers


def test_pypto_opt_emits_the_l1_map(tmp_path):
    case = PIPELINED["pipelined_scale"](2)
    device, _ = to_device(case.args)
    source = tmp_path / "k.mlir"
    source.write_text(pto.compile(case.kernel, args=device, block=case.block,
                                  pipeline="").mlir)
    out = subprocess.run([sys.executable, "-m", "pypto.tools.opt", str(source), "-p",
                          "pto-double-buffer,pto-allocate-l1", "--emit=l1-map"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("L1 map of kernel 'pipelined_scale': peak 3072 of 196608")
    assert "remark: L1 of 'pipelined_scale': peak 3072" in out.stderr


@pto.kernel
def _tile_op_then_lanes(x, o, n):
    """`a` is last read by a tile instruction, `b` first written by lanes, no barrier between:
    a tile instruction is no block synchronisation, so the two must not share bytes."""
    a = pto.alloc_tile(8, 16, dtype=pto.float32)
    r = pto.alloc_tile(8, 16, dtype=pto.float32)
    pto.wait(pto.async_load(a, x, 512))
    pto.texp(r, a)
    b = pto.alloc_local(128)
    t = pto.get_local_id()
    pto.store(b + t, pto.load(x + t) * 2.0)
    pto.store(o + t, pto.load(b + t))


def test_a_tile_instruction_does_not_separate_live_ranges():
    # found by the fuzzer (seed 5, kernels input 318): pto-allocate-l1 put a lane-written buffer
    # on the bytes a tile instruction was still reading, and the race detector raised
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    o = np.zeros(128, np.float32)
    ck = pto.compile(_tile_op_then_lanes, args=(x, o, 128), block=128,
                     pipeline="pto-allocate-l1", race_check=True)
    found = {op.result.name_hint: op for op in ck.func.walk()
             if isinstance(op, dialect.AllocLocalOp)}
    a, b = found["a"], found["b"]
    a_end = a.l1_offset + 512
    assert b.l1_offset >= a_end or b.l1_offset + 512 <= a.l1_offset
    pto.launch(ck, 1, 128, (x, o, 128))
    pto.sync()
    np.testing.assert_array_equal(o, x * np.float32(2))
